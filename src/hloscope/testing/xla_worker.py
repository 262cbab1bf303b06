"""XLA (parser, cost analysis, XLA:CPU) in a child process that may die: the one runner of
hloscope's tests, tools and benchmarks for calls into XLA that can abort the process.

``XlaWorker.call(kind, ...)`` sends one request to a long-lived child (``python -m
hloscope.testing.xla_worker``) and returns ``(status, value)``; XLA's CHECK failures kill only
the child, which is restarted on the next call, and a call that outlives ``timeout`` is
reported as such and its child killed. Requests: ``parse``, ``cost``, ``compile``, ``run``
(with ``compile_hlo``'s keywords, such as the device grid, as an optional dict),
``run-global`` (a global program on its global arrays, partitioned by XLA: ``CompiledHlo.run_global``),
``run-optimized`` (XLA's own), and ``call`` (any function of a module or script, run in the
child: how the oracle sweep runs each case where XLA may hang or abort). The child inherits the
parent's environment (``XLA_FLAGS`` device counts included). For one module run in a fresh
process with its own device count, ``hloscope.xla.worker.run_on_xla`` is the library's entry.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["XlaWorker", "worker_main"]

_SRC = str(Path(__file__).resolve().parents[2])  # the folder holding the hloscope package

# --------------------------------------------------------------------------------------------
# XLA in a child process


def _xla_request(req: tuple[Any, ...]) -> Any:
    """Serve one request in the worker (jax imported here only)."""
    from hloscope.xla import client as xla

    kind = req[0]
    if kind == "parse":
        module = xla.parse_hlo_text(req[1])
        opcodes = xla.instruction_opcodes(module)
        shapes = {}
        for comp in module.computations():
            by_name = dict(opcodes[comp.name])
            for inst in comp.instructions():
                line = inst.to_string()
                lhs, _, rhs = line.partition(" = ")
                opcode = by_name[inst.name]
                shapes[lhs.lstrip("%")] = (opcode, rhs[: rhs.index(f" {opcode}(")])
        options = xla.jaxlib_api().HloPrintOptions()
        options.print_large_constants = True  # as hloscope.xla.client prints for comparisons
        options.print_metadata = False
        return module.to_string(options), shapes
    if kind == "cost":
        return xla.cost_analysis(req[1])
    if kind == "compile":
        xla.compile_hlo(req[1])
        return None
    if kind == "run":  # ("run", text, inputs[, {"replicas": r, "partitions": p, ...}])
        _, text, inputs, *options = req
        compiled = xla.compile_hlo(text, **(options[0] if options else {}))
        return compiled.run(inputs)
    if kind == "run-global":  # ("run-global", text, global inputs, devices): a global program
        _, text, inputs, devices = req
        compiled = xla.compile_hlo(text, replicas=1, partitions=devices, spmd_partition=True)
        return compiled.run_global(inputs)
    if kind == "run-optimized":  # the outputs and the module XLA:CPU compiled after optimizing
        compiled = xla.compile_hlo(req[1])
        return compiled.run(req[2]), compiled.executable.hlo_modules()[0].to_string()
    if kind == "call":  # ("call", module or script path, function name, *args)
        return getattr(_module(req[1]), req[2])(*req[3:])
    raise ValueError(kind)


_MODULES: dict[str, Any] = {}


def _module(target: str) -> Any:
    """The module ``target`` names (a dotted name, or a script's path), imported once."""
    if target not in _MODULES:
        if target.endswith(".py"):
            name = Path(target).stem
            spec = importlib.util.spec_from_file_location(name, target)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # dataclasses resolve their module by name
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
        _MODULES[target] = module
    return _MODULES[target]


def worker_main() -> None:
    """The child's loop: length-prefixed pickled requests on stdin, replies on the real stdout."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # XLA's own prints must not corrupt the reply stream
    inp = sys.stdin.buffer
    while True:
        header = inp.read(8)
        if len(header) < 8:
            return
        req = pickle.loads(inp.read(struct.unpack("<Q", header)[0]))
        try:
            reply: tuple[str, Any] = ("ok", _xla_request(req))
        except Exception as e:  # XLA's errors are data here, not failures of the worker
            reply = ("error", f"{type(e).__name__}: {e}")
        data = pickle.dumps(reply)
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()


class XlaWorker:
    """XLA's parser, cost analysis and XLA:CPU in a child process that may die.

    ``call(kind, ...)`` returns ``(status, value)``: ``"ok"`` with the result, ``"error"`` with
    XLA's message, ``"abort"`` with the tail of the child's stderr when it died (CHECK failure,
    segfault), or ``"timeout"``. A dead or stuck child is replaced on the next call.
    """

    def __init__(self, timeout: float = 120.0) -> None:
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr_path = ""
        self.aborts = 0

    def _start(self) -> subprocess.Popen[bytes]:
        fd, self.stderr_path = tempfile.mkstemp(prefix="fuzz-xla-", suffix=".log")
        env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="1")
        # The child imports the same hloscope as this process, installed or not.
        env["PYTHONPATH"] = os.pathsep.join([_SRC, env.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen([sys.executable, "-m", "hloscope.testing.xla_worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=fd)
        os.close(fd)
        return self.proc

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        if self.stderr_path:
            Path(self.stderr_path).unlink(missing_ok=True)
            self.stderr_path = ""

    def __enter__(self) -> XlaWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, n: int, deadline: float) -> bytes | None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        chunks, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, n - got)
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def call(self, *req: Any) -> tuple[str, Any]:
        proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
        assert proc.stdin is not None
        data = pickle.dumps(req)
        deadline = time.monotonic() + self.timeout
        try:
            proc.stdin.write(struct.pack("<Q", len(data)) + data)
            proc.stdin.flush()
            header = self._read(8, deadline)
            body = None if header is None else self._read(struct.unpack("<Q", header)[0], deadline)
        except (EOFError, BrokenPipeError):
            proc.wait()
            lines = Path(self.stderr_path).read_text(errors="replace").strip().splitlines()
            # The CHECK that failed says more than the stack trace under it.
            tail = [ln for ln in lines if "Check failed" in ln or "F0" in ln[:3]][:1] or lines[-2:]
            self.close()
            self.aborts += 1
            return "abort", f"exit {proc.returncode}: " + " | ".join(tail)
        if body is None:
            self.close()
            return "timeout", f"no answer within {self.timeout:.0f} s"
        return pickle.loads(body)


if __name__ == "__main__":
    worker_main()

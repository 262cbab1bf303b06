"""Run a module on XLA:CPU in a child process, so that an XLA crash cannot take hloscope down.

jaxlib aborts the process on some internal CHECK failures and has crashed intermittently while
executing rewritten modules (see tests/oracle), so ``hloscope run --check-xla`` never calls it
in-process. ``run_on_xla`` writes the module and inputs to a temporary folder, runs
``python -m hloscope.xla.worker DIR``, and reads the outputs back, with what the bridge
rewrote to make XLA:CPU compile the module (``hloscope.xla.client.Rewrite``; GPU dumps run with their
cuBLAS and threefry custom calls as standard HLO).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

from hloscope.errors import HloscopeError, MissingDependencyError

__all__ = ["XlaRun", "run_on_xla"]


class XlaRun(NamedTuple):
    """XLA:CPU's outputs (same conventions as ``hloscope.run``) and, when the module had to be
    rewritten first, ``Rewrite.describe()`` of it and its per-target custom-call counts."""

    outputs: Any
    rewrite: str | None
    custom_calls: dict[str, int]


def run_on_xla(text: str, inputs: list[Any], *, replicas: int, partitions: int, per_device: bool,
               global_program: bool = False, timeout: float = 1800.0) -> XlaRun:
    """Run ``text`` on XLA:CPU in a child process on ``inputs`` (same conventions as
    ``hloscope.run``). With ``global_program`` the module is a sharded program not partitioned
    yet: ``inputs`` are its global arrays, XLA's partitioner splits it and the outputs are the
    global arrays again (Note [Global runs on XLA:CPU] in client.py). ``timeout`` (seconds)
    guards against collectives that never rendezvous; seed 003 on 8 replicas takes minutes on
    a busy machine."""
    from hloscope.interpret.inputs import outputs_to_mapping
    from hloscope.interpret.npz_io import device_values, load_npz, save_npz

    n = replicas * partitions
    global_program = global_program and n > 1
    per_device = per_device and not global_program
    with tempfile.TemporaryDirectory(prefix="hloscope-xla-") as d:
        work = Path(d)
        (work / "module.hlo").write_text(text)
        mapping: dict[str, Any] = {}
        # Inputs shared by every device are written once (the child shares them again), not
        # once per device: seed 003's are 450 MB.
        device_lists = inputs if per_device else [inputs]
        for k, args in enumerate(device_lists):
            for i, a in enumerate(args):
                mapping.update({(f"d{k}." if per_device else "") + key: v
                                for key, v in outputs_to_mapping(a, 1).items()
                                for key in [key.replace("out", f"arg{i}", 1)]})
        save_npz(work / "inputs.npz", mapping)
        (work / "config.json").write_text(json.dumps({"replicas": replicas, "partitions": partitions,
                                                      "per_device": per_device,
                                                      "global": global_program}))
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        flags = " ".join(f for f in env.get("XLA_FLAGS", "").split()
                         if not f.startswith("--xla_force_host_platform_device_count"))
        env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={max(n, 1)}".strip()
        try:
            proc = subprocess.run([sys.executable, "-m", "hloscope.xla.worker", str(work)],
                                  capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            raise HloscopeError(f"XLA:CPU did not finish within {timeout:.0f} s") from None
        if proc.returncode == 3:
            raise MissingDependencyError(proc.stderr.strip())
        if proc.returncode != 0:
            last = proc.stderr.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
            # A signal (XLA's CHECK failures abort) is a crash, not a refusal of the module.
            killed = f" (killed by signal {-proc.returncode})" if proc.returncode < 0 else ""
            raise HloscopeError(f"XLA:CPU could not run the module{killed}: {last[0]}")
        report = json.loads((work / "rewrite.json").read_text())
        outputs = device_values(load_npz(work / "outputs.npz"), "out", 1 if global_program else n)
        return XlaRun(outputs, report["rewrite"], report["custom_calls"])


def _main(work: Path) -> int:
    from hloscope.interpret.inputs import outputs_to_mapping
    from hloscope.interpret.npz_io import device_values, load_npz, save_npz

    try:
        from hloscope.xla import client as xla

        if not xla.available():
            raise MissingDependencyError("checking against XLA needs jax: pip install 'hloscope[jax]'")
    except MissingDependencyError as e:
        sys.stderr.write(str(e) + "\n")
        return 3
    cfg = json.loads((work / "config.json").read_text())
    n = cfg["replicas"] * cfg["partitions"]
    global_program = cfg.get("global", False)
    if global_program:
        inputs = device_values(load_npz(work / "inputs.npz"), "arg", 1)
    elif cfg["per_device"]:
        inputs = device_values(load_npz(work / "inputs.npz"), "arg", n)
    else:
        inputs = device_values(load_npz(work / "inputs.npz"), "arg", 1)
        if n > 1:
            inputs = [inputs] * n  # the same arrays for every device
    try:
        # A global program's devices are the partitions of one SPMD program, whatever grid
        # the caller named them by.
        compiled = xla.compile_hlo((work / "module.hlo").read_text(),
                                   replicas=1 if global_program else cfg["replicas"],
                                   partitions=n if global_program else cfg["partitions"],
                                   spmd_partition=True if global_program else None)
        if global_program:
            out = compiled.run_global(inputs)
            del inputs
        else:
            arrays = compiled.put(inputs)
            del inputs  # on the devices now; XLA:CPU needs the memory (seed 003: 12 GB)
            out = compiled.execute(arrays)
            del arrays
    except HloscopeError as e:
        sys.stderr.write(str(e).splitlines()[0] + "\n")
        return 1
    save_npz(work / "outputs.npz", outputs_to_mapping(out, 1 if global_program else n))
    rewrite = compiled.rewrite
    (work / "rewrite.json").write_text(json.dumps({
        "rewrite": None if rewrite is None else rewrite.describe(),
        "custom_calls": {} if rewrite is None else rewrite.custom_calls}))
    return 0


if __name__ == "__main__":
    sys.exit(_main(Path(sys.argv[1])))

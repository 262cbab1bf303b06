"""Sweeps: every module of a dump directory analysed in parallel, one JSON line per module.

Note [Sweeps]
    A sweep is a face over the API (style: "A sweep is a face over the API"), as pytest-xdist
    is over pytest: one per-module job, ``analyze_module`` (load, summary, verify, cost,
    memory, collectives, the time estimate, and with ``check_xla`` a run on random inputs
    against XLA:CPU), handed to local processes (``--jobs N``) or to Ray tasks (``--ray``),
    whichever runs it. The job never raises: what fails is recorded in its line, step by step,
    and the other steps still run. A job that runs past its timeout, or whose process dies (an
    abort in jaxlib, the kernel's OOM killer), is recorded as such and the sweep goes on.

    Every line has the same keys (``RECORD_KEYS``), None where a step failed or was not asked
    for, so a reader (the index page, report/index.py; pandas) needs no guesswork. Lines are
    appended and flushed as modules finish; a sweep started again with the same output skips
    the modules it already has (a module is its path, size and modification time), so an
    interrupted sweep resumes where it stopped.
"""
from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import os
import re
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["RECORD_KEYS", "SCHEMA", "SweepOptions", "analyze_module", "find_modules", "module_key", "new_record",
           "read_results", "report_slug", "sweep", "max_abs_difference"]

SCHEMA = 1
RECORD_KEYS = (
    "schema", "key", "path", "module", "stage", "status", "seconds", "errors",
    "instructions", "computations", "replicas", "partitions", "parameter_bytes", "output_bytes",
    "verify_errors", "verify_warnings",
    "flops", "transcendentals", "bytes_accessed", "flops_loop_aware",
    "peak_bytes", "collectives", "collective_bytes", "estimate_seconds", "hardware", "xla",
)

# Files of an XLA dump that are not modules (buffer assignments, memory reports, LLVM IR, ...).
_SIDE_FILES = re.compile(r"buffer-assignment|memory-usage-report|live-range|thunk|\.ir-|autotun|-schedule")
_MODULE_SUFFIXES = (".txt", ".hlo", ".pb", ".pbtxt", ".mlir", ".mlirbc")
_HLO_HEAD = re.compile(rb"^\s*(HloModule\b|ENTRY\b)", re.M)


@dataclasses.dataclass(frozen=True)
class SweepOptions:
    """What each module's job does: the hardware of the time estimate, whether to run the
    module against XLA:CPU (random inputs, seed 0), and the seconds a job may take."""

    hardware: str = "h100-sxm"
    check_xla: bool = False
    timeout: float = 600.0


def _looks_like_module(path: Path) -> bool:
    if path.suffix not in _MODULE_SUFFIXES or _SIDE_FILES.search(path.name):
        return False
    if path.suffix in (".pb", ".mlirbc", ".hlo"):
        # A .hlo file is HLO by its name, also a lit test's computations without a header
        # (XLA's parser takes the last as the entry): each gets its line, parsed or failed.
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    return bool(_HLO_HEAD.search(head)) or path.suffix == ".mlir" and b"module" in head


def find_modules(target: str | os.PathLike[str]) -> list[Path]:
    """The modules a sweep covers: every module file under a directory (recursively; XLA's
    side files such as buffer assignments left out), or the files a glob pattern matches."""
    path = Path(target)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and _looks_like_module(p))
    if path.is_file():
        return [path]
    return sorted(Path(p) for p in glob.glob(str(target), recursive=True) if Path(p).is_file())


def module_key(path: str | os.PathLike[str]) -> str:
    """A module's identity for resuming: its path, size and modification time."""
    st = os.stat(path)
    return f"{os.path.abspath(path)}:{st.st_size}:{st.st_mtime_ns}"


def report_slug(path: str | os.PathLike[str]) -> str:
    """A file name for a module's report page: its name, and a hash of its path (two dumps
    may hold modules of one name)."""
    p = Path(path)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", p.name)[:80]
    return f"{stem}-{hashlib.sha1(str(p.resolve()).encode()).hexdigest()[:8]}"


def _stage(path: Path, module: Any) -> str:
    """Which stage of XLA's pipeline the module is at: from a dump's file name
    (``module_0001.jit_f.before_optimizations.txt``), else scheduled or not."""
    name = path.name
    if "before_optimizations" in name:
        return "before optimizations"
    if "after_optimizations" in name:
        return "after optimizations"
    m = re.match(r"module_\d+\.[^.]+\.(?:\d+\.)?([^.]+)\.txt$", name)
    if m is not None:
        return m.group(1).replace("_", " ")
    return "scheduled" if getattr(module, "is_scheduled", False) else "unscheduled"


def new_record(path: str) -> dict[str, Any]:
    """A module's line before any step ran: its key and path, status ok, no errors (a ``job``
    of ``sweep`` other than ``analyze_module`` starts from it)."""
    record: dict[str, Any] = dict.fromkeys(RECORD_KEYS)
    record.update(schema=SCHEMA, path=os.path.abspath(path), errors=[], status="ok")
    try:
        record["key"] = module_key(path)
    except OSError:
        record["key"] = os.path.abspath(path)
    return record


def failed_record(path: str, status: str, message: str, seconds: float | None = None) -> dict[str, Any]:
    """The line of a module whose job did not finish (``status`` "timeout" or "crashed")."""
    record = new_record(path)
    record.update(status=status, seconds=seconds, errors=[{"step": "job", "message": message}])
    return record


def max_abs_difference(ours: Any, theirs: Any) -> float:
    """The largest |ours - theirs| over two outputs of one structure (NaN where both are NaN
    counts as equal; a shape mismatch is infinite)."""
    import numpy as np

    if isinstance(ours, tuple | list):
        if not isinstance(theirs, tuple | list) or len(ours) != len(theirs):
            return float("inf")
        return max((max_abs_difference(a, b) for a, b in zip(ours, theirs, strict=True)), default=0.0)
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.shape != b.shape:
        return float("inf")
    if not a.size:
        return 0.0
    kind = np.complex128 if a.dtype.kind == "c" or b.dtype.kind == "c" else np.float64
    fa, fb = a.astype(kind), b.astype(kind)
    diff = np.where(np.isnan(fa) & np.isnan(fb), 0.0, np.abs(fa - fb))
    return float(np.nanmax(np.where(np.isnan(diff), np.inf, diff)))


def _check_xla(module: Any) -> dict[str, Any]:
    """The module on random inputs, by hloscope and by XLA:CPU (a child process), compared."""
    from hloscope.api import check_run_memory
    from hloscope.interpret import run
    from hloscope.interpret.inputs import random_inputs
    from hloscope.interpret.run import default_grid
    from hloscope.xla.worker import run_on_xla

    r, p = default_grid(module)
    n = r * p
    budget = check_run_memory(module, n)
    if not budget.fits:
        return {"status": "skipped", "max_abs_difference": None, "rewrite": None,
                "error": f"needs {budget.needed_bytes:,} bytes, {budget.available_bytes or 0:,} available"}
    inputs = random_inputs(module, 0, "normal", num_devices=n)
    ours = run(module, inputs, replicas=r, partitions=p)
    try:
        theirs = run_on_xla(module.to_text(), inputs, replicas=r, partitions=p, per_device=False, timeout=300)
    except Exception as e:
        return {"status": "xla-failed", "max_abs_difference": None, "rewrite": None, "error": _message(e)}
    got = theirs.outputs
    if n > 1 and not isinstance(ours, list):  # a global program: XLA returns each device's shard
        from hloscope.interpret.run import shards_of

        ours = shards_of(module, ours, n)
    return {"status": "ok", "max_abs_difference": max_abs_difference(ours, got), "rewrite": theirs.rewrite,
            "error": None}


def _message(e: BaseException) -> str:
    text = str(e).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(e).__name__}: {first}"[:500]


def analyze_module(path: str, options: SweepOptions = SweepOptions()) -> dict[str, Any]:
    """One module's line (Note [Sweeps]): every step's figures, or what failed. Never raises."""
    started = time.perf_counter()
    record = new_record(path)
    errors: list[dict[str, str]] = record["errors"]

    def step(name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:  # (RecursionError included: deeply nested modules)
            errors.append({"step": name, "message": _message(e)})

    from hloscope import api

    module: Any = None

    def load() -> None:
        nonlocal module
        module = api.load(path)
        record["module"] = module.name
        record["stage"] = _stage(Path(path), module)

    step("load", load)
    if module is None:
        record.update(status="failed", seconds=time.perf_counter() - started)
        return record

    def summary() -> None:
        from hloscope.analysis.summary import summarize
        from hloscope.interpret.run import infer_grid

        s = summarize(module)
        replicas, partitions, _ = infer_grid(module)  # the grid a run uses: the header's, or implied
        record.update(instructions=s.instruction_count, computations=s.computation_count,
                      replicas=replicas, partitions=partitions, parameter_bytes=s.parameter_bytes,
                      output_bytes=s.output_bytes)

    def verify() -> None:
        from hloscope.ir import verify as verify_module

        found = verify_module(module)
        record["verify_errors"] = sum(1 for d in found if d.severity == "error")
        record["verify_warnings"] = sum(1 for d in found if d.severity != "error")
        first = next((d for d in found if d.severity == "error"), None)
        if first is not None:
            errors.append({"step": "verify", "message": str(first).strip().splitlines()[0][:500]})

    def cost() -> None:
        c = api.cost(module)
        record.update(flops=c.total.flops, transcendentals=c.total.transcendentals,
                      bytes_accessed=c.total.bytes_accessed, flops_loop_aware=c.loop_aware.flops)

    def memory() -> None:
        record["peak_bytes"] = api.memory(module).peak_bytes

    def collectives() -> None:
        totals = api.collectives(module).to_json()["totals"]
        record.update(collectives=totals["count"], collective_bytes=totals["payload_bytes"])

    def estimate() -> None:
        record["estimate_seconds"] = api.estimate_time(module, options.hardware).total_seconds
        record["hardware"] = options.hardware

    for name, fn in (("summary", summary), ("verify", verify), ("cost", cost), ("memory", memory),
                     ("collectives", collectives), ("estimate", estimate)):
        step(name, fn)
    if options.check_xla:
        def xla() -> None:
            record["xla"] = _check_xla(module)

        step("xla", xla)
    if any(e["step"] != "verify" for e in errors):
        record["status"] = "failed"
    record["seconds"] = time.perf_counter() - started
    return record


def read_results(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The lines of a results file by module key (later lines win); a torn last line (an
    interrupted write) is left out."""
    out: dict[str, dict[str, Any]] = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict) and record.get("schema") == SCHEMA and "key" in record:
                    out[record["key"]] = record
    except FileNotFoundError:
        pass
    return out


def _open_for_append(path: Path) -> Any:
    """The results file, opened to append whole lines (a torn last line is cut off first)."""
    if path.exists() and path.stat().st_size:
        with open(path, "rb+") as f:
            data = f.read()
            if not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
    return open(path, "a", encoding="utf-8")


# --- running the jobs -----------------------------------------------------------------------------

Report = Callable[[dict[str, Any]], None]
Job = Callable[[str, SweepOptions], dict[str, Any]]


def sweep(paths: Sequence[Path], output: str | os.PathLike[str], options: SweepOptions = SweepOptions(), *,
          jobs: int = 1, ray_address: str | None = None, use_ray: bool = False,
          on_result: Report | None = None, job: Job | None = None) -> tuple[int, int]:
    """Analyse ``paths`` not yet in ``output`` (Note [Sweeps]), appending one line per module;
    ``on_result(record)`` hears each. ``job`` (a module-level function, default
    ``analyze_module``) makes each line. Returns (modules done now, modules skipped as done)."""
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = read_results(out)
    todo = [p for p in paths if _key_or_path(p) not in done]
    skipped = len(paths) - len(todo)
    if not todo:
        return 0, skipped
    job = job or analyze_module
    runner = _ray_jobs(todo, options, ray_address, job) if use_ray else _process_jobs(todo, options, jobs, job)
    count = 0
    with _open_for_append(out) as f:
        for record in runner:
            f.write(json.dumps(record, default=str, allow_nan=True) + "\n")
            f.flush()
            count += 1
            if on_result is not None:
                on_result(record)
    return count, skipped


def _key_or_path(path: Path) -> str:
    try:
        return module_key(path)
    except OSError:
        return os.path.abspath(path)


def _process_jobs(paths: Sequence[Path], options: SweepOptions, jobs: int, job: Job) -> Iterator[dict[str, Any]]:
    """Jobs in ``jobs`` local processes, each job under its timeout (the process is killed and
    replaced past it, or when it dies)."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context("spawn")  # a clean interpreter: no threads or state of the caller's
    queue = list(reversed([str(p) for p in paths]))
    slots: dict[Any, tuple[Any, Any, str | None, float]] = {}  # conn -> (process, conn, path, started)

    def start() -> None:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_process_main, args=(child, options, job), daemon=True)
        proc.start()
        child.close()
        slots[parent] = (proc, parent, None, 0.0)

    def feed(conn: Any) -> None:
        proc = slots[conn][0]
        if queue:
            path = queue.pop()
            conn.send(path)
            slots[conn] = (proc, conn, path, time.monotonic())
        else:
            conn.send(None)
            proc.join(timeout=10)
            del slots[conn]

    try:
        for _ in range(max(1, min(jobs, len(paths)))):
            start()
        for conn in list(slots):
            feed(conn)
        while slots:
            sentinels = {slots[c][0].sentinel: c for c in slots}
            ready = wait([*slots, *sentinels], timeout=1.0)
            now = time.monotonic()
            for item in ready:
                conn = sentinels.get(item, item)
                if conn not in slots:
                    continue
                proc, _, path, started = slots[conn]
                if item is conn:
                    try:
                        record = conn.recv()
                    except (EOFError, OSError):
                        record = None
                    if record is not None:
                        yield record
                        feed(conn)
                        continue
                # The process died: its module is recorded, a fresh process takes its place.
                del slots[conn]
                proc.join(timeout=10)
                if path is not None:
                    yield failed_record(path, "crashed", f"the job's process died (exit code {proc.exitcode})",
                                        now - started)
                if queue:
                    start()
                    feed(next(reversed(slots)))
            for conn, (proc, _, path, started) in list(slots.items()):
                if path is not None and now - started > options.timeout:
                    proc.kill()
                    proc.join(timeout=10)
                    del slots[conn]
                    yield failed_record(path, "timeout", f"the job ran past {options.timeout:g} s", now - started)
                    if queue:
                        start()
                        feed(next(reversed(slots)))
    finally:
        for proc, conn, _, _ in list(slots.values()):
            proc.kill()
            conn.close()


def _process_main(conn: Any, options: SweepOptions, job: Job) -> None:
    """A local job process: modules in, lines out, until told to stop (None)."""
    from hloscope.gc_pause import cyclic_gc_paused

    while True:
        try:
            path = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if path is None:
            return
        try:
            with cyclic_gc_paused():
                record = job(path, options)
        except BaseException as e:  # noqa: BLE001 - a job reports, never dies quietly
            record = failed_record(path, "failed", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}")
        conn.send(record)


def _ray_jobs(paths: Sequence[Path], options: SweepOptions, address: str | None, job: Job) -> Iterator[dict[str, Any]]:
    """Jobs as Ray tasks (one CPU each), at most twice the cluster's CPUs in flight; a task
    past its timeout is cancelled (its worker process killed)."""
    import ray
    import ray.exceptions

    from hloscope.interpret.ray_executor import connected

    with connected(address):
        task = ray.remote(num_cpus=1, max_retries=0)(_ray_job)
        limit = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        queue = list(reversed([str(p) for p in paths]))
        running: dict[Any, tuple[str, float]] = {}
        try:
            while queue or running:
                while queue and len(running) < limit:
                    path = queue.pop()
                    running[task.remote(path, options, job)] = (path, time.monotonic())
                ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
                for ref in ready:
                    path, started = running.pop(ref)
                    try:
                        yield ray.get(ref)
                    except ray.exceptions.RayError as e:
                        status = "timeout" if isinstance(e, ray.exceptions.TaskCancelledError) else "crashed"
                        yield failed_record(path, status, _message(e), time.monotonic() - started)
                now = time.monotonic()
                for ref, (path, started) in list(running.items()):
                    if now - started > options.timeout:
                        ray.cancel(ref, force=True)
                        del running[ref]
                        yield failed_record(path, "timeout", f"the job ran past {options.timeout:g} s", now - started)
        finally:
            for ref in running:
                ray.cancel(ref, force=True)


def _ray_job(path: str, options: SweepOptions, job: Job) -> dict[str, Any]:
    from hloscope.gc_pause import cyclic_gc_paused

    with cyclic_gc_paused():
        return job(path, options)

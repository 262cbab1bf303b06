"""Time and memory to result: hloscope parse + run against XLA:CPU parse + compile + execute, same run.

Workloads: the oracle corpus's programs (hloscope.testing.oracle) in their after-optimizations text,
and the seeds on their device grids with random inputs of two kinds: different inputs on every
device (``seed000``, ``seed001``, ``seed004``, ``seed003_per_device``: nothing is shared, the
least favourable case for hloscope's lockstep evaluator, which computes a value all devices
share only once) and the same inputs on every device (``seed000_same``, ``seed001_same``,
``seed003``: its most favourable case). Seed 003 (8 replicas, minutes) runs only with
``--seed003``. For each workload it prints:

* ``hloscope s``: ``hloscope.parse`` of the text plus ``hloscope.run`` on the workload's inputs
  and device grid (best of N, default mode: lockstep where it applies).
* ``XLA total s``: XLA:CPU parse + rewrite + compile (``hloscope.xla.client.compile_hlo``; GPU dumps
  are rewritten into standard HLO first, Note [GPU custom calls on XLA:CPU]), the transfer of
  the inputs to the devices, and the fastest execution of N; ``XLA exec s``: that execution
  alone, inputs already on the devices.
* ``peak MB`` for each side: the maximum resident set size of the child process that ran it
  (``os.wait4``'s rusage, as ``/usr/bin/time`` reports it, taken by a small launcher process). Both children build their inputs
  the same way and hold them once (XLA's child drops its host copy once the inputs are on the
  devices), so the peaks compare the two engines, plus each one's imports (jax for XLA).
* ``time``/``memory``: hloscope / XLA total, hloscope peak / XLA peak; at the end the median
  time ratio over the workloads XLA ran, and for seed 003 whether the goal "faster than
  XLA:CPU's total in less memory than its" is met.

Each side runs in its own child process per workload (``--worker``), because jaxlib may abort
the process on a module it cannot compile (such workloads print n/a with the reason), and so
that each peak is measured alone. The machine is shared: every figure is a best of N, and only
ratios from the same run mean anything.

Run: ``python benchmarks/run.py [--repeat N] [--only NAME,...] [--seed003] [--json]``.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

CORPUS = ["mlp_train_step", "transformer_block", "scan_rnn", "fori_loop_2000", "conv", "remat_grad",
          "pmap_train_step", "pmap_collectives", "sort", "reduce_window"]
# name: (seed, (replicas, partitions), inputs); "per_device": different random inputs on every
# device, "same": one set of inputs on every device.
SEEDS = {"seed000": ("000", (8, 1), "per_device"), "seed000_same": ("000", (8, 1), "same"),
         "seed001": ("001", (1, 4), "per_device"), "seed001_same": ("001", (1, 4), "same"),
         "seed004": ("004", (4, 1), "per_device")}
SEED003 = {"seed003": ("003", (8, 1), "same"), "seed003_per_device": ("003", (8, 1), "per_device")}
MB = 1 << 20


@dataclass
class Row:
    name: str
    devices: int
    hloscope_s: float | None
    hloscope_peak_mb: float | None
    xla_total_s: float | None
    xla_exec_s: float | None
    xla_peak_mb: float | None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """hloscope seconds / XLA total seconds."""
        return self.hloscope_s / self.xla_total_s if self.hloscope_s and self.xla_total_s else None

    @property
    def memory_ratio(self) -> float | None:
        """hloscope peak RSS / XLA peak RSS."""
        if self.hloscope_peak_mb and self.xla_peak_mb:
            return self.hloscope_peak_mb / self.xla_peak_mb
        return None


def _spec(name: str) -> dict[str, Any]:
    """What a child needs to build workload ``name`` itself (so the parent never holds inputs)."""
    if name in SEEDS or name in SEED003:
        seed, (r, p), inputs = {**SEEDS, **SEED003}[name]
        return {"kind": "seed", "seed": seed, "replicas": r, "partitions": p, "inputs": inputs}
    from hloscope.testing.oracle.corpus import build_corpus  # imports jax: in the parent only

    case = build_corpus(names=[name])[name]
    return {"kind": "corpus", "path": str(case.path), "replicas": int(case.meta["num_replicas"]),
            "partitions": int(case.meta["num_partitions"])}


def _workload(spec: dict[str, Any]) -> tuple[str, Any]:
    """(HLO text, inputs) of a workload, built in the child."""
    from hloscope.interpret.npz_io import device_values, load_npz

    n = spec["replicas"] * spec["partitions"]
    if spec["kind"] == "corpus":
        path = Path(spec["path"])
        return (path / "post.hlo").read_text(), device_values(load_npz(path / "inputs.npz"), "arg", n)
    import hloscope
    from hloscope.interpret.inputs import random_inputs

    # The seeds are the repository's test data; read as files, not through the test suite.
    (path,) = (ROOT / "tests" / "data" / "seeds").glob(f"{spec['seed']}_*.txt")
    text = path.read_text()
    m = hloscope.parse(text)
    if spec["inputs"] == "same":
        return text, random_inputs(m, 0, "positive")
    return text, [random_inputs(m, d, "positive") for d in range(n)]


def _hloscope_worker(spec: dict[str, Any], repeat: int) -> dict[str, Any]:
    import hloscope

    best = float("inf")
    for _ in range(repeat):
        # Fresh inputs each time, handed over (donate): like the XLA side, which drops its host
        # copies once they are on the devices, the run alone holds them.
        text, inputs = _workload(spec)
        t = time.perf_counter()
        m = hloscope.parse(text)
        hloscope.run(m, inputs, replicas=spec["replicas"], partitions=spec["partitions"], donate=True)
        best = min(best, time.perf_counter() - t)
        del inputs
    return {"seconds": best}


def _xla_worker(spec: dict[str, Any], repeat: int) -> dict[str, Any]:
    from hloscope.xla import client as xla

    text, inputs = _workload(spec)
    n = spec["replicas"] * spec["partitions"]
    if spec.get("inputs") == "same" and n > 1:
        inputs = [inputs] * n  # the bridge takes a list per device; these are the same arrays
    t0 = time.perf_counter()
    compiled = xla.compile_hlo(text, replicas=spec["replicas"], partitions=spec["partitions"])
    t1 = time.perf_counter()
    arrays = compiled.put(inputs)
    t2 = time.perf_counter()
    del inputs  # XLA holds its own copies on the devices now
    runs = []
    for _ in range(repeat):
        s = time.perf_counter()
        compiled.execute(arrays)
        runs.append(time.perf_counter() - s)
    return {"compile_s": t1 - t0, "transfer_s": t2 - t1, "execute_s": min(runs),
            "total_s": t2 - t0 + min(runs),
            "custom_calls": {} if compiled.rewrite is None else compiled.rewrite.custom_calls}


WORKERS = {"hloscope": _hloscope_worker, "xla": _xla_worker}


def _run_child(side: str, spec: dict[str, Any], repeat: int, timeout: float) -> tuple[dict[str, Any] | None, float | None, str]:
    """(the worker's result, peak RSS in MB, why not) of one side on one workload.

    The worker is started by a small launcher process (``--launch``), which reaps it with
    ``os.wait4``: Linux counts the forking process's resident set into a child's ``ru_maxrss``,
    and this process holds jax and the corpus, the launcher nearly nothing (about 15 MB)."""
    n = spec["replicas"] * spec["partitions"]
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    flags = " ".join(f for f in env.get("XLA_FLAGS", "").split()
                     if not f.startswith("--xla_force_host_platform_device_count"))
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={max(n, 1)}".strip()
    with tempfile.TemporaryDirectory(prefix="hloscope-bench-") as d:
        work = Path(d)
        (work / "spec.json").write_text(json.dumps({**spec, "repeat": repeat}))
        subprocess.run([sys.executable, __file__, "--launch", side, str(work), str(timeout)], env=env,
                       check=True)
        launch = json.loads((work / "launch.json").read_text())
        peak = launch["maxrss_kib"] * 1024 / MB
        status = launch["status"]
        if status is None:
            return None, peak, f"{side}: timeout {timeout:.0f}s"
        if os.WIFSIGNALED(status):
            why = "killed, out of memory?" if os.WTERMSIG(status) == signal.SIGKILL else "crashed"
            return None, peak, f"{side}: {signal.Signals(os.WTERMSIG(status)).name} ({why})"
        if os.waitstatus_to_exitcode(status) != 0 or not (work / "result.json").exists():
            lines = (work / "stderr").read_text().strip().splitlines()
            last = (lines or [f"exit {status}"])[-1]
            return None, peak, f"{side}: {last.split(': ', 1)[-1][:100]}"
        return json.loads((work / "result.json").read_text()), peak, ""


def _launch(side: str, work: Path, timeout: float) -> int:
    """Run the worker, reap it, and write its wait status (None after a timeout) and peak RSS."""
    with open(work / "stderr", "w") as err:
        proc = subprocess.Popen([sys.executable, __file__, "--worker", side, str(work)],
                                stdout=subprocess.DEVNULL, stderr=err)
        status, rusage = _wait(proc, timeout)
    (work / "launch.json").write_text(json.dumps({"status": status, "maxrss_kib": rusage.ru_maxrss}))
    return 0


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int | None, Any]:
    """Reap ``proc`` with ``os.wait4`` for its own rusage; (None, rusage) after a timeout kill."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
            return status, rusage
        if time.monotonic() > deadline:
            proc.kill()
            _, _, rusage = os.wait4(proc.pid, 0)
            proc.returncode = -signal.SIGKILL
            return None, rusage
        time.sleep(0.1)


def _worker_main(side: str, work: Path) -> int:
    spec = json.loads((work / "spec.json").read_text())
    result = WORKERS[side](spec, spec["repeat"])
    (work / "result.json").write_text(json.dumps(result))
    return 0


def _fmt(x: float | None, width: int, digits: int = 3) -> str:
    return f"{'n/a':>{width}s}" if x is None else f"{x:{width}.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="best of N for both sides (default 3)")
    ap.add_argument("--only", default=None, help="comma-separated workload names")
    ap.add_argument("--seed003", action="store_true",
                    help="also seed 003 on 8 replicas, same and per-device inputs (minutes and "
                         "about 13 GB for XLA; run once)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed for each side")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--worker", nargs=2, default=None, metavar=("SIDE", "DIR"), help=argparse.SUPPRESS)
    ap.add_argument("--launch", nargs=3, default=None, metavar=("SIDE", "DIR", "TIMEOUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker_main(args.worker[0], Path(args.worker[1]))
    if args.launch:
        return _launch(args.launch[0], Path(args.launch[1]), float(args.launch[2]))
    names = CORPUS + list(SEEDS) + (list(SEED003) if args.seed003 else [])
    if args.only:
        names = [n for n in args.only.split(",") if n]
    rows = []
    if not args.json:
        print(f"{'workload':20s} {'devices':>7s} {'hloscope s':>10s} {'peak MB':>8s} {'XLA total s':>11s} "
              f"{'XLA exec s':>10s} {'peak MB':>8s} {'time':>6s} {'memory':>6s}  note")
    for name in names:
        spec = _spec(name)
        repeat = 1 if name in SEED003 else args.repeat
        # Interleave the contenders' first runs, so both see the same machine state.
        theirs, xla_peak, xla_note = _run_child("xla", spec, repeat, args.timeout)
        ours, our_peak, our_note = _run_child("hloscope", spec, repeat, args.timeout)
        rewritten = ", ".join(f"{k} {t}" for t, k in sorted((theirs or {}).get("custom_calls", {}).items()))
        note = "; ".join(x for x in (our_note, xla_note, rewritten and f"XLA ran {rewritten} as standard HLO") if x)
        row = Row(name, spec["replicas"] * spec["partitions"], ours and ours["seconds"],
                  our_peak if ours else None, theirs and theirs["total_s"], theirs and theirs["execute_s"],
                  xla_peak if theirs else None, note)
        rows.append(row)
        if not args.json:
            print(f"{name:20s} {row.devices:7d} {_fmt(row.hloscope_s, 10)} {_fmt(row.hloscope_peak_mb, 8, 0)} "
                  f"{_fmt(row.xla_total_s, 11)} {_fmt(row.xla_exec_s, 10)} {_fmt(row.xla_peak_mb, 8, 0)} "
                  f"{_fmt(row.ratio, 6, 2)} {_fmt(row.memory_ratio, 6, 2)}  {note}", flush=True)
    ratios = [row.ratio for row in rows if row.ratio is not None]
    median = statistics.median(ratios) if ratios else None
    goal = {row.name: row.ratio is not None and row.ratio < 1 and row.memory_ratio is not None
            and row.memory_ratio < 1 for row in rows if row.name in SEED003}
    if args.json:
        print(json.dumps({"rows": [asdict(row) | {"ratio": row.ratio, "memory_ratio": row.memory_ratio}
                                   for row in rows], "median_ratio": median, "seed003_goal_met": goal},
                         indent=1))
        return 0
    print(f"median time ratio hloscope / XLA total over {len(ratios)} workloads: "
          + ("n/a" if median is None else f"{median:.2f}"))
    for name, met in goal.items():
        print(f"{name}: faster than XLA:CPU's total in less memory than its: {'yes' if met else 'no'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

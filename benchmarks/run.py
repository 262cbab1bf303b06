"""Time to result: hloscope parse + run against XLA:CPU parse + compile + execute, same run.

For each workload (programs of the oracle corpus, tests/oracle, in their after-optimizations
text, and the seeds 000/001/004 with different random inputs per device; seed 003, with
the same inputs on every replica, with ``--seed003``) it prints:

* ``hloscope``: ``hloscope.parse`` of the text plus ``hloscope.run`` on the workload's inputs
  and device grid (best of N, default mode: lockstep where it applies).
* ``XLA total``: XLA:CPU parse + compile + one execution (``hloscope.xla.compile_and_time``;
  best execution of N), and ``XLA exec``: that execution alone.
* the ratio hloscope / XLA total, and at the end the median ratio over the workloads XLA ran.

The XLA side runs in a child process per workload (``--xla-worker``, as
``hloscope.xla_worker`` does), because jaxlib may abort the process on a module it cannot
compile; such workloads (the GPU and TPU seeds) print n/a. The machine is shared: every figure
is a best of N, and only ratios from the same run mean anything.

Run: ``python benchmarks/run.py [--repeat N] [--only NAME,...] [--seed003] [--json]``.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CORPUS = ["mlp_train_step", "transformer_block", "scan_rnn", "fori_loop_2000", "conv", "remat_grad",
          "pmap_train_step", "pmap_collectives", "sort", "reduce_window"]
SEEDS = {"seed000": ("000", {"replicas": 8}), "seed001": ("001", {"partitions": 4}),
         "seed004": ("004", {"replicas": 4})}


@dataclass
class Row:
    name: str
    devices: int
    hloscope_s: float
    xla_total_s: float | None
    xla_exec_s: float | None
    xla_note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.hloscope_s / self.xla_total_s if self.xla_total_s else None


def _workload(name: str) -> tuple[str, Any, int, int]:
    """(HLO text, inputs, replicas, partitions) of a workload."""
    if name in SEEDS or name == "seed003":
        import hloscope
        from hloscope.interpret.inputs import random_inputs
        from tests.conftest import SEED_FILES

        seed, grid = SEEDS.get(name, ("003", {"replicas": 8}))
        text = Path(SEED_FILES[seed]).read_text()
        m = hloscope.parse(text)
        r, p = grid.get("replicas", 1), grid.get("partitions", 1)
        if seed == "003":  # as its slow test runs it: the same inputs on every replica
            return text, random_inputs(m, 0, "positive"), r, p
        # Different data on every device: nothing is shared, the least favourable case for lockstep.
        return text, [random_inputs(m, d, "positive") for d in range(r * p)], r, p
    from tests.oracle.corpus import build_corpus

    case = build_corpus(names=[name])[name]
    return case.post_text, case.inputs(), int(case.meta["num_replicas"]), int(case.meta["num_partitions"])


def _time_hloscope(text: str, inputs: Any, r: int, p: int, repeat: int) -> float:
    import hloscope

    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        m = hloscope.parse(text)
        hloscope.run(m, inputs, replicas=r, partitions=p)
        best = min(best, time.perf_counter() - t)
    return best


def _time_xla(text: str, inputs: Any, r: int, p: int, repeat: int, timeout: float) -> tuple[float | None, float | None, str]:
    """(total, execute) seconds from a child process, or (None, None, why)."""
    with tempfile.TemporaryDirectory(prefix="hloscope-bench-") as d:
        work = Path(d)
        (work / "module.hlo").write_text(text)
        with open(work / "inputs.pkl", "wb") as f:
            pickle.dump({"inputs": inputs, "replicas": r, "partitions": p, "repeat": repeat}, f)
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        flags = " ".join(f for f in env.get("XLA_FLAGS", "").split()
                         if not f.startswith("--xla_force_host_platform_device_count"))
        env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={max(r * p, 1)}".strip()
        try:
            proc = subprocess.run([sys.executable, __file__, "--xla-worker", str(work)], capture_output=True,
                                  text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return None, None, f"timeout {timeout:.0f}s"
        if proc.returncode != 0 or not (work / "timing.json").exists():
            last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            return None, None, last[:70]
        timing = json.loads((work / "timing.json").read_text())
        return timing["total_s"], timing["execute_s"], ""


def _xla_worker(work: Path) -> int:
    from hloscope import xla

    with open(work / "inputs.pkl", "rb") as f:
        cfg = pickle.load(f)
    timing = xla.compile_and_time((work / "module.hlo").read_text(), cfg["inputs"], replicas=cfg["replicas"],
                                  partitions=cfg["partitions"], repeat=cfg["repeat"])
    (work / "timing.json").write_text(json.dumps({"total_s": timing.total_s, "execute_s": timing.execute_s,
                                                  "parse_s": timing.parse_s, "compile_s": timing.compile_s}))
    return 0


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:9.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="best of N for both sides (default 3)")
    ap.add_argument("--only", default=None, help="comma-separated workload names")
    ap.add_argument("--seed003", action="store_true", help="also seed 003 on 8 replicas (minutes; run once)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds allowed for the XLA side")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--xla-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.xla_worker:
        return _xla_worker(Path(args.xla_worker))
    names = CORPUS + list(SEEDS) + (["seed003"] if args.seed003 else [])
    if args.only:
        names = [n for n in args.only.split(",") if n]
    rows = []
    if not args.json:
        print(f"{'workload':22s} {'devices':>7s} {'hloscope s':>10s} {'XLA total s':>11s} {'XLA exec s':>10s} "
              f"{'ratio':>7s}  note")
    for name in names:
        text, inputs, r, p = _workload(name)
        repeat = 1 if name == "seed003" else args.repeat
        # Interleave the contenders' first runs, so both see the same machine state.
        xla_total, xla_exec, note = _time_xla(text, inputs, r, p, repeat, args.timeout)
        ours = _time_hloscope(text, inputs, r, p, repeat)
        row = Row(name, r * p, ours, xla_total, xla_exec, note)
        rows.append(row)
        if not args.json:
            ratio = "n/a" if row.ratio is None else f"{row.ratio:7.2f}"
            print(f"{name:22s} {r * p:7d} {ours:10.3f} {_fmt(xla_total):>11s} {_fmt(xla_exec):>10s} {ratio:>7s}  {note}",
                  flush=True)
    ratios = [row.ratio for row in rows if row.ratio is not None]
    median = statistics.median(ratios) if ratios else None
    if args.json:
        print(json.dumps({"rows": [asdict(row) | {"ratio": row.ratio} for row in rows], "median_ratio": median},
                         indent=1))
    else:
        print(f"median ratio hloscope / XLA total over {len(ratios)} workloads: "
              + ("n/a" if median is None else f"{median:.2f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

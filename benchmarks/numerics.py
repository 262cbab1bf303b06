"""What the numerics tools cost: ``--find-nonfinite`` and ``stats`` against a plain run, and
``reduce`` on a 5k-instruction module.

For each workload (seed 003 on 8 replicas with the same random inputs on every device, as
``hloscope run --random 0`` gives them; the models tier's optimized training steps on their
inputs), it times in this process, best of ``--repeat`` (CPU seconds of the process, which a
busy machine inflates less than wall time):

* ``plain``: ``hloscope.run`` (lockstep where it applies);
* ``nonfinite``: the same run with a ``NonfiniteWatch`` that does not stop, so it pays the
  check of every value (a run that finds a NaN stops there and costs less); seed 003's
  random inputs overflow, so ``to answer`` also times ``find_nonfinite`` to its answer;
* ``stats``: the same run with a ``StatsWatch`` (every value's min/max/mean/std/counts).

``reduce`` takes the models tier's largest optimized module (gpt_bf16_remat, about 5,000
instructions, 8 devices), plants a bug (one constant changed, or two operands swapped), and
times ``reduce_module`` with the ``DiffersFrom`` property (the unplanted module the
reference) and with ``Nonfinite`` on the planted NaN model; it prints the size reached.

Run: ``python benchmarks/numerics.py [--repeat N] [--seed003] [--models a,b] [--json]``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import hloscope as hs  # noqa: E402
from hloscope.interpret import RunOptions  # noqa: E402
from hloscope.interpret.run import default_grid  # noqa: E402
from hloscope.numerics import NonfiniteWatch, find_nonfinite  # noqa: E402
from hloscope.numerics.stats import StatsWatch  # noqa: E402

SEED003 = ROOT / "tests" / "data" / "seeds" / "003_83a80cec1e7cc5e6.txt"


def _cpu(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(best CPU seconds, median wall seconds) of ``repeat`` calls."""
    cpu, wall = [], []
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), statistics.median(wall)


def overhead(name: str, m: hs.Module, inputs: Callable[[], Any], repeat: int, answer: bool) -> dict[str, Any]:
    r, p = default_grid(m)

    def run(hooks: Callable[[], list[Any]]) -> Callable[[], Any]:
        return lambda: hs.run(m, inputs(), replicas=r, partitions=p, options=RunOptions(hooks=hooks()))

    row: dict[str, Any] = {"workload": name, "devices": r * p, "instructions": m.instruction_count}
    row["plain_s"], row["plain_wall_s"] = _cpu(run(lambda: []), repeat)
    row["nonfinite_s"], _ = _cpu(run(lambda: [NonfiniteWatch(m, r, p, stop=False)]), repeat)
    row["stats_s"], _ = _cpu(run(lambda: [StatsWatch(m, r * p)]), repeat)
    if answer:
        found: list[Any] = []
        row["to_answer_s"], _ = _cpu(lambda: found.append(find_nonfinite(m, inputs(), replicas=r, partitions=p)), 1)
        first = found[-1]
        row["answer"] = None if first is None else f"{first.instruction.name if first.instruction else first.kind}"
    row["nonfinite_x"] = row["nonfinite_s"] / row["plain_s"]
    row["stats_x"] = row["stats_s"] / row["plain_s"]
    return row


def reduce_rows() -> list[dict[str, Any]]:
    from hloscope.numerics.reduce import DiffersFrom, Nonfinite, reduce_module
    from hloscope.testing.models import build
    from hloscope.testing.numerics_plants import change_constant, swap_operands

    out = []
    case = build("gpt_bf16_remat")
    a = hs.parse(case.post_text)
    for plant in (change_constant, swap_operands):
        b, changed = plant(a, skip=3)
        c, w = time.process_time(), time.perf_counter()
        prop = DiffersFrom(a, case.inputs())
        result = reduce_module(b, case.inputs(), prop, check_xla=False)
        out.append({"workload": f"gpt_bf16_remat, {plant.__name__} ({changed})", "instructions": result.original_size,
                    "reduced_to": result.size, "tests": result.tests, "cpu_s": time.process_time() - c,
                    "wall_s": time.perf_counter() - w})
    case = build("nan_norm_dp8")
    m = hs.parse(case.post_text)
    c, w = time.process_time(), time.perf_counter()
    result = reduce_module(m, case.inputs(), Nonfinite(), check_xla=False)
    out.append({"workload": "nan_norm_dp8, nonfinite", "instructions": result.original_size,
                "reduced_to": result.size, "tests": result.tests, "cpu_s": time.process_time() - c,
                "wall_s": time.perf_counter() - w})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed003", action="store_true", help="also seed 003 on 8 replicas (minutes)")
    ap.add_argument("--models", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--no-reduce", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from hloscope.interpret.inputs import random_inputs
    from hloscope.testing.models import MODEL_NAMES, build

    rows = []
    if args.seed003:
        m = hs.load(SEED003)
        rows.append(overhead("seed003 (8 replicas, same inputs)", m,
                             lambda: random_inputs(m, 0, "normal", num_devices=8), max(1, args.repeat - 1), True))
    for name in (args.models.split(",") if args.models else MODEL_NAMES):
        case = build(name)
        m = hs.parse(case.post_text)
        rows.append(overhead(name, m, case.inputs, args.repeat, False))
    reduced = [] if args.no_reduce else reduce_rows()
    if args.json:
        print(json.dumps({"overhead": rows, "reduce": reduced}, indent=1))
        return 0
    print(f"{'workload':40} {'dev':>3} {'plain s':>8} {'nonfinite':>16} {'stats':>16} {'to answer':>10}")
    for r in rows:
        ans = f"{r['to_answer_s']:.2f}" if "to_answer_s" in r else ""
        print(f"{r['workload']:40} {r['devices']:>3} {r['plain_s']:8.3f} {r['nonfinite_s']:8.3f} ({r['nonfinite_x']:4.2f}x)"
              f" {r['stats_s']:8.3f} ({r['stats_x']:4.2f}x) {ans:>10}")
    if rows:
        print(f"median over the workloads: nonfinite {statistics.median(r['nonfinite_x'] for r in rows):.2f}x, "
              f"stats {statistics.median(r['stats_x'] for r in rows):.2f}x a plain run")
    for r in reduced:
        print(f"reduce {r['workload']}: {r['instructions']} -> {r['reduced_to']} instructions, {r['tests']} tests, "
              f"{r['cpu_s']:.1f} s CPU ({r['wall_s']:.1f} s wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

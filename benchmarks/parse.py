"""Parse speed: hloscope's load time against jaxlib's C++ parser, measured in the same run.

Prints MB/s for seed 003 (2.2 MB) and for a module ten times its size (ten renamed copies of
every computation), and the ratio hloscope / XLA for each. Run: ``python benchmarks/parse.py``.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "tests" / "data" / "seeds" / "003_83a80cec1e7cc5e6.txt"


def ten_times(text: str) -> str:
    """A module 10x the size: ten copies of every computation under new names."""
    import hloscope as hs
    from hloscope.ir import Module

    comps = []
    entry = None
    for k in range(10):
        m = hs.parse(text)
        for c in m.computations:
            c.name = f"{c.name}.x{k}"
            c.is_entry = k == 9 and c is m.entry
            if c.is_entry:
                entry = c
            comps.append(c)
    assert entry is not None
    big = Module(m.name, comps, entry, m.attrs, stack_frames=m.stack_frames, style=m.style)
    return big.to_text()


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    import hloscope as hs

    try:
        from hloscope import xla

        have_xla = xla.available()
    except Exception:  # noqa: BLE001 - the benchmark still reports hloscope's own figures
        have_xla = False
    text = SEED.read_text()
    workloads = [("seed 003", text, 5), ("seed 003 x10", ten_times(text), 2)]
    print(f"{'workload':<14} {'MB':>7} {'hloscope s':>11} {'MB/s':>7} {'XLA s':>8} {'ratio':>7}")
    ratios = []
    for name, t, repeat in workloads:
        mb = len(t.encode()) / 1e6
        ours = best_of(lambda t=t: hs.parse(t), repeat)
        if have_xla:
            theirs = best_of(lambda t=t: xla.parse_hlo_text(t), repeat)
            ratio = ours / theirs
            ratios.append(ratio)
            print(f"{name:<14} {mb:7.1f} {ours:11.3f} {mb / ours:7.1f} {theirs:8.3f} {ratio:7.1f}")
        else:
            print(f"{name:<14} {mb:7.1f} {ours:11.3f} {mb / ours:7.1f} {'n/a':>8} {'n/a':>7}")
    if len(ratios) == 2:
        per_mb = [workloads[i][2] for i in range(2)]
        del per_mb
        print(f"median ratio hloscope/XLA: {statistics.median(ratios):.1f} (goal: <= 1.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Parse speed: hloscope's load time against XLA's C++ parser, side by side in one run.

For each module it prints one row: module, MB, instructions, hloscope ms, XLA ms, ratio. The two
contenders run in turn, ``--repeat`` times each, and each column is the median of its runs (the
machine is shared: only figures taken side by side in the same run mean anything).

* hloscope: ``hloscope.parse`` (what ``hloscope.load`` returns). Bulky attributes stay text:
  metadata, shardings, backend configs and constant literals decode on first use.
* XLA: jaxlib's C++ parser (``hloscope.xla.client.parse_hlo_text``, ``hlo_module_from_text``).

``--paths`` shows, for each module, which path read it (the line path, or the token parser after
the line path gave up) and, when the line path gave up, the first line it could not read.

Run: ``python benchmarks/parse.py [PATH ...] [--dir DIR] [--largest N] [--seed] [--x10]
[--repeat N] [--paths]``; without paths it measures seed 003. The acceptance table of issue 16:
``--dir /work/xla_bench --largest 4 --seed``.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "tests" / "data" / "seeds" / "003_83a80cec1e7cc5e6.txt"


def ten_times(text: str) -> str:
    """A module 10x the size: ten copies of every computation under new names (``--x10``)."""
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


def load(text: str) -> object:
    import hloscope as hs

    return hs.parse(text)


def interleaved_medians(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median wall time of each function, running them in turn ``repeat`` times."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            result = fn()
            times[k].append(time.perf_counter() - t0)
            del result
    return {k: statistics.median(v) for k, v in times.items()}


def which_path(text: str, name: str) -> str:
    """'line' when the line path reads the module, else where it gave up."""
    from hloscope.source import Source
    from hloscope.text.line_parser import LineParser

    parser = LineParser(Source(text, name))
    if parser.parse() is not None:
        return "line"
    return f"token parser (line path gave up: {parser.gave_up})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path, help="HLO text files (default: seed 003)")
    ap.add_argument("--dir", type=Path, action="append", default=[], help="also every *.hlo in DIR")
    ap.add_argument("--largest", type=int, default=0, help="only the N largest of the --dir files")
    ap.add_argument("--seed", action="store_true", help="also seed 003")
    ap.add_argument("--x10", action="store_true", help="also seed 003 ten times over (linear time: 10x)")
    ap.add_argument("--repeat", type=int, default=7, help="runs per contender and module")
    ap.add_argument("--paths", dest="show_paths", action="store_true", help="say which parser path read each")
    args = ap.parse_args()
    try:
        from hloscope.xla import client as xla

        have_xla = xla.available()
    except Exception:  # noqa: BLE001 - the benchmark still reports hloscope's own figures
        have_xla = False
    found: list[Path] = []
    for d in args.dir:
        found += [p for p in d.glob("*.hlo") if p.stat().st_size > 0]
    if args.largest:
        found = sorted(found, key=lambda p: -p.stat().st_size)[: args.largest]
    paths = list(args.paths) + found
    if args.seed or not paths:
        paths.append(SEED)
    import hloscope as hs

    texts = [(p.name, p.read_text()) for p in paths]
    if args.x10:
        texts.append(("seed 003 x10", ten_times(SEED.read_text())))
    rows = []
    print(f"{'module':<62} {'MB':>5} {'instructions':>12} {'hloscope ms':>11} {'XLA ms':>7} {'ratio':>6}")
    for name, text in texts:
        mb = len(text.encode()) / 1e6
        n = hs.parse(text).instruction_count
        fns: dict[str, Callable[[], object]] = {"hloscope": lambda t=text: load(t)}
        if have_xla:
            fns["XLA"] = lambda t=text: xla.parse_hlo_text(t)
        med = interleaved_medians(fns, args.repeat)
        ours = med["hloscope"] * 1e3
        theirs = med["XLA"] * 1e3 if have_xla else float("nan")
        ratio = ours / theirs if have_xla else float("nan")
        rows.append(ratio)
        print(f"{name:<62} {mb:5.2f} {n:>12} {ours:11.0f} {theirs:7.0f} {ratio:6.2f}", flush=True)
        if args.show_paths:
            print(f"    {which_path(text, name)}")
    if have_xla and len(rows) > 1:
        print(f"worst ratio {max(rows):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

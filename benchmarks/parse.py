"""Parse speed: hloscope's load time against XLA's C++ parser, side by side in one run.

For each module it prints one row: module, MB, instructions, then the milliseconds of each
contender and its ratio to XLA's. The contenders run in turn, ``--repeat`` times each, and each
column is the median of its runs (the machine is shared: only figures taken side by side in the
same run mean anything).

* lazy: ``hloscope.parse`` (what ``hloscope.load`` returns). Bulky attributes stay text:
  metadata, shardings, frontend attributes, backend configs and constant literals decode on
  first use. This is not the work XLA's parser does, which decodes all of them.
* decoded: ``hloscope.parse`` and then every one of those decoded (``decode_all``): the like-
  for-like figure against XLA's.
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


def decode_all(module: object) -> int:
    """Decode what the parser kept as text, as XLA's parser decodes it: every instruction's
    metadata, sharding, frontend attributes, backend config (JSON) and constant literal.
    Returns how many attributes it decoded."""
    from hloscope.ir.literal import Literal

    count = 0
    for inst in module.instructions():  # type: ignore[attr-defined]
        attrs = inst.attrs
        if (md := attrs.get("metadata")) is not None:
            _ = md.fields
            count += 1
        if (sh := attrs.get("sharding")) is not None:
            try:
                sh.parsed()
            except ValueError:
                pass
            count += 1
        if (fa := attrs.get("frontend_attributes")) is not None:
            _ = fa.map
            count += 1
        if (bc := attrs.get("backend_config")) is not None:
            bc.json()
            count += 1
        if isinstance(lit := attrs.get("literal"), Literal) and not lit.elided:
            lit.to_numpy(inst.shape)
            count += 1
    return count


def load_decoded(text: str) -> object:
    module = load(text)
    decode_all(module)
    return module


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
    rows: list[tuple[float, float]] = []
    print(f"{'module':<56} {'MB':>5} {'instr.':>6} {'lazy ms':>8} {'decoded ms':>10} {'XLA ms':>7} "
          f"{'lazy/XLA':>8} {'decoded/XLA':>11}")
    for name, text in texts:
        mb = len(text.encode()) / 1e6
        n = hs.parse(text).instruction_count
        fns: dict[str, Callable[[], object]] = {"lazy": lambda t=text: load(t),
                                                "decoded": lambda t=text: load_decoded(t)}
        if have_xla:
            fns["XLA"] = lambda t=text: xla.parse_hlo_text(t)
        med = interleaved_medians(fns, args.repeat)
        lazy, decoded = med["lazy"] * 1e3, med["decoded"] * 1e3
        theirs = med["XLA"] * 1e3 if have_xla else float("nan")
        ratios = (lazy / theirs, decoded / theirs) if have_xla else (float("nan"), float("nan"))
        rows.append(ratios)
        print(f"{name[:56]:<56} {mb:5.2f} {n:>6} {lazy:8.0f} {decoded:10.0f} {theirs:7.0f} "
              f"{ratios[0]:8.2f} {ratios[1]:11.2f}", flush=True)
        if args.show_paths:
            print(f"    {which_path(text, name)}")
    if have_xla and len(rows) > 1:
        print(f"worst ratio: lazy {max(r[0] for r in rows):.2f}, decoded {max(r[1] for r in rows):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Differential fuzzing of hloscope against XLA: the command line of ``hloscope.testing.fuzz``
(see there for the checks and the notes on comparing with XLA).

Usage::

    python tools/fuzz_hlo.py gen 17                     # print seed 17's module and inputs
    python tools/fuzz_hlo.py run --seeds 0:2000 --checks abcd
    python tools/fuzz_hlo.py run --seeds 0:500 --checks e --out /tmp/fuzz
    python tools/fuzz_hlo.py reduce 17 --checks e       # minimise seed 17's failure
    python tools/fuzz_hlo.py compare tests/fuzz/repros/popcnt_scalar.hlo   # both results
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT / "src") not in sys.path:  # running from a checkout without installing
    sys.path.insert(0, str(_ROOT / "src"))

from hloscope.testing.fuzz import (  # noqa: E402
    XlaWorker,
    campaign,
    check_case,
    compare_arrays,
    describe_repro,
    generate,
    leaves_of,
    producer_of,
    reduce_case,
    run_hloscope,
)
from hloscope.testing.xla_worker import worker_main  # noqa: E402

# --------------------------------------------------------------------------------------------
# The campaign and the command line


def _seed_range(text: str) -> range:
    if ":" in text:
        a, b = text.split(":")
        return range(int(a), int(b))
    return range(int(text), int(text) + 1)


def _print_summary(summary: dict[str, Any]) -> None:
    print(f"\n{summary['modules']} modules in {summary['seconds']} s")
    for c, counts in summary["checks"].items():
        print(f"  check {c}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"  XLA aborts: {summary['xla_aborts']}")
    for note, v in summary["notes"].items():
        print(f"  note {v['count']:5d}  {note}  seeds {v['seeds'][:5]}")
    print("failures by class:")
    for f in summary["failures"]:
        print(f"  [{f['check']}] {f['count']:4d}  {f['kind']} @ {f['where']}  seeds {f['seeds'][:5]}")
        print(f"         {f['example'][:300]}")


def _compare_file(path: Path) -> int:
    """Print hloscope's and XLA:CPU's values of a parameterless module; 1 when they differ."""
    import hloscope as hs

    text = path.read_text()
    module = hs.parse(text, str(path))
    with XlaWorker() as worker:
        status, theirs = worker.call("run", text, [])
    if status != "ok":
        print(f"XLA: {status}: {theirs}")
        return 1
    try:
        ours = run_hloscope(module, [])
    except Exception as e:
        print(f"hloscope: {type(e).__name__}: {str(e).splitlines()[0]}")
        print(f"XLA:      {[a.tolist() for _, a in leaves_of(theirs)]}")
        return 1
    differ = 0
    for (path_, a), (_, b) in zip(leaves_of(ours), leaves_of(theirs)):
        msg = compare_arrays(a, b, producer_of(module.entry.root))
        differ |= msg is not None
        print(f"output {list(path_)}: {'differs: ' + msg if msg else 'equal'}")
        print(f"  hloscope {a.tolist()}\n  XLA      {b.tolist()}")
    return int(differ)


def main(argv: list[str] | None = None) -> int:
    """The command line; see the module docstring."""
    ap = argparse.ArgumentParser(prog="fuzz_hlo.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="print the module a seed generates")
    g.add_argument("seed", type=int)
    g.add_argument("--shapeless", action="store_true", help="leave out the shapes XLA infers")
    g.add_argument("--inputs", action="store_true", help="print the inputs too")
    r = sub.add_parser("run", help="check a range of seeds against XLA")
    r.add_argument("--seeds", default="0:100", help="A:B (half-open) or one seed")
    r.add_argument("--checks", default="abcde", help="letters of the checks to run (default abcde)")
    r.add_argument("--compile", action="store_true",
                   help="also take XLA:CPU's compilation (its verifier) as XLA's verdict")
    r.add_argument("--out", type=Path, help="write failures.jsonl, summary.json (and repros/)")
    r.add_argument("--reduce", action="store_true", help="minimise one failure per class into OUT/repros")
    r.add_argument("-v", "--verbose", action="store_true", help="print every failure as found")
    d = sub.add_parser("reduce", help="minimise the failure of one seed")
    d.add_argument("seed", type=int)
    d.add_argument("--checks", default="abcde")
    d.add_argument("--out", type=Path, help="write the repro here (default: print it)")
    k = sub.add_parser("compare", help="run a module file (no parameters, e.g. a saved repro) "
                                       "on hloscope and XLA:CPU and show both results")
    k.add_argument("file", type=Path)
    sub.add_parser("_worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.cmd == "_worker":
        worker_main()
        return 0
    if args.cmd == "compare":
        return _compare_file(args.file)
    if args.cmd == "gen":
        case = generate(args.seed)
        print(f"// mutation: {case.mutation}" if case.mutation else "// valid by construction")
        print(case.text(shapeless=args.shapeless))
        if args.inputs:
            for k, v in enumerate(case.inputs):
                print(f"// parameter {k}: {np.asarray(v).dtype}{list(np.shape(v))} {np.asarray(v).tolist()}")
        return 0
    if args.cmd == "run":
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
        summary = campaign(_seed_range(args.seeds), args.checks, compile_verdict=args.compile,
                           out_dir=args.out, reduce=args.reduce, verbose=args.verbose)
        _print_summary(summary)
        return 1 if summary["failures"] else 0
    case = generate(args.seed)
    with XlaWorker() as worker:
        out = check_case(case, worker, args.checks)
        if not out.failures:
            print(f"seed {args.seed} passes checks {args.checks}")
            return 0
        failure = out.failures[0]
        print(f"reducing {failure}")
        small = reduce_case(case, failure, worker, log=print)
        text = describe_repro(small, failure, worker)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 1


if __name__ == "__main__":
    sys.exit(main())

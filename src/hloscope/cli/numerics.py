"""The numerics commands: ``stats`` (what every value holds), ``compare`` (where two runs part)
and ``reduce`` (the smallest module that still shows a problem). ``run --find-nonfinite`` is
in run.py. Each has a ``--json`` twin; ``compare`` exits with 4 when the runs part."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from hloscope.cli.common import (
    EXIT_FOUND,
    EXIT_OK,
    command,
    console,
    emit_json,
    input_file,
    non_negative_int,
    output_dir,
    output_file,
    positive_int,
    read_module,
    short,
)

__all__: list[str] = []


# --- inputs, as `hloscope run` takes them -----------------------------------------------------------


def add_input_args(p: argparse.ArgumentParser, *, devices: bool = True) -> None:
    """The options that say what a module runs on: ``run``'s ``--inputs``/``--random`` and grid."""
    src = p.add_mutually_exclusive_group()
    src.add_argument("--inputs", metavar="IN.npz", type=input_file,
                     help="arrays arg0, arg1, ... (tuple parameters arg0.0 ...; device k only: d<k>.arg0)")
    src.add_argument("--random", type=non_negative_int, metavar="SEED", default=None,
                     help="deterministic random inputs from SEED (the default, with seed 0)")
    p.add_argument("--distribution", choices=("normal", "uniform", "positive"), default="normal",
                   help="how --random draws floats (default normal)")
    if devices:
        p.add_argument("--per-device-inputs", action="store_true",
                       help="draw different random inputs for each device (default: the same on every device)")
        p.add_argument("--replicas", type=positive_int, help="number of replicas (default: the module's)")
        p.add_argument("--partitions", type=positive_int, help="number of partitions (default: the module's)")
    p.add_argument("--float-env", choices=("auto", "xla-cpu", "xla-cpu-avx512", "gpu", "tpu", "ieee"),
                   default="auto", help="the backend's floating-point environment (see `hloscope run --help`)")
    p.add_argument("--fill-elided", choices=("zeros", "random"),
                   help="run modules whose large constants were elided ({...}) with these values")


def grid_of(args: argparse.Namespace, m: Any) -> tuple[int, int]:
    from hloscope.interpret.run import infer_grid

    r0, p0, _ = infer_grid(m)
    return getattr(args, "replicas", None) or r0, getattr(args, "partitions", None) or p0


def inputs_of(args: argparse.Namespace, m: Any, n: int) -> list[Any]:
    """The inputs ``args`` name for ``m`` on ``n`` devices (``hloscope.run``'s conventions)."""
    from hloscope.interpret.inputs import inputs_from_mapping, random_inputs
    from hloscope.interpret.npz_io import load_npz

    if args.inputs:
        return inputs_from_mapping(m, load_npz(args.inputs), n)
    per_device = n > 1 and getattr(args, "per_device_inputs", False)
    return random_inputs(m, args.random or 0, args.distribution, num_devices=n, per_device=per_device)


def options_of(args: argparse.Namespace) -> Any:
    from hloscope.interpret import RunOptions

    return RunOptions(fill_elided=args.fill_elided, seed=args.random or 0, float_env=args.float_env)


# --- stats --------------------------------------------------------------------------------------------


def _configure_stats(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", type=input_file, help="HLO text file ('-' reads standard input)")
    add_input_args(p)
    p.add_argument("--select", metavar="REGEX",
                   help="only instructions whose name or op_name matches REGEX (Python re.search)")
    p.add_argument("--fused", action="store_true", help="also the instructions inside fusions")
    p.add_argument("--save", metavar="DIR", type=output_dir,
                   help="write the selected values to DIR as npz, one file per instruction "
                        "(arrays d<device>.<execution>)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print every row as JSON")
    out.add_argument("--csv", action="store_true", help="print every row as CSV")
    p.add_argument("--limit", type=non_negative_int, default=60, help="rows shown in the table (default 60)")


@command("stats", "statistics of every value a run makes, per instruction and device: min, max, mean, std, "
                  "abs-max, NaN/inf/zero counts")(_configure_stats)
def _stats(args: argparse.Namespace) -> int:
    from hloscope.numerics.stats import value_stats

    m = read_module(args.file, "stats")
    r, p = grid_of(args, m)
    inputs = inputs_of(args, m, r * p)
    report = value_stats(m, inputs, replicas=r, partitions=p, select=args.select, fused=args.fused,
                         save_dir=args.save, options=options_of(args))
    if args.json:
        emit_json(report.to_json())
        return EXIT_OK
    if args.csv:
        sys.stdout.write(report.to_csv())
        return EXIT_OK
    from rich.table import Table

    con = console()
    rows = report.rows
    con.print(f"[bold]{m.name}[/bold]: {len(rows)} rows ({r} replica(s) x {p} partition(s))")
    t = Table(title_justify="left")
    cols = ("instruction", "opcode", "dev", "runs", "shape", "min", "max", "mean", "std", "abs-max",
            "NaN", "inf", "zero", "op_name")
    for c in cols:
        t.add_column(c, justify="left" if c in ("instruction", "opcode", "shape", "op_name") else "right")

    def g(x: float | None) -> str:
        return "" if x is None else f"{x:.4g}"

    for row in rows[:args.limit]:
        t.add_row(row.label, row.opcode, str(row.device), str(row.executions),
                  f"{row.dtype}[{','.join(map(str, row.shape))}]", g(row.min), g(row.max), g(row.mean), g(row.std),
                  g(row.abs_max), str(row.nan or ""), str(row.inf or ""), str(row.zero or ""),
                  short(row.op_name, 40))
    con.print(t)
    if len(rows) > args.limit:
        con.print(f"... and {len(rows) - args.limit} more rows (--limit, --json or --csv for all)")
    if report.saved:
        con.print(f"values of {len(report.saved)} instructions written to {args.save}")
    if report.save_note:
        con.print(f"note: {report.save_note}")
    return EXIT_OK


# --- compare ------------------------------------------------------------------------------------------


def _configure_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", metavar="A", type=input_file, help="a module (before optimizations, say)")
    p.add_argument("b", metavar="B", nargs="?", type=input_file,
                   help="another module of the same program (after optimizations, another compiler's, a "
                        "GPU dump against a CPU one); omit with --against xla")
    p.add_argument("--against", choices=("xla",),
                   help="compare A as hloscope runs it with XLA:CPU (needs jax): XLA's intermediate values come "
                        "from cut-down modules run in a child process")
    add_input_args(p)
    p.add_argument("--inputs-b", metavar="IN.npz", type=input_file,
                   help="B's own inputs (default: A's; cut into each device's shard when A is the global program "
                        "of a partitioned B)")
    p.add_argument("--rtol", type=float, help="relative tolerance for every float type (default: per dtype, "
                                              "hloscope.numerics.tolerances.COMPARE)")
    p.add_argument("--atol", type=float, help="absolute tolerance for every float type")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")


@command("compare", "where two modules of one program part (or one module on hloscope and on XLA:CPU): the "
                    "first matched value that differs beyond the tolerance; exit status 4 when they part")(_configure_compare)
def _compare(args: argparse.Namespace) -> int:
    from hloscope.errors import InputError

    if (args.b is None) == (args.against is None):
        raise InputError("give two modules (compare A B) or one with --against xla")
    tolerances = {k: v for k, v in (("rtol", args.rtol), ("atol", args.atol)) if v is not None} or None
    a = read_module(args.a, "compare")
    r, p = grid_of(args, a)
    if args.against:
        from hloscope.numerics.xla_compare import compare_with_xla

        inputs = inputs_of(args, a, r * p)
        report = compare_with_xla(a, inputs, replicas=r, partitions=p, tolerances=tolerances,
                                  options=options_of(args))
    else:
        from hloscope.interpret.inputs import inputs_from_mapping
        from hloscope.interpret.npz_io import load_npz
        from hloscope.numerics.compare import compare_modules

        b = read_module(args.b, "compare")
        rb, pb = grid_of(args, b)
        r, p = max(r, rb), max(p, pb)
        inputs = inputs_of(args, a, r * p)
        inputs_b = inputs_from_mapping(b, load_npz(args.inputs_b), r * p) if args.inputs_b else None
        report = compare_modules(a, b, inputs, inputs_b=inputs_b, replicas=r, partitions=p,
                                 tolerances=tolerances, options=options_of(args))
    if args.json:
        emit_json(report.to_json())
    else:
        sys.stdout.write(report.describe() + "\n")
    return EXIT_OK if report.first_divergence is None else EXIT_FOUND


# --- reduce -------------------------------------------------------------------------------------------


def _configure_reduce(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", type=input_file, help="HLO text file")
    p.add_argument("--until", required=True, metavar="PROPERTY",
                   help="what must keep holding: 'nonfinite' (an instruction makes a NaN or an infinity), "
                        "'differs-from-xla' (hloscope's outputs differ from XLA:CPU's; needs jax), "
                        "'differs-from:REF.hlo' (a value differs from its namesake in REF, run on the same "
                        "inputs), or a shell command line with {} for the candidate's path ({inputs} for its "
                        "npz inputs) that exits 0 while the property holds")
    p.add_argument("-o", "--output", metavar="SMALL.hlo", required=True, type=output_file,
                   help="where to write the reduced module; its inputs go beside it (SMALL.npz)")
    add_input_args(p)
    p.add_argument("--rtol", type=float, help="relative tolerance for the differs-from properties")
    p.add_argument("--atol", type=float, help="absolute tolerance for the differs-from properties")
    p.add_argument("--json", action="store_true", help="print what was done as JSON")


@command("reduce", "shrink a module to a small one that still shows a property (a NaN, a difference from XLA, "
                   "your own test), with the inputs that reproduce it")(_configure_reduce)
def _reduce(args: argparse.Namespace) -> int:
    from pathlib import Path

    from hloscope.fileio import check_not_input
    from hloscope.numerics import reduce as reducing

    m = read_module(args.file, "reduce")
    r, p = grid_of(args, m)
    npz = str(Path(args.output).with_suffix(".npz"))
    check_not_input(args.output, [args.file] + ([args.inputs] if args.inputs else []))
    check_not_input(npz, [args.file] + ([args.inputs] if args.inputs else []))
    inputs = inputs_of(args, m, r * p)
    options = options_of(args)
    tolerances = {k: v for k, v in (("rtol", args.rtol), ("atol", args.atol)) if v is not None} or None
    until = args.until.strip()
    prop: Any
    if until == "nonfinite":
        prop = reducing.Nonfinite(options)
    elif until == "differs-from-xla":
        prop = reducing.DiffersFromXla(tolerances, options)
    elif until.startswith("differs-from:"):
        ref = read_module(until.split(":", 1)[1], "reduce")
        prop = reducing.DiffersFrom(ref, inputs, replicas=r, partitions=p, tolerances=tolerances, options=options)
    else:
        prop = reducing.Command(until)
    def log(line: str) -> None:
        if not args.json:
            sys.stderr.write(f"hloscope reduce: {line}\n")

    result = reducing.reduce_module(m, inputs, prop, replicas=r, partitions=p, log=log)
    reducing.write_candidate(result.candidate, args.output, npz)
    if args.json:
        emit_json({"output": args.output, "inputs": npz, **result.to_json()})
    else:
        sys.stdout.write(f"{m.name}: {result.original_size} -> {result.size} instructions in {len(result.steps)} "
                         f"steps ({result.tests} tests, {result.seconds:.1f} s); wrote {args.output} and {npz}\n")
        checks = ["verifies" if result.verified else "DOES NOT VERIFY"]
        checks.append({True: "XLA parses it", False: "XLA DOES NOT PARSE IT", None: "XLA's parser not tried (no jax)"}
                      [result.xla_parses])
        sys.stdout.write("the result " + ", ".join(checks) + "\n")
    return EXIT_OK

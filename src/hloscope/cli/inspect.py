"""Commands that read a module and show it: summary, print, verify, status."""
from __future__ import annotations

import argparse
import sys

from hloscope.cli.common import (
    EXIT_OK,
    EXIT_VERIFY,
    command,
    console,
    emit_json,
    file_arg,
    format_bytes,
    output_file,
    positive_int,
    read_module,
    working,
)

__all__: list[str] = []


# --- summary ------------------------------------------------------------------------------------
def _configure_summary(p: argparse.ArgumentParser) -> None:
    file_arg(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


@command("summary", "what a module is: computations, opcodes, parameters, outputs, collectives")(_configure_summary)
def _summary(args: argparse.Namespace) -> int:
    from hloscope.analysis.summary import summarize

    s = summarize(read_module(args.file, "summary"))
    if args.json:
        emit_json(s.to_json())
        return EXIT_OK
    from rich.table import Table

    con = console()
    con.print(f"[bold]{s.name}[/bold]: {s.computation_count} computations "
              f"({s.fusion_computation_count} fused), {s.instruction_count} instructions "
              f"({s.entry_instruction_count} in the entry)")
    devices = []
    if s.replica_count is not None:
        devices.append(f"replica_count={s.replica_count}")
    if s.num_partitions is not None:
        devices.append(f"num_partitions={s.num_partitions}")
    if s.is_scheduled:
        devices.append("scheduled")
    if devices:
        con.print(", ".join(devices))
    for title, rows, total in (("Parameters", s.parameters, s.parameter_bytes), ("Outputs", s.outputs, s.output_bytes)):
        t = Table(title=f"{title} ({format_bytes(total)})", title_justify="left")
        t.add_column("name")
        t.add_column("shape")
        t.add_column("bytes", justify="right")
        shown = rows[:40]
        for r in shown:
            t.add_row(r.name, r.shape, f"{r.bytes:,}")
        if len(rows) > len(shown):
            t.add_row(f"... {len(rows) - len(shown)} more", "", "")
        con.print(t)
    t = Table(title="Instructions by opcode", title_justify="left")
    t.add_column("opcode")
    t.add_column("count", justify="right")
    for op, n in s.opcode_counts:
        t.add_row(op, str(n))
    con.print(t)
    if s.collectives:
        con.print("Collectives: " + ", ".join(f"{op} x{n}" for op, n in s.collectives))
    if s.custom_call_targets:
        con.print("Custom calls: " + ", ".join(f"{t} x{n}" for t, n in s.custom_call_targets))
    return EXIT_OK


# --- print --------------------------------------------------------------------------------------
def _configure_print(p: argparse.ArgumentParser) -> None:
    file_arg(p)
    p.add_argument("--canonical", action="store_true",
                   help="XLA's short parsable form: bare names, no metadata, stack frames or operand shapes")
    p.add_argument("--no-metadata", action="store_true", help="leave out metadata={...}")
    p.add_argument("--style", choices=("as-read", "new", "old"), default="as-read",
                   help="as-read (default): the style of the input; new: bare names; old: %%names with typed operands")
    p.add_argument("-o", "--output", metavar="OUT", type=output_file, help="write to OUT (atomically) instead of standard output")


@command("print", "print a module back as HLO text that XLA's parser accepts")(_configure_print)
def _print(args: argparse.Namespace) -> int:
    from hloscope.ir.print_options import PrintOptions
    from hloscope.ir.printer import to_text

    m = read_module(args.file, "print")
    if args.canonical:
        opts = PrintOptions.canonical()
    else:
        base = m.style if isinstance(m.style, PrintOptions) else PrintOptions()
        if args.style == "new":
            base = base.updated(percent=False, operand_shapes=False, signatures=False)
        elif args.style == "old":
            base = base.updated(percent=True, operand_shapes=True, signatures=True)
        opts = base.updated(metadata=not args.no_metadata)
    text = to_text(m, opts)
    if args.output:
        from hloscope.fileio import atomic_write_text, check_not_input

        check_not_input(args.output, [args.file])
        atomic_write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


# --- verify -------------------------------------------------------------------------------------
def _configure_verify(p: argparse.ArgumentParser) -> None:
    file_arg(p)
    p.add_argument("--json", action="store_true", help="print the diagnostics as JSON")
    p.add_argument("--replicas", type=positive_int, help="check collectives against this many replicas (default: the module's)")
    p.add_argument("--partitions", type=positive_int, help="check collectives against this many partitions (default: the module's)")


@command("verify", "check a module is well formed: shapes re-inferred, structure linted")(_configure_verify)
def _verify(args: argparse.Namespace) -> int:
    from hloscope.ir.verifier import verify

    m = read_module(args.file, "verify")
    with working("hloscope verify: inferring every shape"):
        diags = verify(m, replicas=args.replicas, partitions=args.partitions)
    errors = [d for d in diags if d.severity == "error"]
    if args.json:
        emit_json({"module": m.name, "ok": not errors, "diagnostics": [d.to_json() for d in diags]})
    else:
        for d in diags:
            sys.stderr.write(str(d) + "\n")
        if not errors:
            sys.stdout.write(f"{m.name}: ok ({m.instruction_count} instructions, "
                             f"{len(diags)} warnings)\n")
        else:
            sys.stderr.write(f"{m.name}: {len(errors)} errors\n")
    return EXIT_OK if not errors else EXIT_VERIFY


# --- status -------------------------------------------------------------------------------------
def _configure_status(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the matrix as JSON")
    p.add_argument("--all", action="store_true", help="list every opcode, not only those some stage lacks")


@command("status", "which opcodes each stage supports: parse, verify, evaluate, cost (and why not)")(_configure_status)
def _status(args: argparse.Namespace) -> int:
    from hloscope.cli.status import opcode_coverage

    rows = opcode_coverage()
    if args.json:
        emit_json([r.to_json() for r in rows])
        return EXIT_OK
    from rich.table import Table

    stages = ("parse", "verify", "evaluate", "cost")
    shown = rows if args.all else [r for r in rows if any(getattr(r, s).status != "yes" for s in stages)]
    t = Table(title=f"Opcode coverage ({len(rows)} opcodes; "
                    + ", ".join(f"{s} {sum(getattr(r, s).rule for r in rows)}" for s in stages) + ")",
              title_justify="left")
    t.add_column("opcode")
    for s in stages:
        t.add_column(s)
    t.add_column("why not", overflow="fold")
    for r in shown:
        reasons = "; ".join(f"{s}: {getattr(r, s).reason}" for s in stages if getattr(r, s).reason)
        t.add_row(r.opcode.text, *(getattr(r, s).status for s in stages), reasons)
    console().print(t)
    return EXIT_OK

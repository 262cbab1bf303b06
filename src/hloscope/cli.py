"""The ``hloscope`` command line: one subcommand per question, each with a ``--json`` twin.

Exit codes: 0 success; 1 a problem with the input (parse, verify, run errors), printed as
``file:line:col`` with the line and a caret, never a traceback; 2 bad command-line usage;
3 the module failed verification; 70 an internal error (a bug in hloscope); 130 interrupted.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from hloscope.errors import HloscopeError

__all__ = ["main", "COMMANDS"]

EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_VERIFY, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 70, 130

Command = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[Command, Callable[[argparse.ArgumentParser], None], str]] = {}


def command(name: str, help: str) -> Callable[[Callable[[argparse.ArgumentParser], None]], Callable[[Command], Command]]:
    """Register a subcommand: ``@command(name, help)(configure)(run)``."""

    def with_config(configure: Callable[[argparse.ArgumentParser], None]) -> Callable[[Command], Command]:
        def register(run: Command) -> Command:
            COMMANDS[name] = (run, configure, help)
            return run

        return register

    return with_config


def _console():
    from rich.console import Console

    # Piped output has no terminal width; tables of names and op_names read better wide.
    width = None if sys.stdout.isatty() else 140
    return Console(highlight=False, soft_wrap=False, width=width)


def short(text: str | None, limit: int = 48) -> str:
    """One-line, shortened text for a table cell (op_names can span lines)."""
    if not text:
        return ""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def _file_arg(p: argparse.ArgumentParser, optional: bool = False) -> None:
    p.add_argument("file", nargs="?" if optional else None, metavar="FILE",
                   help="HLO text file ('-' reads standard input)")


# --- summary ------------------------------------------------------------------------------------
def _configure_summary(p: argparse.ArgumentParser) -> None:
    _file_arg(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


@command("summary", "what a module is: computations, opcodes, parameters, outputs, collectives")(_configure_summary)
def _summary(args: argparse.Namespace) -> int:
    from hloscope.analysis.summary import summarize
    from hloscope.api import load

    s = summarize(load(args.file))
    if args.json:
        _emit_json(s.to_json())
        return EXIT_OK
    from rich.table import Table

    con = _console()
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
        t = Table(title=f"{title} ({_bytes(total)})", title_justify="left")
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


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


# --- print --------------------------------------------------------------------------------------
def _configure_print(p: argparse.ArgumentParser) -> None:
    _file_arg(p)
    p.add_argument("--canonical", action="store_true",
                   help="XLA's short parsable form: bare names, no metadata, stack frames or operand shapes")
    p.add_argument("--no-metadata", action="store_true", help="leave out metadata={...}")
    p.add_argument("--style", choices=("as-read", "new", "old"), default="as-read",
                   help="as-read (default): the style of the input; new: bare names; old: %%names with typed operands")
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (atomically) instead of standard output")


@command("print", "print a module back as HLO text that XLA's parser accepts")(_configure_print)
def _print(args: argparse.Namespace) -> int:
    from hloscope.api import load
    from hloscope.text.options import PrintOptions
    from hloscope.text.printer import to_text

    m = load(args.file)
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
    _file_arg(p)
    p.add_argument("--json", action="store_true", help="print the diagnostics as JSON")


@command("verify", "check a module is well formed: shapes re-inferred, structure linted")(_configure_verify)
def _verify(args: argparse.Namespace) -> int:
    from hloscope.api import load
    from hloscope.ir.verifier import verify

    m = load(args.file)
    diags = verify(m)
    errors = [d for d in diags if d.severity == "error"]
    if args.json:
        _emit_json({"module": m.name, "ok": not errors, "diagnostics": [d.to_json() for d in diags]})
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
    from hloscope.analysis.coverage import opcode_coverage

    rows = opcode_coverage()
    if args.json:
        _emit_json([r.to_json() for r in rows])
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
    _console().print(t)
    return EXIT_OK


# --- entry point --------------------------------------------------------------------------------
def _load_command_modules() -> None:
    # Stage-specific commands register themselves on import; a missing module is not an error
    # here (the command is simply not offered).
    import importlib

    for mod in ("hloscope.cli_run", "hloscope.cli_analysis", "hloscope.cli_report", "hloscope.cli_jax"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


def build_parser() -> argparse.ArgumentParser:
    _load_command_modules()
    parser = argparse.ArgumentParser(
        prog="hloscope",
        description="Read, run and explain XLA HLO modules.",
        epilog="Exit codes: 0 ok, 1 bad input, 2 usage, 3 verification failed, 70 internal error.",
    )
    parser.add_argument("--version", action="version", version="hloscope 0.1.0")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, configure, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        configure(sp)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    run = COMMANDS[args.command][0]
    try:
        return run(args)
    except HloscopeError as e:
        sys.stderr.write(str(e).rstrip("\n") + "\n")
        return getattr(e, "exit_code", EXIT_INPUT)
    except KeyboardInterrupt:
        sys.stderr.write("hloscope: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # a bug in hloscope: say so plainly, traceback only on request
        if args.debug:
            raise
        sys.stderr.write(f"hloscope: internal error: {type(e).__name__}: {e}\n"
                         "This is a bug in hloscope; rerun with --debug for the traceback and report it.\n")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The ``hloscope`` command line: one subcommand per question, each with a ``--json`` twin.

Exit codes: 0 success; 1 a problem with the input (parse, verify, run errors), printed as
``file:line:col`` with the line and a caret, never a traceback; 2 bad command-line usage;
3 the module failed verification; 4 a numerics finding (``run --find-nonfinite`` found a NaN
or infinity, ``compare`` found two runs that part); 70 an internal error (a bug in hloscope);
130 interrupted.
"""
from __future__ import annotations

import argparse
import gc
import sys

from hloscope.cli.common import (
    COMMANDS,
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    check_paths,
)
from hloscope.errors import HloscopeError
from hloscope.gc_pause import cyclic_gc_paused

__all__ = ["main", "build_parser"]

# --- entry point --------------------------------------------------------------------------------
def _load_command_modules() -> None:
    # Stage-specific commands register themselves on import; a missing module is not an error
    # here (the command is simply not offered).
    import importlib

    for mod in ("hloscope.cli.inspect", "hloscope.cli.run", "hloscope.cli.analysis", "hloscope.cli.report",
                "hloscope.cli.jax", "hloscope.cli.sweep", "hloscope.cli.profile", "hloscope.cli.numerics"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


class _Version(argparse.Action):
    # Reads the package metadata only when asked: importing it costs every command 15 ms.
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from hloscope.version import __version__

        parser.exit(message=f"hloscope {__version__}\n")


def build_parser() -> argparse.ArgumentParser:
    _load_command_modules()
    parser = argparse.ArgumentParser(
        prog="hloscope",
        description="Read, run and explain XLA HLO modules.",
        epilog="Exit codes: 0 ok, 1 bad input, 2 usage, 3 verification failed, 4 a numerics finding "
               "(a non-finite value, a divergence), 70 internal error.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, configure, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        configure(sp)
    return parser


# Commands that execute programs keep the collector: arrays held in reference cycles (an
# exception's frames, for one) must be freed while they run.
#
# Note [No collection at exit]
# ----------------------------
# When Python shuts down it runs the cyclic collector over every object still alive, the
# module and the analyses' results included, for memory the process is about to give back: a
# script that loads Llama 3.1 8B at ten times its size and analyses its memory spent 2.6 s
# after its last line (12.9 s of work, 15.5 s wall), and `hloscope report` of it about 1 s.
# A command run from the process's own command line (``argv`` None: the console script,
# ``python -m hloscope``) therefore freezes what it made (``gc.freeze``) once it is done, so the
# shutdown's collections skip it (that script: 0.2 s after its last line); reference counting
# still frees what it frees, and atexit handlers and stream flushes run as usual. A caller
# that passes ``argv`` (the tests, any program calling ``main``) keeps its collector as it was.
_EXECUTING_COMMANDS = frozenset({"run", "dump", "calibrate", "stats", "compare", "reduce"})


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    run = COMMANDS[args.command][0]
    try:
        check_paths(args)  # Note [Argument types] in cli/common.py
        if args.command in _EXECUTING_COMMANDS:
            return run(args)
        # A command reads a module, answers and exits: the cyclic collector would only walk the
        # module again and again (Note [No cyclic GC during analyses] in gc_pause.py).
        with cyclic_gc_paused():
            code = run(args)
        if argv is None:  # the process's own command line: it exits next
            gc.freeze()  # Note [No collection at exit]
        return code
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

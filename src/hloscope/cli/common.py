"""What every command module shares: the command registry, exit codes, console and JSON output."""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hloscope.ir import Module

__all__ = ["COMMANDS", "EXIT_OK", "EXIT_INPUT", "EXIT_USAGE", "EXIT_VERIFY", "EXIT_FOUND", "EXIT_INTERNAL",
           "EXIT_INTERRUPTED", "command", "console", "emit_json", "file_arg", "format_bytes", "short", "working",
           "read_module", "input_file", "input_file_or_dir", "output_file", "output_dir", "positive_int", "non_negative_int",
           "positive_float", "check_paths", "InputPath", "OutputPath", "OutputDir"]

EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_VERIFY, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 70, 130
# The numerics commands found what they look for: a non-finite value (run --find-nonfinite),
# two runs that part (compare).
EXIT_FOUND = 4

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


@contextmanager
def working(what: str, *, after: float = 1.0, stream: Any = None) -> Iterator[None]:
    """Say on the terminal what a step is doing once it has taken ``after`` seconds, so an
    LLM-sized module is not a silent wait; the line is cleared when the step ends.

    Nothing is written when standard error is not a terminal (logs and pipes stay clean) or the
    step ends first (most steps on most modules).
    """
    stream = sys.stderr if stream is None else stream
    if not getattr(stream, "isatty", lambda: False)():
        yield
        return
    lock = threading.Lock()
    state = {"shown": False, "done": False}

    def show() -> None:
        with lock:
            if not state["done"]:
                stream.write(f"\r\033[K{what}\u2026")
                stream.flush()
                state["shown"] = True

    timer = threading.Timer(after, show)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            if state["shown"]:
                stream.write("\r\033[K")
                stream.flush()


def read_module(path: str, command: str) -> Module:
    """``hloscope.api.load(path)``, saying so on the terminal when it takes a while."""
    from hloscope.api import load

    try:
        size = f" ({os.path.getsize(path) / 2**20:.0f} MiB)" if path != "-" else ""
    except OSError:
        size = ""  # load says what is wrong with the path
    with working(f"hloscope {command}: reading {path}{size}"):
        return load(path)


def console() -> Any:
    """A rich console for tables (wide when piped)."""
    from rich.console import Console

    # Piped output has no terminal width; tables of names and op_names read better wide.
    width = None if sys.stdout.isatty() else 140
    return Console(highlight=False, soft_wrap=False, width=width)


def short(text: str | None, limit: int = 48) -> str:
    """One-line, shortened text for a table cell (op_names can span lines).

    The middle goes, not the end: an op_name's leaf op and a source path's file and line are
    at the end, and the head says which module or scope it is.
    """
    if not text:
        return ""
    one = " ".join(text.split())
    if len(one) <= limit:
        return one
    head = (limit - 1) // 3
    return one[:head] + "…" + one[len(one) - (limit - 1 - head):]


def emit_json(obj: Any) -> None:
    """Print ``obj`` as JSON on standard output: a dict one key per line, a list one item per
    line (at the top and one level down), everything deeper on one line.

    The shape stays readable and greppable while every piece goes through ``json``'s C encoder:
    ``indent`` switches to the pure-Python one, six times slower (0.31 s against 0.05 s on the
    8.7 MB memory report of Llama 3.1 8B).
    """
    sys.stdout.write(format_json(obj) + "\n")


def format_json(obj: Any, depth: int = 0) -> str:
    """``obj`` as JSON text laid out as ``emit_json`` prints it."""
    pad = "  " * (depth + 1)
    if depth < 2 and isinstance(obj, dict) and obj:
        items = (f"{pad}{json.dumps(str(k))}: {format_json(v, depth + 1)}" for k, v in obj.items())
        return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"
    if depth < 2 and isinstance(obj, (list, tuple)) and obj:
        items = (f"{pad}{json.dumps(v, default=str)}" for v in obj)
        return "[\n" + ",\n".join(items) + "\n" + "  " * depth + "]"
    return json.dumps(obj, default=str)


def file_arg(p: argparse.ArgumentParser, optional: bool = False) -> None:
    """Add the FILE positional argument."""
    p.add_argument("file", nargs="?" if optional else None, metavar="FILE", type=input_file,
                   help="HLO text file ('-' reads standard input)")


# Note [Argument types]
# ---------------------
# Every command declares its paths and counts with these types, so one rule holds for all:
# a count out of range is a usage error (exit 2, argparse's message with the option's name),
# found before anything is read; a path that cannot be read or written is bad input (exit 1,
# one line naming the path), found by ``check_paths`` before the command starts its work, so
# an hour's run never ends in a refused write. The files themselves are opened only through
# hloscope.fileio, which turns what the file system says into the same one-line errors.


class InputPath(str):
    """A path the command reads (checked by ``check_paths``; ``-`` is standard input)."""

    __slots__ = ()


class InputFileOrDir(str):
    """A file or a folder the command reads (checked by ``check_paths``)."""

    __slots__ = ()


class OutputPath(str):
    """A file the command writes (checked by ``check_paths``)."""

    __slots__ = ()


class OutputDir(str):
    """A folder the command writes into, made when missing (checked by ``check_paths``)."""

    __slots__ = ()


def input_file(text: str) -> InputPath:
    """argparse type of a file to read."""
    return InputPath(text)


def input_file_or_dir(text: str) -> InputFileOrDir:
    """argparse type of a file or folder to read."""
    return InputFileOrDir(text)


def output_file(text: str) -> OutputPath:
    """argparse type of a file to write."""
    return OutputPath(text)


def output_dir(text: str) -> OutputDir:
    """argparse type of a folder to write into."""
    return OutputDir(text)


def _bounded_int(minimum: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {what}, got {value}")
        return value

    parse.__name__ = f"int >= {minimum}"
    return parse


positive_int = _bounded_int(1, "1 or more")
non_negative_int = _bounded_int(0, "0 or more")


def positive_float(text: str) -> float:
    """argparse type of a positive finite number (seconds, budgets)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def check_paths(args: argparse.Namespace) -> None:
    """Check every path argument of ``args`` (Note [Argument types]); ``InputError`` on the first
    that cannot be read or written. Outputs must also differ from every input."""
    from hloscope.fileio import check_input_path, check_not_input, check_output_path

    values: list[object] = []
    for v in vars(args).values():
        values.extend(v if isinstance(v, list) else [v])
    inputs = [v for v in values if isinstance(v, InputPath)]
    for v in inputs:
        check_input_path(v)
    for v in values:
        if isinstance(v, OutputPath):
            check_output_path(v)
            check_not_input(v, list(inputs))
        elif isinstance(v, InputFileOrDir) and not os.path.exists(v):
            from hloscope.errors import InputError

            raise InputError(f"{v}: no such file or directory")
        elif isinstance(v, OutputDir) and os.path.exists(v) and not os.path.isdir(v):
            from hloscope.errors import InputError

            raise InputError(f"{v}: is a file; give a directory")


# Note [One unit convention]
# ---------------------------
# Bytes are binary (KiB, MiB, GiB, two decimals), counts decimal (k, M, G, T, two decimals),
# seconds three significant digits, everywhere: these three functions for the CLI, and their
# twins in report/assets/page.js for the page (a browser test compares them).


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units (KiB, MiB, GiB), two decimals."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def format_count(x: float) -> str:
    """Large counts as engineers read them: 1.23e+09 -> 1.23 G."""
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.2f} {unit}"
    return f"{x:.0f}"


def format_seconds(s: float) -> str:
    """Seconds to three significant digits in s, ms, µs or ns."""
    for unit, size in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"

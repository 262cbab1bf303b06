"""The ``hloscope dump`` command: run a program with XLA's dumps on and list what it compiled.

    hloscope dump -- python train.py --steps 2
    hloscope dump --json -- python train.py
    hloscope dump --report train_step -o step.html -- python train.py
    hloscope dump --open 16 -- python train.py      # prints the module's file for other commands

The program runs in a subprocess with ``--xla_dump_to=<dir> --xla_dump_hlo_as_text
--xla_dump_large_constants`` appended to its ``XLA_FLAGS``; every module XLA compiled is read back
from its after-optimizations text and measured with hloscope's own analyses (FLOPs, live-range
peak). The program's output passes through (with ``--json`` its standard output goes to standard
error, so ours stays JSON), and a non-zero exit code of the program is reported and returned.

Note [What dump keeps]
    XLA:CPU writes far more than HLO: LLVM IR before and after optimization and an object file
    per kernel, debug options, the MLIR it was given (724 files, 13 MB for one small GPT step).
    ``dump`` keeps the HLO text (before and after optimizations) and the buffer-assignment files
    (``*-buffer-assignment.txt``, its values, live ranges and XLA's memory report), the ``.txt``
    files every hloscope command reads, and deletes the rest unless ``--all-files``. Large
    constants are printed in full (``--xla_dump_large_constants``; ``--elide-constants`` leaves
    XLA's ``{...}``), so a dumped module can be run. The folder is kept whenever a path into it
    is printed (``--dir``, ``--keep``, ``--json``, ``--open``), and removed otherwise.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    command,
    console,
    emit_json,
    output_dir,
    output_file,
)
from hloscope.errors import HloscopeError, InputError

__all__ = ["DumpedModule", "list_dumped_modules", "select_module", "program_command", "prune_dump"]

_AFTER = re.compile(r"^module_(\d+)\.(.+?)\.(?:[a-z]+_)?after_optimizations\.txt$")


@dataclass(frozen=True)
class DumpedModule:
    """One module from an ``--xla_dump_to`` folder, measured by hloscope.

    ``index`` is XLA's module number (``module_0016`` -> 16); ``size_bytes`` the size of the
    after-optimizations text; ``flops`` from ``analyze_cost`` (loops counted once, as XLA does);
    ``peak_bytes`` the live-range peak from ``analyze_memory``. ``error`` says why the figures
    are missing when hloscope could not read or analyse the module.
    """

    index: int
    name: str
    path: str
    size_bytes: int
    flops: float | None
    peak_bytes: int | None
    error: str | None = None
    before_path: str | None = None  # the module before XLA's optimizations, when dumped
    buffer_assignment_path: str | None = None  # XLA's buffer assignment, when dumped

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "path": self.path,
                "before_optimizations_path": self.before_path,
                "buffer_assignment_path": self.buffer_assignment_path,
                "size_bytes": self.size_bytes, "flops": self.flops,
                "peak_bytes": self.peak_bytes, "error": self.error}


def list_dumped_modules(directory: str | os.PathLike[str]) -> list[DumpedModule]:
    """Every after-optimizations module in an XLA dump folder, in XLA's order, analysed."""
    from hloscope.analysis.cost import analyze_cost
    from hloscope.analysis.memory.report import analyze_memory
    from hloscope.api import load

    found = []
    for p in Path(directory).iterdir():
        m = _AFTER.match(p.name)
        if m:
            found.append((int(m.group(1)), m.group(2), p))
    modules = []
    for index, name, p in sorted(found):
        flops = peak = error = None
        try:
            module = load(p)
            flops = analyze_cost(module).total.flops
            peak = analyze_memory(module).peak_bytes
        except HloscopeError as e:
            error = str(e).splitlines()[0]
        except Exception as e:  # one unreadable module must not hide the others
            error = f"internal error: {type(e).__name__}: {e}"
        before = p.with_name(f"module_{index:04d}.{name}.before_optimizations.txt")
        assignment = p.with_name(p.name[: -len(".txt")] + "-buffer-assignment.txt")
        modules.append(DumpedModule(index, name, str(p), p.stat().st_size, flops, peak, error,
                                    str(before) if before.is_file() else None,
                                    str(assignment) if assignment.is_file() else None))
    return modules


def prune_dump(directory: str | os.PathLike[str], spare: frozenset[str] = frozenset()) -> tuple[int, int]:
    """Delete what hloscope does not read from an XLA dump folder (Note [What dump keeps]):
    everything but ``.txt`` files, subfolders included, except the entries named in ``spare``
    (what the folder held before the run: a ``--dir`` may be the user's). Returns (files
    deleted, bytes freed)."""
    files = freed = 0
    for p in sorted(Path(directory).iterdir()):
        if p.name in spare:
            continue
        if p.is_dir() and not p.is_symlink():
            for q in p.rglob("*"):
                if q.is_file():
                    files += 1
                    freed += q.stat().st_size
            shutil.rmtree(p, ignore_errors=True)
        elif not p.name.endswith(".txt"):
            files += 1
            freed += p.stat().st_size
            p.unlink(missing_ok=True)
    return files, freed


def select_module(modules: list[DumpedModule], key: str) -> DumpedModule:
    """The module ``key`` names: XLA's module number, or its name with or without ``jit_``."""
    if key.isdigit():
        chosen = [m for m in modules if m.index == int(key)]
    else:
        chosen = [m for m in modules if m.name == key] or [
            m for m in modules if m.name in (f"jit_{key}", f"pmap_{key}")]
    if len(chosen) == 1:
        return chosen[0]
    listing = ", ".join(f"{m.index} {m.name}" for m in modules) or "none"
    what = "matches several modules" if chosen else "matches no module"
    raise InputError(f"{key!r} {what}; the program compiled: {listing}")


def program_command(argv: list[str]) -> list[str]:
    """``argv`` with a leading ``python``/``python3`` replaced by this interpreter, so the
    program sees the same environment (and jax) as hloscope."""
    if argv and re.fullmatch(r"python(3(\.\d+)?)?", os.path.basename(argv[0])):
        return [sys.executable, *argv[1:]]
    return list(argv)


def _configure_dump(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dir", metavar="DIR", type=output_dir, help="dump into DIR and keep it (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep the temporary dump folder and print its path")
    p.add_argument("--json", action="store_true",
                   help="list the modules as JSON (keeps the folder: the JSON gives paths into it)")
    p.add_argument("--all-files", action="store_true",
                   help="keep everything XLA wrote (LLVM IR, object files, debug options), not only "
                        "the HLO text and buffer assignments")
    p.add_argument("--elide-constants", action="store_true",
                   help="leave XLA's large constants elided ({...}) as it prints them by default; "
                        "smaller files, but the modules cannot be run")
    p.add_argument("--report", metavar="N|NAME", help="write the HTML report of this module (needs -o)")
    p.add_argument("-o", "--output", metavar="OUT", type=output_file, help="where --report writes")
    p.add_argument("--open", metavar="N|NAME",
                   help="print the path of this module's after-optimizations file (keeps the folder)")
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARGS]",
                   help="the command to run, after '--', e.g. -- python train.py")


@command("dump", "run a jax program with XLA dumps on and list the modules it compiled")(_configure_dump)
def _dump(args: argparse.Namespace) -> int:
    argv = list(args.program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        sys.stderr.write("hloscope dump: give the program to run after '--', "
                         "e.g. hloscope dump -- python train.py\n")
        return EXIT_USAGE
    if args.report and not args.output:
        sys.stderr.write("hloscope dump: --report needs -o OUT.html\n")
        return EXIT_USAGE
    keep = bool(args.dir or args.keep or args.open or args.json)
    if args.dir:
        from hloscope.fileio import make_output_dir

        directory = make_output_dir(args.dir)
    else:
        directory = Path(tempfile.mkdtemp(prefix="hloscope-dump-"))
    try:
        return _run_and_list(args, argv, directory, keep)
    finally:
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)


def _run_and_list(args: argparse.Namespace, argv: list[str], directory: Path, keep: bool) -> int:
    spare = frozenset(p.name for p in directory.iterdir())  # a --dir may hold the user's files
    env = dict(os.environ)
    flags = f"--xla_dump_to={directory} --xla_dump_hlo_as_text"
    if not args.elide_constants:
        flags += " --xla_dump_large_constants"
    env["XLA_FLAGS"] = f"{env['XLA_FLAGS']} {flags}" if env.get("XLA_FLAGS") else flags
    cmd = program_command(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        # With --json the program's stdout goes to our stderr so that stdout stays one JSON value.
        proc = subprocess.run(cmd, env=env, stdout=sys.stderr.fileno() if args.json else None)
    except FileNotFoundError:
        raise InputError(f"cannot run {shlex.join(argv)}: {argv[0]} not found") from None
    except PermissionError:
        raise InputError(f"cannot run {shlex.join(argv)}: {argv[0]} is not executable") from None
    if not args.all_files:
        prune_dump(directory, spare)
    modules = list_dumped_modules(directory)
    if proc.returncode != 0:
        sys.stderr.write(f"hloscope dump: {shlex.join(argv)} exited with code {proc.returncode}\n")
    if not modules:
        sys.stderr.write("hloscope dump: the program compiled no XLA module (does it use jax?)\n")
    if args.report:
        from hloscope.api import load
        from hloscope.report import write_report

        chosen = select_module(modules, args.report)
        write_report(load(chosen.path), args.output, title=f"{chosen.name} (module {chosen.index})")
        sys.stderr.write(f"wrote {args.output} for module {chosen.index} {chosen.name}\n")
    if args.open:
        sys.stdout.write(select_module(modules, args.open).path + "\n")
    elif args.json:
        emit_json({"dir": str(directory) if keep else None, "exit_code": proc.returncode,
                    "modules": [m.to_json() for m in modules]})
    else:
        _print_table(modules)
        if keep:
            sys.stdout.write(f"dump folder: {directory}\n")
    return proc.returncode if proc.returncode != 0 else EXIT_OK


def _print_table(modules: list[DumpedModule]) -> None:
    from rich.table import Table

    from hloscope.cli.common import format_bytes

    t = Table(title=f"{len(modules)} compiled modules", title_justify="left")
    t.add_column("#", justify="right")
    t.add_column("module", justify="left")
    for col in ("size", "FLOPs", "live-range peak"):
        t.add_column(col, justify="right")
    for m in modules:
        if m.error:
            t.add_row(str(m.index), m.name, format_bytes(m.size_bytes), "-", f"[red]{m.error}[/red]")
            continue
        t.add_row(str(m.index), m.name, format_bytes(m.size_bytes), f"{m.flops:,.0f}",
                  format_bytes(m.peak_bytes or 0))
    console().print(t)

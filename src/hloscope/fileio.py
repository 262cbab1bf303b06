"""Reading inputs and writing outputs: the one place that opens the user's files.

Every failure a path can cause (missing, a directory, not readable, not writable, a missing
folder) becomes one ``InputError`` line naming the path, never an ``OSError`` traceback.
Outputs are written atomically (a temp file beside the target, then a rename) and never over
the user's inputs.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from hloscope.errors import InputError

__all__ = ["atomic_write_text", "atomic_write_bytes", "atomic_write_with", "check_not_input",
           "check_input_path", "check_output_path", "make_output_dir", "open_input", "read_input_bytes",
           "read_input_text", "path_error"]


def path_error(path: str | os.PathLike[str], error: OSError, *, writing: bool = False) -> InputError:
    """The one-line ``InputError`` for ``error`` raised while reading (or ``writing``) ``path``."""
    p = os.fspath(path)
    if isinstance(error, FileNotFoundError):
        if writing:
            parent = os.path.dirname(os.path.abspath(p))
            if os.path.isdir(parent):  # /proc, /sys: the folder is there, files cannot be made in it
                return InputError(f"{p}: cannot write: no file can be created in {parent}")
            return InputError(f"{p}: cannot write: the directory {parent} does not exist")
        return InputError(f"{p}: no such file")
    if isinstance(error, IsADirectoryError):
        return InputError(f"{p}: is a directory; give a file path")
    if isinstance(error, NotADirectoryError):
        return InputError(f"{p}: a part of this path is a file, not a directory")
    if isinstance(error, PermissionError):
        return InputError(f"{p}: permission denied ({'cannot write' if writing else 'cannot read'})")
    reason = error.strerror or type(error).__name__
    return InputError(f"{p}: cannot {'write' if writing else 'read'}: {reason}")


def check_input_path(path: str | os.PathLike[str]) -> None:
    """Raise ``InputError`` unless ``path`` is a readable file (``-``, standard input, passes)."""
    p = os.fspath(path)
    if p == "-":
        return
    if os.path.isdir(p):
        raise InputError(f"{p}: is a directory; give a file path")
    if not os.path.exists(p):
        raise InputError(f"{p}: no such file")
    if not os.access(p, os.R_OK):
        raise InputError(f"{p}: permission denied (cannot read)")


def check_output_path(path: str | os.PathLike[str]) -> None:
    """Raise ``InputError`` unless a file can be written at ``path``: not a directory, its
    folder exists and is writable, and an existing file there may be replaced.

    Commands call this before their work, so a long run does not end in a refused write.
    """
    p = os.fspath(path)
    if not p:
        raise InputError("an empty output path; give a file path")
    if os.path.isdir(p) or p.endswith(os.sep):
        raise InputError(f"{p}: is a directory; give a file path")
    parent = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(parent):
        if os.path.exists(parent):
            raise InputError(f"{p}: cannot write: {parent} is a file, not a directory")
        raise InputError(f"{p}: cannot write: the directory {parent} does not exist")
    # The rename needs a new file in the folder, not write permission on an existing file; try
    # one (os.access says yes to root, and nothing of read-only mounts or /proc).
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{os.path.basename(p)}.", suffix=".tmp", dir=parent)
    except OSError as e:
        raise path_error(p, e, writing=True) from None
    os.close(fd)
    os.unlink(probe)


def make_output_dir(path: str | os.PathLike[str]) -> Path:
    """The folder ``path``, made (with its parents) when missing; ``InputError`` when it cannot be."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"{p}: is a file; give a directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        if isinstance(e, FileNotFoundError):  # /proc/x: the parent refuses new entries
            raise InputError(f"{p}: cannot create this directory") from None
        raise path_error(p, e, writing=True) from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise InputError(f"{p}: permission denied (cannot write in it)")
    return p


def atomic_write_with(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write(f)`` on a temp file beside ``path``, then rename it to ``path``, so readers
    see the old file or the whole new one (large outputs stream; nothing is held in memory)."""
    p = Path(path)
    check_output_path(p)
    directory = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise path_error(p, e, writing=True) from None
    try:
        # mkstemp creates 0600; give the file the mode an ordinary open() would (reports get shared).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):  # a full disk, a read-only file system, a folder in the way
            raise path_error(p, e, writing=True) from None
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    atomic_write_with(path, lambda f: f.write(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """``atomic_write_bytes`` of ``text`` in UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"))


@contextmanager
def open_input(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """``path`` opened for reading in binary; a path that cannot be read is an ``InputError``."""
    try:
        f = open(os.fspath(path), "rb")  # noqa: SIM115 (closed below)
    except OSError as e:
        raise path_error(path, e) from None
    with f:
        yield f


def read_input_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the file at ``path``; ``InputError`` naming the path when it cannot be read."""
    with open_input(path) as f:
        try:
            return f.read()
        except OSError as e:  # reading a directory on some systems, an I/O error
            raise path_error(path, e) from None


def read_input_text(path: str | os.PathLike[str], what: str = "text") -> str:
    """The UTF-8 text of the file at ``path``; ``InputError`` when it cannot be read or is binary
    (``what`` says what was expected, for the message)."""
    data = read_input_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{os.fspath(path)}: not UTF-8 text (byte {e.start}); expected {what}") from None


def check_not_input(out: str | os.PathLike[str], inputs: list[str | os.PathLike[str]]) -> None:
    """Refuse to write ``out`` when it is one of the ``inputs`` (same file on disk)."""
    o = Path(out)
    for i in inputs:
        if str(i) == "-":
            continue
        p = Path(i)
        try:
            same = o.exists() and p.exists() and os.path.samefile(o, p)
        except OSError:
            same = False
        if same or o.resolve() == p.resolve():
            raise InputError(f"refusing to overwrite the input file {p}; choose another output path")

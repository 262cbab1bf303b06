"""Writing outputs safely: atomically (temp file + rename) and never over the user's inputs."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hloscope.errors import InputError

__all__ = ["atomic_write_text", "atomic_write_bytes", "check_not_input"]


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


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    p = Path(path)
    directory = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=directory)
    except FileNotFoundError:
        raise InputError(f"{p}: the directory {directory} does not exist") from None
    except OSError as e:
        raise InputError(f"{p}: cannot write: {e.strerror}") from None
    try:
        # mkstemp creates 0600; give the file the mode an ordinary open() would (reports get shared).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))

"""The top-level functions re-exported by ``hloscope``: load and parse."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from hloscope.errors import InputError
from hloscope.ir.module import Module
from hloscope.text.parser import parse_module

__all__ = ["load", "parse"]


def parse(text: str, name: str = "<string>") -> Module:
    """Parse HLO module text into a Module. Errors name ``name:line:col`` with a caret."""
    return parse_module(text, name)


def load(path: str | os.PathLike[str]) -> Module:
    """Read an HLO text file (``-`` for standard input) into a Module."""
    if str(path) == "-":
        return parse_module(sys.stdin.read(), "<stdin>")
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory; give an HLO text file") from None
    except OSError as e:
        raise InputError(f"{p}: cannot read: {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{p}: not UTF-8 text (byte {e.start}); is this a binary proto dump?") from None
    return parse_module(text, str(p))

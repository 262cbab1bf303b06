"""XLA's NameUniquer: the names XLA gives instructions and computations when it reads a module."""
from __future__ import annotations

import re

__all__ = ["NameUniquer"]

_NUMERIC_SUFFIX = re.compile(r"[+-]?[0-9]+")


class NameUniquer:
    """XLA's ``NameUniquer`` (separator '.'): hands out names unique among those it was given.

    A name is split into a root and an optional numeric suffix (``p0.3`` -> ``p0``, 3). The
    first use of a suffix keeps it; a repeat gets the smallest suffix of that root not yet
    taken (``p0``, ``p0`` -> ``p0``, ``p0.1``). XLA's module renames every instruction (and
    every computation) this way, in the order it reads them.
    """

    __slots__ = ("_used", "_next")

    def __init__(self) -> None:
        self._used: dict[str, set[int]] = {}
        self._next: dict[str, int] = {}

    def unique(self, name: str) -> str:
        """The name XLA gives ``name``; registers it."""
        root, suffix, numbered = name, 0, False
        dot = name.rfind(".")
        if 0 < dot < len(name) - 1 and _NUMERIC_SUFFIX.fullmatch(name, dot + 1):
            root, suffix, numbered = name[:dot], int(name[dot + 1 :]), True
        used = self._used.setdefault(root, set())
        if suffix in used:
            n = self._next.get(root, 0)
            while n in used:
                n += 1
            suffix = n
            self._next[root] = n + 1
        used.add(suffix)
        if suffix == 0:
            return root + ".0" if numbered else root
        return f"{root}.{suffix}"

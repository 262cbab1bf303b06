"""Constant literals: kept as the text XLA wrote, decoded to numpy on demand.

Note [Elided literals]: XLA prints large constants as ``{...}`` unless asked not to. Such a
literal is marked ``elided``; it round-trips as written, and any stage that needs its values
must refuse (or fill it on the user's explicit request) rather than invent data.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from hloscope.ir.shape import ArrayShape, Shape, TupleShape

__all__ = ["Literal", "LiteralError", "format_array"]


class LiteralError(ValueError):
    """The literal text does not hold values of its shape."""


_NUM_RE = re.compile(
    r"-?nan(?:\(0x[0-9a-fA-F]+\))?|-?inf|true|false|[-+]?0x[0-9a-fA-F]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
)


@dataclass(frozen=True, slots=True)
class Literal:
    """A constant's value as written, e.g. ``{ {1, 2}, {3, 4} }``, ``1.5`` or ``{...}``."""

    text: str

    @property
    def elided(self) -> bool:
        return "..." in self.text

    def to_numpy(self, shape: Shape) -> np.ndarray | tuple:
        """The value as a numpy array (a tuple of them for tuple shapes)."""
        if self.elided:
            raise LiteralError("the constant's value was elided ({...}) in the dump")
        return _decode(self.text, shape)

    def __str__(self) -> str:
        return self.text


def _split_tuple(text: str) -> list[str]:
    body = text.strip()
    if not (body.startswith("(") and body.endswith(")")):
        raise LiteralError(f"expected a tuple literal, got {body[:40]!r}")
    body = body[1:-1]
    parts, depth, start = [], 0, 0
    for i, c in enumerate(body):
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    if body.strip():
        parts.append(body[start:])
    return parts


def _decode(text: str, shape: Shape) -> np.ndarray | tuple:
    if isinstance(shape, TupleShape):
        parts = _split_tuple(text)
        if len(parts) != len(shape.elements):
            raise LiteralError(f"tuple literal has {len(parts)} elements, shape has {len(shape.elements)}")
        return tuple(_decode(p, s) for p, s in zip(parts, shape.elements, strict=True))
    return _decode_array(text, shape)


def _decode_array(text: str, shape: ArrayShape) -> np.ndarray:
    pt = shape.primitive_type
    if pt.kind in ("token", "opaque"):
        return np.zeros((), np.uint8)
    dims = tuple(max(d, 0) for d in shape.dimensions)
    # A shape-prefixed literal ("f32[2] {1, 2}") appears inside tuple literals.
    body = re.sub(r"^\s*[a-z0-9]+\[[^\]]*\](\{[^}]*\})?", "", text)
    # Drop /*index=...*/ comments and {sparse} markers XLA may add.
    body = re.sub(r"/\*.*?\*/", "", body)
    tokens = _NUM_RE.findall(body)
    n = int(np.prod(dims)) if dims else 1
    if pt.kind == "complex":
        if len(tokens) != 2 * n:
            raise LiteralError(f"expected {n} complex values for {shape}, found {len(tokens) // 2}")
        re_im = np.array([_to_float(t) for t in tokens], dtype=np.float64).reshape(-1, 2)
        return (re_im[:, 0] + 1j * re_im[:, 1]).astype(pt.dtype).reshape(dims)
    if len(tokens) != n:
        raise LiteralError(f"expected {n} values for {shape}, found {len(tokens)}")
    if pt.kind == "pred":
        return np.array([t in ("true", "1") for t in tokens], dtype=np.bool_).reshape(dims)
    if pt.is_integer:
        vals = [int(t, 16) if "x" in t else int(float(t)) if "." in t or "e" in t else int(t) for t in tokens]
        return np.array(vals, dtype=object).astype(np.int64 if pt.kind == "signed" or pt.bits < 64 else np.uint64).astype(pt.dtype).reshape(dims)
    vals = np.array([_to_float(t) for t in tokens], dtype=np.float64)
    return vals.astype(pt.dtype).reshape(dims)


def _to_float(tok: str) -> float:
    t = tok.lower()
    if "nan" in t:
        return -np.nan if t.startswith("-") else np.nan
    if t == "true":
        return 1.0
    if t == "false":
        return 0.0
    return float(t)


def format_array(value: np.ndarray, type_name: str) -> str:
    """Format an array as an HLO literal body, in XLA's style (``{ {1, 2}, {3, 4} }``)."""
    def scalar(x: object) -> str:
        if type_name == "pred":
            return "true" if bool(x) else "false"
        if type_name in ("c64", "c128"):
            c = complex(x)  # type: ignore[arg-type]
            return f"({_fmt_float(c.real)}, {_fmt_float(c.imag)})"
        if np.issubdtype(np.asarray(x).dtype, np.integer):
            return str(int(x))  # type: ignore[call-overload]
        return _fmt_float(float(x))  # type: ignore[arg-type]

    arr = np.asarray(value)
    if arr.ndim == 0:
        return scalar(arr[()])

    def rec(a: np.ndarray, depth: int) -> str:
        if a.ndim == 1:
            return "{" + ", ".join(scalar(x) for x in a) + "}"
        return "{ " + ", ".join(rec(x, depth + 1) for x in a) + " }"

    return rec(arr, 0)


def _fmt_float(x: float) -> str:
    if np.isnan(x):
        return "nan" if not np.signbit(x) else "-nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") else r

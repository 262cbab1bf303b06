"""Constant literals: kept as the text XLA wrote, decoded to numpy on demand.

Note [Elided literals]: XLA prints large constants as ``{...}`` unless asked not to. Such a
literal is marked ``elided``; it round-trips as written, and any stage that needs its values
must refuse (or fill it on the user's explicit request) rather than invent data.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from hloscope.ir.shape import ArrayShape, Shape, TupleShape

__all__ = ["Literal", "LiteralError", "float_from_f64", "round_to_odd_f32"]


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
        part = np.dtype(np.float32 if pt.name == "c64" else np.float64)
        real = _floats(tokens[0::2], part)
        imag = _floats(tokens[1::2], part)
        # XLA's parser gives the imaginary part the real part's NaN (sign and payload) when
        # the real part is NaN, whatever the imaginary part says ((nan, 1) reads as nan+nanj).
        imag = np.where(np.isnan(real), real, imag)
        # Assembled part by part: re + 1j * im would turn (x, -inf) into nan - inf*j.
        out = np.empty(n, pt.dtype)
        out.real, out.imag = real, imag
        return out.reshape(dims)
    if len(tokens) == 1 and n > 1 and "{" not in body:
        # XLA's parser takes a bare scalar for an array shape (s8[10] constant(1)) and sets the
        # first element only: the rest are zero, as XLA:CPU gives (checked in tests/ir).
        first = _decode_array(body, ArrayShape(shape.element_type))
        out = np.zeros(dims, first.dtype)
        out.reshape(-1)[0] = first
        return out
    if len(tokens) != n:
        raise LiteralError(f"expected {n} values for {shape}, found {len(tokens)}")
    if pt.kind == "pred":
        return np.array([t in ("true", "1") for t in tokens], dtype=np.bool_).reshape(dims)
    if pt.is_integer:
        vals = [int(t, 16) if "x" in t else int(float(t)) if "." in t or "e" in t else int(t) for t in tokens]
        if pt.kind == "unsigned" and pt.bits == 64:  # XLA reads u64 constant(-1) as 2^64 - 1
            vals = [v % (1 << 64) for v in vals]
        return np.array(vals, dtype=object).astype(np.int64 if pt.kind == "signed" or pt.bits < 64 else np.uint64).astype(pt.dtype).reshape(dims)
    return _floats(tokens, np.dtype(pt.dtype)).reshape(dims)


def _floats(tokens: list[str], dtype: np.dtype) -> np.ndarray:
    """Float tokens as XLA's parser reads them into ``dtype`` (Note [Reading float literals])."""
    values = np.array([_to_float(t) for t in tokens], dtype=np.float64)
    out = float_from_f64(values, dtype)
    payloads = [(i, m) for i, t in enumerate(tokens) if (m := _NAN_RE.fullmatch(t.lower())) and m.group(2)]
    bits = _NAN_PAYLOAD_OF_DTYPE.get(np.dtype(dtype))
    if payloads and bits is not None:
        width = np.dtype(dtype).itemsize * 8
        uint = np.dtype(f"u{np.dtype(dtype).itemsize}")
        exponent = ((1 << (width - 1)) - 1) & ~((1 << bits[0]) - 1)
        u = out.view(uint)
        for i, m in payloads:
            payload = int(m.group(2), 16) & ((1 << bits[0]) - 1)
            sign = (1 << (width - 1)) if m.group(1) == "-" else 0
            u[i] = sign | exponent | (payload or bits[1])
    return out


# Note [Reading float literals]
#     XLA's parser reads each float token as a double and casts it to the element type with
#     C++'s static_cast. An integer token goes through int64 first, so "-0" is +0.0 (only
#     "-0.0" is negative zero). The cast from double rounds directly to f32 and f64, through
#     f32 to f16 and bf16 (Eigen's conversions take a float), and directly to the fp8/fp4 types
#     (ml_dtypes has double constructors). A "nan(0x..)" token keeps its payload and sign.


def float_from_f64(values: np.ndarray, dtype: np.dtype | type) -> np.ndarray:
    """``values`` (f64) in the float type ``dtype`` as XLA rounds a double into it: f32 and
    f64 directly, f16 and bf16 through f32 (rounding twice), the fp8/fp4 types directly.

    XLA's parser reads literals this way, and XLA:CPU converts f64 arrays the same way."""
    dt = np.dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if dt in (np.dtype(np.float64), np.dtype(np.float32)):
            return values.astype(dt)
        if dt.itemsize == 2:  # f16, bf16
            return values.astype(np.float32).astype(dt)
        return round_to_odd_f32(values).astype(dt)


def round_to_odd_f32(x: np.ndarray) -> np.ndarray:
    """f64 -> f32 rounding toward zero, with the last bit set when inexact ("round to odd").

    Rounding that result to a type with at most 22 significand bits gives the correctly rounded
    f64 value (the odd bit breaks every false tie), so it stands in for a direct f64 -> fp8
    conversion, which ml_dtypes lacks (it goes through f32 and rounds twice)."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = x.astype(np.float32)
        wide = r.astype(np.float64)
        over = np.isfinite(x) & (np.abs(wide) > np.abs(x))  # rounded away from zero: step back
        r = np.where(over, np.nextafter(r, np.float32(0)), r)
        inexact = np.isfinite(x) & (r.astype(np.float64) != x)
    bits = np.ascontiguousarray(r).view(np.uint32) | inexact.astype(np.uint32)
    return bits.view(np.float32).reshape(np.shape(x))


def _to_float(tok: str) -> float:
    t = tok.lower()
    if "nan" in t:
        return -np.nan if t.startswith("-") else np.nan
    if t == "true":
        return 1.0
    if t == "false":
        return 0.0
    if _INT_RE.fullmatch(t):  # Note [Reading float literals]: "-0" is +0.0
        return float(int(t))
    if t.lstrip("+-").startswith("0x"):
        return float(int(t, 16))
    return float(t)


# --- XLA's printing of literal values -----------------------------------------------------------
# Note [Canonical literals]: XLA's parser reads a literal's values into the element type and its
# printer writes them back its own way (LiteralBase::PrintWithoutShapeOneline): floats with
# RoundTripFpToString (the fewest of digits10 / max_digits10 significant digits that read back
# the same value, "%g" style, NaN payloads as "nan(0x..)"), pred arrays as 1/0 but scalars as
# true/false, complex as "(re, im)", and braces spaced by nesting depth. Canonical printing
# (PrintOptions.canonical) re-prints constants this way so it equals XLA's text.

# Types whose NaNs carry a payload XLA prints (those with signalling NaNs): payload bits and the
# payload of the default quiet NaN, which is not printed.
_NAN_PAYLOAD: dict[str, tuple[int, int]] = {
    "f64": (52, 1 << 51), "f32": (23, 1 << 22), "f16": (10, 1 << 9), "bf16": (7, 1 << 6),
    "f8e5m2": (2, 1 << 1), "f8e4m3": (3, 1 << 2), "f8e3m4": (4, 1 << 3),
}
_INT_RE = re.compile(r"[-+]?[0-9]+")
_NAN_PAYLOAD_OF_DTYPE: dict[np.dtype, tuple[int, int]] = {
    np.dtype(np.float64): _NAN_PAYLOAD["f64"], np.dtype(np.float32): _NAN_PAYLOAD["f32"],
    np.dtype(np.float16): _NAN_PAYLOAD["f16"], np.dtype(ml_dtypes.bfloat16): _NAN_PAYLOAD["bf16"],
    np.dtype(ml_dtypes.float8_e5m2): _NAN_PAYLOAD["f8e5m2"],
    np.dtype(ml_dtypes.float8_e4m3): _NAN_PAYLOAD["f8e4m3"],
    np.dtype(ml_dtypes.float8_e3m4): _NAN_PAYLOAD["f8e3m4"],
}
_NAN_RE = re.compile(r"([-+]?)nan(?:\(0x([0-9a-fA-F]+)\))?")


def _max_digits10(type_name: str) -> int:
    """``std::numeric_limits<T>::max_digits10``: 1 + ceil(digits * log10(2))."""
    import ml_dtypes

    from hloscope.ir.dtypes import PRIMITIVE_TYPES

    digits = ml_dtypes.finfo(PRIMITIVE_TYPES[type_name].dtype).nmant + 1
    return 1 + -(-digits * 30103 // 100000)


def _format_float(tok: str, type_name: str) -> str:
    """One float value as XLA prints it after reading ``tok`` into ``type_name``."""
    low = tok.lower()
    nan = _NAN_RE.fullmatch(low)
    if nan is not None:
        sign = "-" if nan.group(1) == "-" else ""
        bits = _NAN_PAYLOAD.get(type_name)
        if bits is None or nan.group(2) is None:
            return sign + "nan"
        payload = int(nan.group(2), 16) & ((1 << bits[0]) - 1)
        return sign + "nan" + (f"(0x{payload:x})" if payload not in (0, bits[1]) else "")
    # XLA's lexer reads "-0" as the integer 0, so the sign of an integral zero is lost.
    value = float(int(low)) if _INT_RE.fullmatch(low) else float(low)
    if type_name == "f64":
        text = f"{value:.15g}"  # "%g" as C's printf writes it
        return text if float(text) == value else f"{value:.17g}"
    # XLA converts the double it read to float first (Eigen's and ml_dtypes' conversions do).
    with np.errstate(over="ignore"):
        f = np.float32(value)
    if type_name == "f32":
        text = f"{float(f):.6g}"
        x = f
        if np.float32(float(text)) != f:
            text = f"{float(f):.9g}"
    else:
        from hloscope.ir.dtypes import PRIMITIVE_TYPES

        with np.errstate(over="ignore", invalid="ignore"):
            x = np.asarray(f).astype(PRIMITIVE_TYPES[type_name].dtype)
        text = f"{float(x):.{_max_digits10(type_name)}g}"
    if np.isnan(x):  # e.g. an overflow in a type without infinities
        return ("-" if np.signbit(x) else "") + "nan"
    return text


def _format_scalar(tok: str, type_name: str, kind: str, in_array: bool) -> str:
    if kind == "pred":
        on = tok in ("true", "1")
        if in_array:
            return "1" if on else "0"
        return "true" if on else "false"
    if kind in ("signed", "unsigned"):
        return str(int(tok, 0) if tok[:2].lower() in ("0x", "-0") and "x" in tok.lower() else int(tok))
    return _format_float(tok, type_name)


def _nest(elements: list[str], dims: tuple[int, ...]) -> str:
    """XLA's one-line nesting of a dense array (DenseArrayPrintHelper with oneline=true)."""
    rank = len(dims)
    if rank == 0:
        return elements[0]
    if rank == 1:
        return "{" + ", ".join(elements) + "}"
    out: list[str] = []
    pos = 0

    def rec(depth: int, index: list[int]) -> None:
        nonlocal pos
        size = dims[depth]
        innermost = depth == rank - 1
        if innermost:
            out.append("{" + (" " if size > 1 else ""))
            out.append(", ".join(elements[pos : pos + size]))
            pos += size
            out.append((" " if size > 1 else "") + "}")
            return
        if rank > 3 and 0 < len(index) < rank:
            out.append(f"{{ /*i{len(index) - 1}={index[-1]}*/" + (" " if size > 0 else ""))
        else:
            out.append("{ ")
        for i in range(size):
            index.append(i)
            rec(depth + 1, index)
            index.pop()
            if i < size - 1:
                out.append(", ")
        out.append(" }")

    rec(0, [])
    return "".join(out)


def canonical_literal_text(literal: Literal, shape: Shape) -> str:
    """The literal as XLA prints it (Note [Canonical literals]); its own text when elided or
    when its values do not fit the shape (then XLA would have rejected it anyway)."""
    if literal.elided:
        return literal.text
    try:
        return _canonical(literal.text, shape)
    except (LiteralError, ValueError, KeyError, OverflowError):
        return literal.text


def _canonical(text: str, shape: Shape) -> str:
    if isinstance(shape, TupleShape):
        parts = _split_tuple(text)
        if len(parts) != len(shape.elements):
            raise LiteralError("tuple arity")
        return "( " + ", ".join(_canonical(p, s) for p, s in zip(parts, shape.elements, strict=True)) + " )"
    pt = shape.primitive_type
    if not pt.is_array_type:
        return text
    body = re.sub(r"/\*.*?\*/", "", re.sub(r"^\s*[a-z0-9]+\[[^\]]*\](\{[^}]*\})?", "", text))
    tokens = _NUM_RE.findall(body)
    dims = tuple(max(d, 0) for d in shape.dimensions)
    n = int(np.prod(dims)) if dims else 1
    filled = dims and n > 1 and "{" not in body and len(tokens) == (2 if pt.kind == "complex" else 1)
    if filled:
        # XLA reads one unbraced value for an array as its first element; the rest stay zero.
        tokens = tokens + ["0"] * len(tokens)
        n_formatted = 2
    else:
        n_formatted = n
    if pt.kind == "complex":
        if len(tokens) != 2 * n_formatted:
            raise LiteralError("complex count")
        part = "f32" if pt.name == "c64" else "f64"
        elements = [f"({_format_float(tokens[2 * i], part)}, {_format_float(tokens[2 * i + 1], part)})"
                    for i in range(n_formatted)]
    else:
        if len(tokens) != n_formatted:
            raise LiteralError("count")
        name, kind, in_array = pt.name, pt.kind, bool(dims)
        elements = [_format_scalar(t, name, kind, in_array) for t in tokens]
    if filled:
        elements = [elements[0]] + [elements[1]] * (n - 1)  # formatted once, not n times
    return _nest(elements, dims)

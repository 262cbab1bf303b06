"""The fuzzer's element types (with the type rules of XLA's ShapeInference), the generated
module (``Case``: computations of ``Inst`` lines, entry inputs, the deliberate mistake if any)
and the values it holds (seeded inputs leaning on edge values, constant literals).
"""
from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

import ml_dtypes
import numpy as np

from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.ir.opcode import Family, Opcode
from hloscope.ir.shape import ArrayShape, Shape

# --------------------------------------------------------------------------------------------
# Element types and the type rules of XLA's ShapeInference

FLOATS = ("f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2")
COMPLEX = ("c64", "c128")
SIGNED = ("s8", "s16", "s32", "s64")
UNSIGNED = ("u8", "u16", "u32", "u64")
INTS = SIGNED + UNSIGNED
ALL_TYPES = ("pred",) + INTS + FLOATS + COMPLEX
INDEX_TYPES = ("s32", "s64", "u32", "s8", "u8", "s16", "u64")

F_TYPES = frozenset(FLOATS)
_FC = frozenset(FLOATS + COMPLEX)
_I = frozenset(INTS)
_PI = frozenset(("pred",) + INTS)
_SIGNED_ANY = frozenset(SIGNED + FLOATS)  # XLA's ElementIsSigned: signed ints and floats
NUMERIC_TYPES = frozenset(INTS + FLOATS + COMPLEX)
ANY_TYPES = frozenset(ALL_TYPES)

# Element types each elementwise op accepts (XLA's InferUnaryOpShape / InferBinaryOpShape), the
# set the generator draws from for a valid module.
UNARY_TYPES: dict[str, frozenset[str]] = {
    "floor": F_TYPES, "ceil": F_TYPES, "cbrt": F_TYPES, "erf": F_TYPES, "round-nearest-afz": F_TYPES,
    "round-nearest-even": F_TYPES, "is-finite": F_TYPES,
    **{op: _FC for op in ("acos", "acosh", "asin", "asinh", "atanh", "cosh", "cosine", "sinh",
                          "sine", "exponential", "exponential-minus-one", "log", "log-plus-one",
                          "logistic", "rsqrt", "sqrt", "tan", "tanh")},
    "real": _FC, "imag": _FC, "abs": _SIGNED_ANY | frozenset(COMPLEX),
    "count-leading-zeros": _I, "popcnt": _I, "negate": NUMERIC_TYPES,
    "sign": _SIGNED_ANY | frozenset(COMPLEX), "not": _PI,
}
BINARY_TYPES: dict[str, frozenset[str]] = {
    "add": ANY_TYPES, "multiply": ANY_TYPES, "maximum": ANY_TYPES, "minimum": ANY_TYPES, "subtract": NUMERIC_TYPES, "divide": NUMERIC_TYPES, "remainder": _I | F_TYPES,
    "power": NUMERIC_TYPES, "atan2": _FC, "and": _PI, "or": _PI, "xor": _PI, "shift-left": _I,
    "shift-right-arithmetic": _I, "shift-right-logical": _I, "complex": frozenset(("f32", "f64")),
}
COMPLEX_OF = {"f32": "c64", "f64": "c128"}
_REAL_OF = {"c64": "f32", "c128": "f64"}
# Valid, but XLA:CPU has no kernel for them ("UNIMPLEMENTED"): most modules leave them out so
# that they can run (check e).
XLA_CPU_UNIMPLEMENTED = frozenset({"acos", "acosh", "asin", "asinh", "atanh", "cosh", "sinh"})


def unary_result(op: str, t: str) -> str:
    """The element type of unary ``op`` on ``t`` (pred for is-finite, real for abs/real/imag of complex)."""
    if op == "is-finite":
        return "pred"
    if op in ("abs", "real", "imag"):
        return _REAL_OF.get(t, t)
    return t


def bit_width(t: str) -> int:
    """Bits of element type ``t``."""
    return PRIMITIVE_TYPES[t].bits


def type_kind(t: str) -> str:
    """``t``'s kind: pred, signed, unsigned, float or complex."""
    return PRIMITIVE_TYPES[t].kind


def default_comparison_type(t: str) -> str:
    """XLA's Comparison::DefaultComparisonType for element type ``t``."""
    k = type_kind(t)
    return "FLOAT" if k in ("float", "complex") else "SIGNED" if k == "signed" else "UNSIGNED"


# Opcodes whose shape XLA's parser infers when the text leaves it out (Note [Shapeless text]).
PARSER_INFERS = frozenset(
    {op.text for op in Opcode if op.family in (Family.UNARY, Family.BINARY)} - {"atan"}
) | {
    "compare", "select", "clamp", "transpose", "reverse", "pad", "concatenate", "reduce",
    "reduce-window", "dot", "convolution", "gather", "scatter", "sort", "tuple",
    "get-tuple-element", "while", "call", "conditional", "map", "copy",
}


# --------------------------------------------------------------------------------------------
# The generated module


@dataclasses.dataclass
class Inst:
    """One generated instruction; ``attrs`` is its attribute text (``", dimensions={0}"``)."""

    name: str
    shape: Shape
    opcode: str
    operands: list[str]
    attrs: str = ""
    literal: str | None = None  # a constant's value text
    value: Any = None  # a generated constant's values (to flush its subnormals)
    number: int | None = None  # a parameter's number

    def text(self, *, with_shape: bool = True) -> str:
        if self.opcode == "parameter":
            args = str(self.number)
        elif self.opcode == "constant":
            args = self.literal or ""
        else:
            args = ", ".join(self.operands)
        shape = shape_text(self.shape) + " " if with_shape else ""
        return f"{self.name} = {shape}{self.opcode}({args}){self.attrs}"


@dataclasses.dataclass
class Comp:
    """One computation; the entry is the last of ``Case.comps``."""

    name: str
    insts: list[Inst]
    root: str

    def inst(self, name: str) -> Inst:
        return next(i for i in self.insts if i.name == name)

    def text(self, *, shapeless: bool = False, entry: bool = False) -> str:
        lines = []
        for i in self.insts:
            keep = not (shapeless and i.opcode in PARSER_INFERS and _xla_infers(i, self))
            prefix = "ROOT " if i.name == self.root else ""
            lines.append(f"  {prefix}{i.text(with_shape=keep)}")
        return ("ENTRY " if entry else "") + f"{self.name} {{\n" + "\n".join(lines) + "\n}\n"


def _xla_infers(inst: Inst, comp: Comp) -> bool:
    """Whether XLA's parser infers exactly the declared shape's element type (Note [Shapeless
    text]): dot and convolution infer the operands' type, not a preferred one."""
    if inst.opcode in ("dot", "convolution"):
        first = comp.inst(inst.operands[0]).shape
        return isinstance(first, ArrayShape) and isinstance(inst.shape, ArrayShape) and \
            first.element_type == inst.shape.element_type
    return True


@dataclasses.dataclass
class Case:
    """A generated module: its computations (entry last), entry inputs and what was broken."""

    seed: int
    comps: list[Comp]
    inputs: list[Any]
    mutation: str | None = None  # None: valid by construction; else "kind:opcode"

    @property
    def entry(self) -> Comp:
        return self.comps[-1]

    def text(self, *, shapeless: bool = False) -> str:
        body = "\n".join(c.text(shapeless=shapeless, entry=c is self.entry) for c in self.comps)
        return f"HloModule fuzz_{self.seed}\n\n{body}"

    def inferred(self) -> set[str]:
        """Names of the instructions whose shape the shapeless text leaves to XLA."""
        return {i.name for c in self.comps for i in c.insts
                if i.opcode in PARSER_INFERS and _xla_infers(i, c)}

    def find(self, name: str) -> tuple[Comp, Inst]:
        for c in self.comps:
            for i in c.insts:
                if i.name == name:
                    return c, i
        raise KeyError(name)


def shape_text(shape: Shape) -> str:
    """``shape`` as the generated text writes it (no layout)."""
    return shape.to_text(layout=False)


def A(t: str, dims: Any = ()) -> ArrayShape:  # noqa: N802 - reads like the HLO it builds
    """The array shape ``t[dims]``."""
    return ArrayShape(t, tuple(int(d) for d in dims))


# --------------------------------------------------------------------------------------------
# Values: inputs and constant literals

_NP_FLOAT_EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.5, 3.0, float("inf"), float("-inf"),
                   float("nan"), 1e-3, 100.0)


def _float_edges(t: str) -> list[float]:
    info = ml_dtypes.finfo(PRIMITIVE_TYPES[t].dtype) if t not in ("f32", "f64", "f16") else \
        np.finfo(PRIMITIVE_TYPES[t].dtype)
    return [*_NP_FLOAT_EDGES, float(info.max), -float(info.max), float(info.tiny),
            float(info.smallest_subnormal), -float(info.smallest_subnormal)]


def _int_edges(t: str) -> list[int]:
    info = np.iinfo(PRIMITIVE_TYPES[t].dtype)
    bits = bit_width(t)
    return [0, 1, 2, 7, int(info.max), int(info.max) - 1, int(info.min), int(info.min) + 1,
            bits - 1, bits, bits + 1, *((-1, -2, -bits) if info.min < 0 else ())]


def random_values(t: str, dims: tuple[int, ...], rng: random.Random,
                  index_bound: int | None = None) -> np.ndarray:
    """Seeded values of type ``t``: a third edge values, the rest ordinary ones. With
    ``index_bound`` the values are indices in [-2, index_bound + 2] (out of range included)."""
    dtype = PRIMITIVE_TYPES[t].dtype
    n = math.prod(dims)
    if index_bound is not None:
        info = np.iinfo(dtype)
        vals = [max(int(info.min), min(int(info.max), rng.randint(-2, index_bound + 2)))
                for _ in range(n)]
        return np.array(vals, dtype=dtype).reshape(dims)
    kind = type_kind(t)
    if kind == "pred":
        return np.array([rng.random() < 0.5 for _ in range(n)], dtype=np.bool_).reshape(dims)
    if kind in ("signed", "unsigned"):
        edges = _int_edges(t)
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -20), min(int(info.max), 40)
        vals = [rng.choice(edges) if rng.random() < 0.35 else rng.randint(lo, hi) for _ in range(n)]
        return np.array(vals, dtype=object).astype(dtype).reshape(dims)
    real_t = _REAL_OF.get(t, t)
    edges = _float_edges(real_t)

    def one() -> float:
        return rng.choice(edges) if rng.random() < 0.3 else round(rng.gauss(0, 3), 3)

    if kind == "complex":
        vals = [complex(one(), one()) for _ in range(n)]
        return np.array(vals, dtype=dtype).reshape(dims)
    return np.array([one() for _ in range(n)], dtype=np.float64).astype(dtype).reshape(dims)


def _scalar_text(v: Any, t: str) -> str:
    kind = type_kind(t)
    if kind == "pred":
        return "true" if bool(v) else "false"
    if kind in ("signed", "unsigned"):
        return str(int(v))
    if kind == "complex":
        return f"({_scalar_text(v.real, _REAL_OF[t])}, {_scalar_text(v.imag, _REAL_OF[t])})"
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f == 0:
        # XLA reads "-0" as +0 (an integer token) but "-0.0" as -0.0.
        return "-0.0" if math.copysign(1, f) < 0 else "0"
    return repr(f)


def literal_text(a: np.ndarray, t: str) -> str:
    """``a`` as an HLO literal of type ``t`` (nested braces, XLA's spellings of inf and NaN)."""
    if a.ndim == 0:
        return _scalar_text(a[()], t)

    def nest(x: np.ndarray) -> str:
        if x.ndim == 1:
            return "{" + ", ".join(_scalar_text(v, t) for v in x) + "}"
        return "{" + ", ".join(nest(s) for s in x) + "}"

    return nest(a)

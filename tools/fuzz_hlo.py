"""Differential fuzzing of hloscope against XLA: random small HLO modules, compared stage by stage.

The generator (``generate(seed)``) builds a random, well-typed module in HLO text from the opcode
families of ``hloscope.ir.opcode`` and the type rules of XLA's ``ShapeInference``: elementwise ops
on every element type XLA:CPU has, compare, convert, bitcast-convert, data movement, reduce,
reduce-window, dot, convolution, gather, scatter, sort, map, while, conditional and tuples. Inputs
are seeded too and lean on edge values (0, -0.0, ±inf, NaN, INT_MIN, -1, maxima, subnormals).
About one module in five carries one deliberate mistake (``Case.mutation``) so that the verifier
is compared with XLA on invalid modules as well. A seed reproduces its module and inputs exactly.

The runner (``check_case``) compares hloscope with XLA, one check per letter:

a. hloscope parses the module and prints it; XLA's parser accepts the printed text and reads it
   as the same module it reads from the original text (XLA's printing of both is equal);
b. hloscope's verifier and XLA agree on validity (Note [XLA's verdict]);
c. hloscope's ``infer_shape`` of every instruction equals the shape XLA's parser infers when the
   shape is left out of the text (Note [Shapeless text]);
d. ``hloscope.cost`` equals XLA's ``hlo_module_cost_analysis`` (FLOPs, transcendentals, bytes);
e. ``hloscope.run`` equals XLA:CPU's execution (Note [Comparing outputs]).

Every XLA call happens in a child process (``XlaWorker``), because XLA aborts the process on
internal CHECK failures; an abort is counted as such and the child is restarted.

Note [Shapeless text]
    XLA's parser infers an instruction's shape with ``ShapeInference`` when the text leaves it
    out, for the opcodes in ``PARSER_INFERS`` (others have no inference there and would crash
    it). The generator writes each module twice: with shapes, as usual, and with the shapes of
    those instructions left out. XLA's printing of the second is XLA's own shape inference.

Note [XLA's verdict]
    XLA's parser does not verify; XLA's verifier runs only when a module is compiled. Without
    compiling, XLA holds a module invalid when the shapeless text fails to parse (its shape
    inference rejected an instruction) or an inferred shape differs from the declared one (the
    verifier's first check). The parser's inference is laxer than XLA:CPU (it ignores float
    precision, and never sees declared-only shapes such as a dot's preferred type or a
    slice's), so whenever hloscope rejects a module the parser accepted, and for every module
    with ``--compile`` or check e, XLA:CPU compiles it: refusing it in its StableHLO conversion
    or its verifier makes it invalid. One verifier rule is taken as written, because XLA:CPU
    folds empty or constant compares away before checking it: a compare's ``type=`` must fit
    its operands (FLOAT or TOTALORDER for floats, else the element type's default); likewise
    the ban on mixed float precision for an instruction with an empty operand or result.

Note [Comparing outputs]
    The entry's root is a tuple of every instruction's value, so a difference is pinned on the
    first instruction whose result differs while its operands agree. Integers and pred must be
    bit-exact, data movement bit-exact (NaNs compared as NaNs), floating-point arithmetic within
    the project's per-dtype tolerances (tests/interpret/tolerances.py). XLA:CPU may reorder
    low-precision arithmetic (Note [Legitimate differences]). An exact operation (compare,
    convert, max, data movement) on operands that already differ in rounding is compared with a
    tolerance when its result is floating point and not at all when it is an integer or pred.

Note [Legitimate differences]
    Differences that are XLA:CPU's choices rather than hloscope's bugs:
    * XLA:CPU runs with subnormals flushed to zero (FTZ/DAZ). A subnormal against a zero of its
      sign is no difference, and a difference that goes away when the inputs' subnormals are
      flushed is only noted (``xla-cpu-flushes-subnormal-inputs``).
    * Reductions may be reordered (bf16/fp8 sums differ by more than rounding), and an init
      value may be applied any number of times (so it must be an identity: the generator's are).
    * With constant inputs XLA folds with its evaluator instead of compiling; ``describe_repro``
      runs a reduced case both ways, so a repro says whether XLA's own two paths agree.

Usage::

    python tools/fuzz_hlo.py gen 17                     # print seed 17's module and inputs
    python tools/fuzz_hlo.py run --seeds 0:2000 --checks abcd
    python tools/fuzz_hlo.py run --seeds 0:500 --checks e --out /tmp/fuzz
    python tools/fuzz_hlo.py reduce 17 --checks e       # minimise seed 17's failure
    python tools/fuzz_hlo.py compare tests/fuzz/repros/popcnt_scalar.hlo   # both results
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import pickle
import random
import select
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT / "src") not in sys.path:  # running from a checkout without installing
    sys.path.insert(0, str(_ROOT / "src"))

from hloscope.ir.dtypes import PRIMITIVE_TYPES  # noqa: E402
from hloscope.ir.opcode import Family, Opcode  # noqa: E402
from hloscope.ir.shape import ArrayShape, Shape, TupleShape  # noqa: E402

__all__ = [
    "Case", "Failure", "XlaWorker", "check_case", "generate", "reduce_case", "PARSER_INFERS",
    "main",
]

# --------------------------------------------------------------------------------------------
# Element types and the type rules of XLA's ShapeInference

FLOATS = ("f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2")
COMPLEX = ("c64", "c128")
SIGNED = ("s8", "s16", "s32", "s64")
UNSIGNED = ("u8", "u16", "u32", "u64")
INTS = SIGNED + UNSIGNED
ALL_TYPES = ("pred",) + INTS + FLOATS + COMPLEX
INDEX_TYPES = ("s32", "s64", "u32", "s8", "u8", "s16", "u64")

_F = frozenset(FLOATS)
_FC = frozenset(FLOATS + COMPLEX)
_I = frozenset(INTS)
_PI = frozenset(("pred",) + INTS)
_SIGNED_ANY = frozenset(SIGNED + FLOATS)  # XLA's ElementIsSigned: signed ints and floats
_NUM = frozenset(INTS + FLOATS + COMPLEX)
_ANY = frozenset(ALL_TYPES)

# Element types each elementwise op accepts (XLA's InferUnaryOpShape / InferBinaryOpShape), the
# set the generator draws from for a valid module.
UNARY_TYPES: dict[str, frozenset[str]] = {
    "floor": _F, "ceil": _F, "cbrt": _F, "erf": _F, "round-nearest-afz": _F,
    "round-nearest-even": _F, "is-finite": _F,
    **{op: _FC for op in ("acos", "acosh", "asin", "asinh", "atanh", "cosh", "cosine", "sinh",
                          "sine", "exponential", "exponential-minus-one", "log", "log-plus-one",
                          "logistic", "rsqrt", "sqrt", "tan", "tanh")},
    "real": _FC, "imag": _FC, "abs": _SIGNED_ANY | frozenset(COMPLEX),
    "count-leading-zeros": _I, "popcnt": _I, "negate": _NUM,
    "sign": _SIGNED_ANY | frozenset(COMPLEX), "not": _PI,
}
BINARY_TYPES: dict[str, frozenset[str]] = {
    "add": _ANY, "multiply": _ANY, "maximum": _ANY, "minimum": _ANY, "subtract": _NUM, "divide": _NUM, "remainder": _I | _F,
    "power": _NUM, "atan2": _FC, "and": _PI, "or": _PI, "xor": _PI, "shift-left": _I,
    "shift-right-arithmetic": _I, "shift-right-logical": _I, "complex": frozenset(("f32", "f64")),
}
_COMPLEX_OF = {"f32": "c64", "f64": "c128"}
_REAL_OF = {"c64": "f32", "c128": "f64"}
# Valid, but XLA:CPU has no kernel for them ("UNIMPLEMENTED"): most modules leave them out so
# that they can run (check e).
XLA_CPU_UNIMPLEMENTED = frozenset({"acos", "acosh", "asin", "asinh", "atanh", "cosh", "sinh"})


def _unary_result(op: str, t: str) -> str:
    if op == "is-finite":
        return "pred"
    if op in ("abs", "real", "imag"):
        return _REAL_OF.get(t, t)
    return t


def _bits(t: str) -> int:
    return PRIMITIVE_TYPES[t].bits


def _kind(t: str) -> str:
    return PRIMITIVE_TYPES[t].kind


def default_comparison_type(t: str) -> str:
    """XLA's Comparison::DefaultComparisonType for element type ``t``."""
    k = _kind(t)
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
    return shape.to_text(layout=False)


def A(t: str, dims: Any = ()) -> ArrayShape:  # noqa: N802 - reads like the HLO it builds
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
    bits = _bits(t)
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
    kind = _kind(t)
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
    kind = _kind(t)
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


# --------------------------------------------------------------------------------------------
# The generator


class _Comp:
    """A computation under construction: its instructions and the values operands come from."""

    def __init__(self, gen: Generator, name: str, entry: bool) -> None:
        self.gen = gen
        self.name = name
        self.entry = entry
        self.insts: list[Inst] = []
        self.pool: list[Inst] = []  # array values available as operands

    def add(self, opcode: str, shape: Shape, operands: list[str], attrs: str = "",
            *, literal: str | None = None, number: int | None = None, pool: bool = True,
            value: Any = None) -> str:
        name = self.gen.fresh(opcode.split("-")[0])
        inst = Inst(name, shape, opcode, operands, attrs, literal=literal, number=number, value=value)
        self.insts.append(inst)
        if pool and isinstance(shape, ArrayShape):
            self.pool.append(inst)
        return name

    def shape(self, name: str) -> Shape:
        return next(i.shape for i in self.insts if i.name == name)

    def array(self, name: str) -> ArrayShape:
        s = self.shape(name)
        assert isinstance(s, ArrayShape)
        return s

    def finish(self, root: str) -> Comp:
        return Comp(self.name, self.insts, root)


class Generator:
    """Builds one random module from a seed; ``case()`` returns it."""

    MAX_DIM = 4

    def __init__(self, seed: int, *, size: int | None = None, mutate: bool | None = None) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.names: Counter[str] = Counter()
        self.comps: list[Comp] = []
        self.inputs: list[Any] = []
        self.params: list[Inst] = []
        self.size = size if size is not None else self.rng.randint(1, 8)
        self.mutate = mutate if mutate is not None else self.rng.random() < 0.2
        self.mutation: str | None = None
        self.cpu_safe = self.rng.random() < 0.8  # leave out XLA_CPU_UNIMPLEMENTED
        self.e = _Comp(self, "main", entry=True)

    # --- names, types, shapes ------------------------------------------------------------------
    def fresh(self, stem: str) -> str:
        self.names[stem] += 1
        return f"{stem}.{self.names[stem]}"

    def pick_type(self, allowed: frozenset[str] | tuple[str, ...] = ALL_TYPES) -> str:
        choices = [t for t in ALL_TYPES if t in allowed]
        # f32 and s32 are what real programs hold most; keep every type in play regardless.
        weights = [4 if t in ("f32", "s32") else 1 for t in choices]
        return self.rng.choices(choices, weights)[0]

    def pick_dims(self, rank: int | None = None) -> tuple[int, ...]:
        r = self.rng.choice((0, 1, 1, 2, 2, 2, 3)) if rank is None else rank
        return tuple(self.rng.choice((0, 1, 2, 2, 3, 3, 4)) if self.rng.random() < 0.97 else 0
                     for _ in range(r))

    # --- operands --------------------------------------------------------------------------------
    def parameter(self, c: _Comp, shape: ArrayShape, index_bound: int | None = None) -> str:
        """A new entry parameter with seeded input values."""
        assert c.entry
        n = len(self.params)
        name = c.add("parameter", shape, [], number=n)
        self.params.append(c.insts[-1])
        self.inputs.append(random_values(shape.element_type, shape.dimensions, self.rng, index_bound))
        return name

    def constant(self, c: _Comp, shape: ArrayShape) -> str:
        vals = random_values(shape.element_type, shape.dimensions, self.rng)
        return c.add("constant", shape, [], literal=literal_text(vals, shape.element_type), value=vals)

    def need(self, c: _Comp, t: str | None = None, dims: tuple[int, ...] | None = None,
             types: frozenset[str] | tuple[str, ...] = ALL_TYPES, rank: int | None = None) -> str:
        """An array operand of type ``t`` (else one of ``types``) and ``dims`` (else of ``rank``):
        an existing value when one fits, else a new parameter, constant or broadcast."""
        fits = [v for v in c.pool if isinstance(v.shape, ArrayShape)
                and (v.shape.element_type == t if t else v.shape.element_type in types)
                and (v.shape.dimensions == dims if dims is not None else
                     rank is None or v.shape.rank == rank)]
        if fits and self.rng.random() < 0.75:
            return self.rng.choice(fits).name
        t = t or self.pick_type(types)
        dims = dims if dims is not None else self.pick_dims(rank)
        shape = A(t, dims)
        roll = self.rng.random()
        if c.entry and roll < 0.7:
            return self.parameter(c, shape)
        if roll < 0.85 or not dims:
            return self.constant(c, shape)
        scalar = self.need(c, t, ())
        return c.add("broadcast", shape, [scalar], ", dimensions={}")

    def index_scalar(self, c: _Comp, bound: int, t: str | None = None) -> str:
        """A scalar integer start index in [-2, bound + 2]."""
        t = t or self.rng.choice(INDEX_TYPES)
        if c.entry:
            return self.parameter(c, A(t), index_bound=bound)
        v = random_values(t, (), self.rng, index_bound=bound)
        return c.add("constant", A(t), [], literal=literal_text(v, t))

    def indices(self, c: _Comp, dims: tuple[int, ...], bound: int) -> str:
        t = self.rng.choice(INDEX_TYPES[:4])
        if c.entry:
            return self.parameter(c, A(t, dims), index_bound=bound)
        v = random_values(t, dims, self.rng, index_bound=bound)
        return c.add("constant", A(t, dims), [], literal=literal_text(v, t))

    def bad(self, kind: str, opcode: str) -> bool:
        """Whether to break this instruction (at most one per module), recording how."""
        if not self.mutate or self.mutation is not None or self.rng.random() < 0.6:
            return False
        self.mutation = f"{kind}:{opcode}"
        return True

    # --- sub-computations ------------------------------------------------------------------------
    def sub(self, stem: str, params: list[Shape], body: Callable[[_Comp, list[str]], str]) -> str:
        c = _Comp(self, self.fresh(stem), entry=False)
        names = [c.add("parameter", s, [], number=k) for k, s in enumerate(params)]
        root = body(c, names)
        self.comps.append(c.finish(root))
        return c.name

    def scalar_reducer(self, types: list[str], kind: str | None = None) -> tuple[str, list[str]]:
        """A reducer over ``types`` and the identity init value text of each; ``kind`` picks a
        known reduction (add, multiply, maximum, minimum, and, or) or a custom one."""
        rng = self.rng
        if len(types) == 2 and kind is None and rng.random() < 0.5 and _kind(types[1]) in ("signed", "unsigned") \
                and _kind(types[0]) not in ("complex",):
            return self._argmax_reducer(types)
        ops = []
        for t in types:
            choices = ["add", "multiply"] + (["maximum", "minimum"] if _kind(t) != "complex" else [])
            if _kind(t) in ("pred", "signed", "unsigned"):
                choices += ["and", "or", "xor"] if _kind(t) != "pred" else ["and", "or"]
            ops.append(kind if kind in choices else rng.choice(choices))
        custom = rng.random() < 0.3
        params = [A(t) for t in types] * 2
        n = len(types)

        def body(c: _Comp, p: list[str]) -> str:
            outs = []
            for k, (t, op) in enumerate(zip(types, ops)):
                a, b = p[k], p[n + k]
                if custom and op in ("maximum", "minimum") and _kind(t) != "pred":
                    # max/min spelled as compare + select: the same reduction, not pattern-matched.
                    d = "GT" if op == "maximum" else "LT"
                    ct = "TOTALORDER" if _kind(t) == "float" else default_comparison_type(t)
                    cmp = c.add("compare", A("pred"), [a, b], f", direction={d}, type={ct}")
                    outs.append(c.add("select", A(t), [cmp, a, b]))
                else:
                    outs.append(c.add(op, A(t), [a, b]))
            return outs[0] if n == 1 else c.add("tuple", TupleShape(tuple(A(t) for t in types)), outs)

        name = self.sub("reducer", params, body)
        return name, [_identity(op, t) for op, t in zip(ops, types)]

    def _argmax_reducer(self, types: list[str]) -> tuple[str, list[str]]:
        """(value, index) pairs: the larger value, the smaller index on ties (associative and
        commutative, so any reduction order gives one answer)."""
        vt, it = types
        ct = "TOTALORDER" if _kind(vt) == "float" else default_comparison_type(vt)

        def body(c: _Comp, p: list[str]) -> str:
            av, ai, bv, bi = p
            gt = c.add("compare", A("pred"), [av, bv], f", direction=GT, type={ct}")
            eq = c.add("compare", A("pred"), [av, bv], f", direction=EQ, type={ct}")
            lt_i = c.add("compare", A("pred"), [ai, bi], f", direction=LT, type={default_comparison_type(it)}")
            tie = c.add("and", A("pred"), [eq, lt_i])
            take_a = c.add("or", A("pred"), [gt, tie])
            v = c.add("select", A(vt), [take_a, av, bv])
            i = c.add("select", A(it), [take_a, ai, bi])
            return c.add("tuple", TupleShape((A(vt), A(it))), [v, i])

        name = self.sub("argmax", [A(vt), A(it), A(vt), A(it)], body)
        lowest = "-inf" if _kind(vt) == "float" and vt != "f8e4m3fn" else _lowest_text(vt)
        # The init pair must be an identity (XLA may apply it any number of times): the lowest
        # value with the highest index loses every tie.
        return name, [lowest, _highest_text(it)]

    # --- the module ------------------------------------------------------------------------------
    def case(self) -> Case:
        ops = [fn for fn, w in _OPS for _ in range(w)]
        for _ in range(self.size):
            self.rng.choice(ops)(self, self.e)
        self.finish_entry()
        if self.mutate and self.mutation is None and self.rng.random() < 0.5:
            self.mutate_declared_shape()
        return Case(self.seed, self.comps, self.inputs, self.mutation)

    def finish_entry(self) -> None:
        e = self.e
        if not e.pool:
            self.need(e)
        # Note [Comparing outputs]: every computed value is an output, parameters excluded.
        outs = [i for i in e.insts if i.opcode != "parameter"] or e.insts[-1:]
        if len(outs) == 1 and isinstance(outs[0].shape, ArrayShape) and self.rng.random() < 0.3:
            root = outs[0].name
        else:
            root = e.add("tuple", TupleShape(tuple(i.shape for i in outs)), [i.name for i in outs])
        # Parameters first, numbered in order, as XLA prints them.
        e.insts.sort(key=lambda i: i.opcode != "parameter")
        self.comps.append(e.finish(root))

    def mutate_declared_shape(self) -> None:
        """Declare a wrong shape on one inferable instruction (only the verifier can tell)."""
        cands = [i for i in self.e.insts if i.opcode in PARSER_INFERS and isinstance(i.shape, ArrayShape)
                 and i.opcode not in ("tuple",)]
        if not cands:
            return
        inst = self.rng.choice(cands)
        s = inst.shape
        assert isinstance(s, ArrayShape)
        if s.rank and self.rng.random() < 0.5:
            dims = list(s.dimensions)
            k = self.rng.randrange(len(dims))
            dims[k] += self.rng.choice((1, 2))
            new = A(s.element_type, dims)
        elif inst.opcode in ("dot", "convolution"):
            return  # their element type is a free choice (the preferred type)
        else:
            new = A(self.rng.choice([t for t in ALL_TYPES if t != s.element_type]), s.dimensions)
        inst.shape = new
        self.mutation = f"declared-shape:{inst.opcode}"
        # Users keep reading the declared shape, as XLA's verifier does: rebuild the tuple root.
        for i in self.e.insts:
            if i.opcode == "tuple":
                i.shape = TupleShape(tuple(self.e_shape(o) for o in i.operands))

    def e_shape(self, name: str) -> Shape:
        return next(i.shape for c in self.comps for i in c.insts if i.name == name)


def _identity(op: str, t: str) -> str:
    kind = _kind(t)
    if op in ("add", "or", "xor"):
        return "false" if kind == "pred" else "(0, 0)" if kind == "complex" else "0"
    if op == "multiply":
        return "true" if kind == "pred" else "(1, 0)" if kind == "complex" else "1"
    if op == "and":
        return "true" if kind == "pred" else "-1" if kind == "signed" else str(np.iinfo(PRIMITIVE_TYPES[t].dtype).max)
    if op == "maximum":
        return _lowest_text(t) if kind != "float" or t == "f8e4m3fn" else "-inf"
    if op == "minimum":
        if kind == "float" and t != "f8e4m3fn":
            return "inf"
        return _highest_text(t)
    raise ValueError(op)


def _lowest_text(t: str) -> str:
    kind = _kind(t)
    if kind == "pred":
        return "false"
    if kind == "float":
        return repr(-float(ml_dtypes.finfo(PRIMITIVE_TYPES[t].dtype).max))
    return str(int(np.iinfo(PRIMITIVE_TYPES[t].dtype).min))


def _highest_text(t: str) -> str:
    kind = _kind(t)
    if kind == "pred":
        return "true"
    if kind == "float":
        return repr(float(ml_dtypes.finfo(PRIMITIVE_TYPES[t].dtype).max))
    return str(int(np.iinfo(PRIMITIVE_TYPES[t].dtype).max))


def _braced(xs: Any) -> str:
    return "{" + ",".join(str(int(x)) for x in xs) + "}"


# --------------------------------------------------------------------------------------------
# Op generators: each appends one instruction (and what it needs) to a computation


def _op_unary(g: Generator, c: _Comp) -> None:
    op = g.rng.choice(sorted(set(UNARY_TYPES) - (XLA_CPU_UNIMPLEMENTED if g.cpu_safe else set())))
    allowed = UNARY_TYPES[op]
    if allowed != _ANY and g.bad("type", op):
        allowed = _ANY - allowed
    x = g.need(c, types=allowed)
    s = c.array(x)
    c.add(op, A(_unary_result(op, s.element_type), s.dimensions), [x])


def _op_binary(g: Generator, c: _Comp) -> None:
    op = g.rng.choice(sorted(BINARY_TYPES))
    allowed = BINARY_TYPES[op]
    kind = "type" if allowed != _ANY and g.bad("type", op) else None
    if kind:
        allowed = _ANY - allowed
    a = g.need(c, types=allowed)
    s = c.array(a)
    if kind is None and g.bad("operand", op):
        # A second operand of another shape or element type.
        other = [t for t in allowed if t != s.element_type] or [s.element_type]
        b = g.need(c, g.rng.choice(other), s.dimensions) if g.rng.random() < 0.5 or not s.rank \
            else g.need(c, s.element_type, (*s.dimensions[:-1], s.dimensions[-1] + 1))
    else:
        b = g.need(c, s.element_type, s.dimensions)
    t = _COMPLEX_OF.get(s.element_type, s.element_type) if op == "complex" else s.element_type
    c.add(op, A(t, s.dimensions), [a, b])


def _op_compare(g: Generator, c: _Comp) -> None:
    a = g.need(c)
    s = c.array(a)
    b = g.need(c, s.element_type, s.dimensions)
    kind = _kind(s.element_type)
    directions = ("EQ", "NE") if kind == "complex" else ("EQ", "NE", "LT", "LE", "GT", "GE")
    d = g.rng.choice(directions)
    if kind == "float":
        ctype = g.rng.choice(("FLOAT", "TOTALORDER", None))
    else:
        ctype = g.rng.choice((default_comparison_type(s.element_type), None))
    if g.bad("comparison-type", "compare"):
        fits = {"float": ("FLOAT", "TOTALORDER"), "complex": ("FLOAT",)}.get(
            kind, (default_comparison_type(s.element_type),))
        ctype = g.rng.choice([t for t in ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED") if t not in fits])
    attrs = f", direction={d}" + (f", type={ctype}" if ctype else "")
    c.add("compare", A("pred", s.dimensions), [a, b], attrs)


def _op_select_clamp(g: Generator, c: _Comp) -> None:
    x = g.need(c)
    s = c.array(x)
    if g.rng.random() < 0.5:
        p = g.need(c, "pred", s.dimensions if g.rng.random() < 0.8 else ())
        y = g.need(c, s.element_type, s.dimensions)
        if g.bad("operand", "select"):
            p = g.need(c, g.pick_type(_ANY - {"pred"}), s.dimensions)
        c.add("select", s, [p, x, y])
    else:
        if s.element_type in ("pred",) + COMPLEX:
            x = g.need(c, g.pick_type(_NUM - frozenset(COMPLEX)), s.dimensions)
            s = c.array(x)
        lo = g.need(c, s.element_type, s.dimensions if g.rng.random() < 0.5 else ())
        if g.bad("operand", "clamp"):
            lo = g.need(c, g.pick_type(_NUM - {s.element_type}), ())
        hi = g.need(c, s.element_type, s.dimensions if g.rng.random() < 0.5 else ())
        c.add("clamp", s, [lo, x, hi])


def _op_convert(g: Generator, c: _Comp) -> None:
    x = g.need(c)
    s = c.array(x)
    t = g.pick_type()
    c.add("convert", A(t, s.dimensions), [x])


def _op_bitcast_convert(g: Generator, c: _Comp) -> None:
    x = g.need(c, types=_ANY - {"pred"})
    s = c.array(x)
    complex_in = _kind(s.element_type) == "complex"
    outs = [t for t in ALL_TYPES if t != "pred" and (_kind(t) == "complex") == complex_in]
    if complex_in:
        # XLA:CPU cannot change a complex width (c64[..,2] <-> c128[..]): it refuses with a
        # garbled error one way and aborts the other. Left out, reported, not fuzzed further.
        outs = [s.element_type]
    same = [t for t in outs if _bits(t) == _bits(s.element_type)]
    t = g.rng.choice(same if same and g.rng.random() < 0.6 else outs)
    ib, ob = _bits(s.element_type), _bits(t)
    if max(ib, ob) % min(ib, ob):
        t, ob = s.element_type, ib
    if ib > ob:
        shape = A(t, (*s.dimensions, ib // ob))
    elif ib < ob:
        x = g.need(c, s.element_type, (*s.dimensions, ob // ib))
        shape = A(t, s.dimensions)
    else:
        shape = A(t, s.dimensions)
    c.add("bitcast-convert", shape, [x])


def _op_broadcast(g: Generator, c: _Comp) -> None:
    x = g.need(c, rank=g.rng.choice((0, 1, 1, 2)))
    s = c.array(x)
    out_rank = min(4, s.rank + g.rng.randint(0, 2))
    dims_map = sorted(g.rng.sample(range(out_rank), s.rank))
    if s.rank > 1 and g.bad("attribute", "broadcast"):
        dims_map.reverse()  # XLA wants them ascending
    out = list(g.pick_dims(out_rank))
    for i, d in enumerate(dims_map):
        out[d] = s.dimensions[i]
    c.add("broadcast", A(s.element_type, out), [x], f", dimensions={_braced(dims_map)}")


def _factorizations(n: int, rank: int, rng: random.Random) -> tuple[int, ...]:
    if rank == 0:
        return ()
    if n == 0:
        dims = [rng.choice((0, 1, 2, 3)) for _ in range(rank)]
        dims[rng.randrange(rank)] = 0
        return tuple(dims)
    dims = []
    left = n
    for _ in range(rank - 1):
        divs = [d for d in range(1, left + 1) if left % d == 0]
        d = rng.choice(divs)
        dims.append(d)
        left //= d
    dims.append(left)
    rng.shuffle(dims)
    return tuple(dims)


def _op_reshape(g: Generator, c: _Comp) -> None:
    x = g.need(c)
    s = c.array(x)
    n = s.element_count
    rank = g.rng.choice((0, 1, 2, 3)) if n == 1 else g.rng.choice((1, 2, 3))
    dims = _factorizations(n, rank, g.rng)
    if dims and g.bad("attribute", "reshape"):
        dims = (*dims[:-1], dims[-1] + 1)
    c.add("reshape", A(s.element_type, dims), [x])


def _op_transpose(g: Generator, c: _Comp) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3, 3)))
    s = c.array(x)
    perm = list(range(s.rank))
    g.rng.shuffle(perm)
    if g.bad("attribute", "transpose") and perm:
        perm[g.rng.randrange(len(perm))] = g.rng.choice((s.rank, perm[0]))
        shape = s
    else:
        shape = A(s.element_type, [s.dimensions[p] for p in perm])
    c.add("transpose", shape, [x], f", dimensions={_braced(perm)}")


def _op_slice(g: Generator, c: _Comp) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    ranges, out = [], []
    for n in s.dimensions:
        start = g.rng.randint(0, n)
        limit = g.rng.randint(start, n)
        stride = g.rng.choice((1, 1, 2, 3))
        ranges.append(f"[{start}:{limit}" + (f":{stride}]" if stride != 1 or g.rng.random() < 0.3 else "]"))
        out.append(-(-(limit - start) // stride))
    if g.bad("attribute", "slice"):
        n = s.dimensions[0]
        ranges[0], out[0] = f"[0:{n + 1}]", n + 1
    c.add("slice", A(s.element_type, out), [x], ", slice={" + ", ".join(ranges) + "}")


def _op_concatenate(g: Generator, c: _Comp) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    d = g.rng.randrange(s.rank)
    parts, total = [x], s.dimensions[d]
    for _ in range(g.rng.randint(0, 2)):
        dims = list(s.dimensions)
        dims[d] = g.rng.randint(0, 3)
        parts.append(g.need(c, s.element_type, tuple(dims)))
        total += dims[d]
    if g.bad("operand", "concatenate") and s.rank > 1:
        dims = list(s.dimensions)
        k = (d + 1) % s.rank
        dims[k] += 1
        parts.append(g.need(c, s.element_type, tuple(dims)))
    out = list(s.dimensions)
    out[d] = total
    c.add("concatenate", A(s.element_type, out), parts, f", dimensions={{{d}}}")


def _op_pad(g: Generator, c: _Comp) -> None:
    # Rank 0 is left out: XLA's text has no spelling for an empty padding config.
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    v = g.need(c, s.element_type, ())
    if g.bad("operand", "pad"):
        v = g.need(c, g.pick_type(_ANY - {s.element_type}), ())
    cfg, out = [], []
    for n in s.dimensions:
        interior = g.rng.choice((0, 0, 1, 2))
        base = n + max(n - 1, 0) * interior
        lo = g.rng.randint(-min(base, 2), 3)
        hi = g.rng.randint(-min(base + lo, 2) if base + lo > 0 else 0, 3)
        cfg.append(f"{lo}_{hi}" + (f"_{interior}" if interior else ""))
        out.append(base + lo + hi)
    c.add("pad", A(s.element_type, out), [x, v], ", padding=" + "x".join(cfg))


def _op_reverse(g: Generator, c: _Comp) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    dims = sorted(g.rng.sample(range(s.rank), g.rng.randint(0, s.rank)))
    if g.bad("attribute", "reverse"):
        dims = dims + [s.rank]
    c.add("reverse", s, [x], f", dimensions={_braced(dims)}")


def _op_iota(g: Generator, c: _Comp) -> None:
    t = g.pick_type(_NUM)
    dims = g.pick_dims(g.rng.choice((1, 2, 3)))
    d = len(dims) if g.bad("attribute", "iota") else g.rng.randrange(len(dims))
    c.add("iota", A(t, dims), [], f", iota_dimension={d}")


def _op_dynamic_slice(g: Generator, c: _Comp) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    sizes = [g.rng.randint(0, n) for n in s.dimensions]
    t = g.rng.choice(INDEX_TYPES)
    starts = [g.index_scalar(c, n, t) for n in s.dimensions]
    if g.bad("operand", "dynamic-slice"):  # start indices must share one integer type
        starts[-1] = g.index_scalar(c, 0, g.rng.choice([u for u in INDEX_TYPES if u != t]))
    c.add("dynamic-slice", A(s.element_type, sizes), [x, *starts],
          f", dynamic_slice_sizes={_braced(sizes)}")


def _op_dynamic_update_slice(g: Generator, c: _Comp) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    u = g.need(c, s.element_type, tuple(g.rng.randint(0, n) for n in s.dimensions))
    t = g.rng.choice(INDEX_TYPES)
    starts = [g.index_scalar(c, n, t) for n in s.dimensions]
    c.add("dynamic-update-slice", s, [x, u, *starts])


def _op_reduce(g: Generator, c: _Comp) -> None:
    n_in = 2 if g.rng.random() < 0.3 else 1
    x = g.need(c, rank=g.rng.choice((1, 2, 3)), types=_ANY)
    s = c.array(x)
    xs = [x]
    if n_in == 2:
        xs.append(g.need(c, g.rng.choice(INTS), s.dimensions))
    types = [c.array(v).element_type for v in xs]
    reducer, inits = g.scalar_reducer(types)
    init_names = [c.add("constant", A(t), [], literal=v) for t, v in zip(types, inits)]
    if g.bad("operand", "reduce"):  # an init value of another element type than the reducer's
        t2 = g.rng.choice([u for u in ALL_TYPES if u != types[0]])
        init_names[0] = c.add("constant", A(t2), [], literal=_identity("add", t2))
    dims = sorted(g.rng.sample(range(s.rank), g.rng.randint(0, s.rank)))
    if g.bad("attribute", "reduce"):
        dims = dims + [s.rank]
    keep = [s.dimensions[k] for k in range(s.rank) if k not in dims]
    shape: Shape = A(types[0], keep) if n_in == 1 else TupleShape(tuple(A(t, keep) for t in types))
    c.add("reduce", shape, xs + init_names, f", dimensions={_braced(dims)}, to_apply={reducer}")


def _window_text(dims: list[dict[str, int]]) -> str:
    keys = (("size", "size"), ("stride", "stride"), ("pad", None), ("lhs_dilate", "lhs_dilate"),
            ("rhs_dilate", "rhs_dilate"))
    parts = []
    for key, field in keys:
        if key == "pad":
            vals = [f"{d['lo']}_{d['hi']}" for d in dims]
            if all(v == "0_0" for v in vals):
                continue
        else:
            vals = [str(d[field]) for d in dims]  # type: ignore[index]
            if key != "size" and all(v == "1" for v in vals):
                continue
        parts.append(f"{key}=" + "x".join(vals))
    return "{" + " ".join(parts) + "}"


def _random_window(g: Generator, base: tuple[int, ...], sizes: list[int] | None = None) -> tuple[list[dict[str, int]], list[int]]:
    """Window dimensions over ``base`` with padded bases >= 0 (XLA CHECK-fails otherwise) and
    their output sizes."""
    rng = g.rng
    dims, out = [], []
    for k, n in enumerate(base):
        size = sizes[k] if sizes is not None else rng.randint(1, 3)
        d = {"size": size, "stride": rng.choice((1, 1, 2, 3)), "lhs_dilate": rng.choice((1, 1, 1, 2)),
             "rhs_dilate": rng.choice((1, 1, 1, 2)), "lo": rng.choice((0, 0, 0, 1, 2, -1)),
             "hi": rng.choice((0, 0, 0, 1, 2, -1))}
        dilated = (n - 1) * d["lhs_dilate"] + 1 if n else 0
        if dilated + d["lo"] + d["hi"] < 0:
            d["lo"] = d["hi"] = 0
        padded = dilated + d["lo"] + d["hi"]
        span = (size - 1) * d["rhs_dilate"] + 1
        out.append(0 if padded == 0 or span > padded else (padded - span) // d["stride"] + 1)
        dims.append(d)
    return dims, out


def _op_reduce_window(g: Generator, c: _Comp) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)), types=_ANY - frozenset(COMPLEX))
    s = c.array(x)
    reducer, inits = g.scalar_reducer([s.element_type])
    init = c.add("constant", A(s.element_type), [], literal=inits[0])
    window, out = _random_window(g, s.dimensions)
    if s.rank > 1 and g.bad("attribute", "reduce-window"):
        window = window[:-1]
    c.add("reduce-window", A(s.element_type, out), [x, init],
          f", window={_window_text(window)}, to_apply={reducer}")


_DOT_TYPES = ("f32", "f64", "f16", "bf16", "s32", "s8", "u8", "s64", "c64", "pred")
_PREFERRED = {"bf16": ("f32",), "f16": ("f32",), "s8": ("s32",), "u8": ("u32", "s32"), "f32": ("f64",)}


def _op_dot(g: Generator, c: _Comp) -> None:
    rng = g.rng
    t = rng.choice(_DOT_TYPES)
    nb, nc = rng.choice((0, 0, 1, 2)), rng.choice((0, 1, 1, 1, 2))
    nfl, nfr = rng.choice((0, 1, 1, 2)), rng.choice((0, 1, 1, 2))
    batch = [rng.randint(1, 3) for _ in range(nb)]
    contract = [rng.randint(0, 4) for _ in range(nc)]
    fl = [rng.randint(1, 4) for _ in range(nfl)]
    fr = [rng.randint(1, 4) for _ in range(nfr)]

    def place(free: list[int]) -> tuple[list[int], list[int], list[int]]:
        roles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(len(free))]
        rng.shuffle(roles)
        dims = [batch[i] if r == "b" else contract[i] if r == "c" else free[i] for r, i in roles]
        bpos = [roles.index(("b", i)) for i in range(nb)]
        cpos = [roles.index(("c", i)) for i in range(nc)]
        return dims, bpos, cpos

    ld, lb, lc = place(fl)
    rd, rb, rc = place(fr)
    if g.bad("attribute", "dot") and nc:
        rd[rc[0]] += 1
    a = g.need(c, t, tuple(ld))
    b = g.need(c, t, tuple(rd))
    out_t = rng.choice(_PREFERRED[t]) if t in _PREFERRED and rng.random() < 0.3 else t
    attrs = ""
    for key, v in (("lhs_batch_dims", lb), ("lhs_contracting_dims", lc), ("rhs_batch_dims", rb),
                   ("rhs_contracting_dims", rc)):
        if v or rng.random() < 0.2:
            attrs += f", {key}={_braced(v)}"
    free_l = [n for k, n in enumerate(ld) if k not in lb and k not in lc]
    free_r = [n for k, n in enumerate(rd) if k not in rb and k not in rc]
    c.add("dot", A(out_t, batch + free_l + free_r), [a, b], attrs)


def _op_convolution(g: Generator, c: _Comp) -> None:
    rng = g.rng
    t = rng.choice(("f32", "f32", "f64", "f16", "bf16", "s32", "s8"))
    nsp = rng.choice((1, 1, 2))
    digits = [str(i) for i in range(nsp)]
    lhs_l, ker_l, out_l = ["b", "f", *digits], ["i", "o", *digits], ["b", "f", *digits]
    for labels in (lhs_l, ker_l, out_l):
        rng.shuffle(labels)
    fgc, bgc = rng.choice(((1, 1), (1, 1), (2, 1), (1, 2), (3, 1)))
    kin = rng.randint(1, 2)
    fin = kin * fgc
    kout = rng.randint(1, 2) * fgc * bgc
    batch = rng.randint(1, 2) * bgc
    spatial = [rng.randint(1, 5) for _ in range(nsp)]
    ksp = [rng.randint(1, 3) for _ in range(nsp)]
    window, osp = _random_window(g, tuple(spatial), ksp)

    def arrange(labels: list[str], sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(sizes[label] for label in labels)

    lhs = arrange(lhs_l, {"b": batch, "f": fin, **dict(zip(digits, spatial))})
    ker = arrange(ker_l, {"i": kin, "o": kout, **dict(zip(digits, ksp))})
    out = arrange(out_l, {"b": batch // bgc, "f": kout, **dict(zip(digits, osp))})
    if g.bad("attribute", "convolution"):
        ker = tuple(n + 1 if lab == "i" else n for n, lab in zip(ker, ker_l))
    a = g.need(c, t, lhs)
    k = g.need(c, t, ker)
    out_t = rng.choice(_PREFERRED[t]) if t in _PREFERRED and rng.random() < 0.3 else t
    attrs = f", window={_window_text(window)}, dim_labels={''.join(lhs_l)}_{''.join(ker_l)}->{''.join(out_l)}"
    if fgc > 1:
        attrs += f", feature_group_count={fgc}"
    if bgc > 1:
        attrs += f", batch_group_count={bgc}"
    c.add("convolution", A(out_t, out), [a, k], attrs)


@dataclasses.dataclass
class _IndexScheme:
    """Dimension numbers shared by gather and scatter (gather's names)."""

    batching: list[int]  # operand_batching_dims / input_batching_dims
    collapsed: list[int]  # collapsed_slice_dims / inserted_window_dims
    start_index_map: list[int]  # start_index_map / scatter_dims_to_operand_dims
    index_dims: tuple[int, ...]  # the indices' shape
    index_vector_dim: int
    index_batching: list[int]  # start_indices_batching_dims / scatter_indices_batching_dims
    batch_sizes: list[int]  # the indices' dimensions other than index_vector_dim, in order


def _index_scheme(g: Generator, opdims: tuple[int, ...]) -> _IndexScheme:
    rng = g.rng
    r = len(opdims)
    order = list(range(r))
    rng.shuffle(order)
    nonempty = [d for d in order if opdims[d] >= 1]
    nb = 1 if len(nonempty) >= 2 and rng.random() < 0.25 else 0
    batching = sorted(nonempty[:nb])
    rest = [d for d in order if d not in batching]
    sim = rng.sample(rest, rng.randint(0, len(rest)))
    collapsed = sorted(d for d in rest if opdims[d] >= 1 and rng.random() < 0.4)
    n_batch = rng.randint(0, 2) + nb
    batch_sizes = [rng.randint(0, 3) for _ in range(n_batch)]
    pos = rng.sample(range(n_batch), nb)
    for p, d in zip(pos, batching):
        batch_sizes[p] = opdims[d]
    implicit = len(sim) == 1 and rng.random() < 0.3
    if implicit:
        dims, ivd = tuple(batch_sizes), n_batch
        index_batching = pos
    else:
        ivd = rng.randint(0, n_batch)
        dims = tuple(batch_sizes[:ivd] + [len(sim)] + batch_sizes[ivd:])
        index_batching = [p + (1 if p >= ivd else 0) for p in pos]
    return _IndexScheme(batching, collapsed, sim, dims, ivd, index_batching, batch_sizes)


def _op_gather(g: Generator, c: _Comp) -> None:
    rng = g.rng
    x = g.need(c, rank=rng.choice((1, 2, 3)))
    s = c.array(x)
    sch = _index_scheme(g, s.dimensions)
    dropped = set(sch.batching) | set(sch.collapsed)
    sizes = [1 if d in dropped else rng.randint(0, n) for d, n in enumerate(s.dimensions)]
    offsets = [sizes[d] for d in range(s.rank) if d not in dropped]
    out_rank = len(sch.batch_sizes) + len(offsets)
    offset_dims = sorted(rng.sample(range(out_rank), len(offsets)))
    oo, ob = iter(offsets), iter(sch.batch_sizes)
    out = [next(oo) if d in offset_dims else next(ob) for d in range(out_rank)]
    if g.bad("attribute", "gather") and sizes:
        sizes[0] = s.dimensions[0] + 1
    idx = g.indices(c, sch.index_dims, max(s.dimensions))
    attrs = (f", offset_dims={_braced(offset_dims)}, collapsed_slice_dims={_braced(sch.collapsed)}"
             f", start_index_map={_braced(sch.start_index_map)}")
    if sch.batching:
        attrs += (f", operand_batching_dims={_braced(sch.batching)}"
                  f", start_indices_batching_dims={_braced(sch.index_batching)}")
    attrs += f", index_vector_dim={sch.index_vector_dim}, slice_sizes={_braced(sizes)}"
    if rng.random() < 0.2:
        attrs += ", indices_are_sorted=false"
    c.add("gather", A(s.element_type, out), [x, idx], attrs)


def _op_scatter(g: Generator, c: _Comp) -> None:
    rng = g.rng
    x = g.need(c, rank=rng.choice((1, 2, 3)), types=_ANY - {"pred"})
    s = c.array(x)
    sch = _index_scheme(g, s.dimensions)
    dropped = set(sch.batching) | set(sch.collapsed)
    window = [rng.randint(0, n) for d, n in enumerate(s.dimensions) if d not in dropped]
    up_rank = len(sch.batch_sizes) + len(window)
    window_dims = sorted(rng.sample(range(up_rank), len(window)))
    ww, wb = iter(window), iter(sch.batch_sizes)
    up = tuple(next(ww) if d in window_dims else next(wb) for d in range(up_rank))
    if g.bad("operand", "scatter") and up:
        up = (*up[:-1], up[-1] + 5)
    idx = g.indices(c, sch.index_dims, max(s.dimensions))
    u = g.need(c, s.element_type, up)
    if rng.random() < 0.25:  # overwrite: the last update to an element wins
        comb = g.sub("overwrite", [A(s.element_type)] * 2, lambda cc, p: p[1])
    else:
        comb, _ = g.scalar_reducer([s.element_type])
    attrs = (f", update_window_dims={_braced(window_dims)}, inserted_window_dims={_braced(sch.collapsed)}"
             f", scatter_dims_to_operand_dims={_braced(sch.start_index_map)}")
    if sch.batching:
        attrs += (f", input_batching_dims={_braced(sch.batching)}"
                  f", scatter_indices_batching_dims={_braced(sch.index_batching)}")
    attrs += f", index_vector_dim={sch.index_vector_dim}, to_apply={comb}"
    c.add("scatter", s, [x, idx, u], attrs)


def _op_sort(g: Generator, c: _Comp) -> None:
    rng = g.rng
    x = g.need(c, rank=rng.choice((1, 2, 3)), types=_ANY - frozenset(COMPLEX))
    s = c.array(x)
    xs = [x] + [g.need(c, dims=s.dimensions) for _ in range(rng.choice((0, 0, 1, 2)))]
    if g.bad("operand", "sort"):  # all operands must share dimensions
        xs.append(g.need(c, dims=(*s.dimensions[:-1], s.dimensions[-1] + 1)))
    types = [c.array(v).element_type for v in xs]
    kt = types[0]
    d = rng.choice(("LT", "GT"))
    ct = "TOTALORDER" if _kind(kt) == "float" else default_comparison_type(kt)

    def body(cc: _Comp, p: list[str]) -> str:
        return cc.add("compare", A("pred"), [p[0], p[1]], f", direction={d}, type={ct}")

    params = [A(t) for t in types for _ in (0, 1)]
    cmp = g.sub("compare", params, body)
    # Equal keys under a total order are identical bits, so only several operands need stability.
    stable = len(xs) > 1 or rng.random() < 0.3
    shape: Shape = s if len(xs) == 1 else TupleShape(tuple(c.array(v) for v in xs))
    dim = rng.randrange(s.rank)
    c.add("sort", shape, xs, f", dimensions={{{dim}}}" + (", is_stable=true" if stable else "")
          + f", to_apply={cmp}", pool=len(xs) == 1)
    if len(xs) > 1:
        _unpack(c, c.insts[-1])


def _unpack(c: _Comp, inst: Inst) -> None:
    """get-tuple-element of a random element of a tuple-shaped instruction."""
    assert isinstance(inst.shape, TupleShape)
    k = c.gen.rng.randrange(len(inst.shape.elements))
    c.add("get-tuple-element", inst.shape.elements[k], [inst.name], f", index={k}")


def _elementwise_body(g: Generator, c: _Comp, x: str) -> str:
    """A short chain of type-preserving elementwise ops on ``x`` (while bodies, branches)."""
    s = c.array(x)
    t = s.element_type
    for _ in range(g.rng.randint(1, 2)):
        un = [op for op, ts in UNARY_TYPES.items() if t in ts and _unary_result(op, t) == t
              and not (g.cpu_safe and op in XLA_CPU_UNIMPLEMENTED)]
        bi = [op for op, ts in BINARY_TYPES.items() if t in ts and op != "complex"]
        if g.rng.random() < 0.5 and un:
            x = c.add(g.rng.choice(sorted(un)), s, [x])
        else:
            y = g.need(c, t, s.dimensions)
            x = c.add(g.rng.choice(sorted(bi)), s, [x, y])
    return x


def _op_map(g: Generator, c: _Comp) -> None:
    x = g.need(c)
    s = c.array(x)
    t = s.element_type
    bi = sorted(op for op, ts in BINARY_TYPES.items() if t in ts and op != "complex")
    op = g.rng.choice(bi)
    fn = g.sub("mapped", [A(t), A(t)], lambda cc, p: cc.add(op, A(t), [p[0], p[1]]))
    y = g.need(c, t, s.dimensions)
    c.add("map", s, [x, y], f", dimensions={_braced(range(s.rank))}, to_apply={fn}")


def _op_while(g: Generator, c: _Comp) -> None:
    rng = g.rng
    x = g.need(c, types=_NUM | {"pred"})
    s = c.array(x)
    trips = rng.randint(0, 3)
    state = TupleShape((A("s32"), s))
    zero = c.add("constant", A("s32"), [], literal=str(rng.choice((0, 0, -1))))
    init = c.add("tuple", state, [zero, x], pool=False)

    def cond(cc: _Comp, p: list[str]) -> str:
        i = cc.add("get-tuple-element", A("s32"), [p[0]], ", index=0")
        n = cc.add("constant", A("s32"), [], literal=str(trips))
        return cc.add("compare", A("pred"), [i, n], ", direction=LT")

    def body(cc: _Comp, p: list[str]) -> str:
        i = cc.add("get-tuple-element", A("s32"), [p[0]], ", index=0")
        v = cc.add("get-tuple-element", s, [p[0]], ", index=1")
        one = cc.add("constant", A("s32"), [], literal="1")
        i2 = cc.add("add", A("s32"), [i, one])
        v2 = _elementwise_body(g, cc, v)
        return cc.add("tuple", state, [i2, v2])

    cn = g.sub("cond", [state], cond)
    bn = g.sub("body", [state], body)
    w = c.add("while", state, [init], f", condition={cn}, body={bn}", pool=False)
    c.add("get-tuple-element", s, [w], ", index=1")


def _op_conditional(g: Generator, c: _Comp) -> None:
    rng = g.rng
    x = g.need(c, types=_NUM)
    s = c.array(x)
    n = rng.choice((2, 2, 3))
    boolean = n == 2 and rng.random() < 0.5
    branches = [g.sub("branch", [s], lambda cc, p: _elementwise_body(g, cc, p[0])) for _ in range(n)]
    if g.bad("computation", "conditional"):  # a branch returning another element type
        t2 = g.pick_type(_NUM - {s.element_type})
        branches[-1] = g.sub("branch", [s], lambda cc, p: cc.add("convert", A(t2, s.dimensions), [p[0]]))
    if boolean:
        sel = g.need(c, "pred", ())
        attrs = f", true_computation={branches[0]}, false_computation={branches[1]}"
    else:
        sel = g.index_scalar(c, n, "s32")  # out-of-range selectors run the last branch
        attrs = ", branch_computations={" + ", ".join(branches) + "}"
    c.add("conditional", s, [sel] + [x] * n, attrs)


def _op_call(g: Generator, c: _Comp) -> None:
    x = g.need(c, types=_NUM)
    s = c.array(x)
    fn = g.sub("callee", [s], lambda cc, p: _elementwise_body(g, cc, p[0]))
    c.add("call", s, [x], f", to_apply={fn}")


def _op_tuple(g: Generator, c: _Comp) -> None:
    xs = [g.need(c) for _ in range(g.rng.randint(1, 3))]
    shape = TupleShape(tuple(c.shape(v) for v in xs))
    t = c.add("tuple", shape, xs, pool=False)
    if g.bad("attribute", "get-tuple-element"):
        c.add("get-tuple-element", shape.elements[0], [t], f", index={len(xs)}")
        return
    _unpack(c, c.insts[-1])


def _op_reduce_precision(g: Generator, c: _Comp) -> None:
    x = g.need(c, types=_F)
    s = c.array(x)
    e, m = g.rng.choice(((5, 10), (8, 7), (4, 3), (5, 2), (8, 23), (11, 52), (2, 1)))
    c.add("reduce-precision", s, [x], f", exponent_bits={e}, mantissa_bits={m}")


_OPS: list[tuple[Callable[[Generator, _Comp], None], int]] = [
    (_op_unary, 10), (_op_binary, 10), (_op_compare, 4), (_op_select_clamp, 3), (_op_convert, 5),
    (_op_bitcast_convert, 2), (_op_broadcast, 2), (_op_reshape, 2), (_op_transpose, 2),
    (_op_slice, 2), (_op_concatenate, 2), (_op_pad, 2), (_op_reverse, 1), (_op_iota, 1),
    (_op_dynamic_slice, 2), (_op_dynamic_update_slice, 2), (_op_reduce, 4), (_op_reduce_window, 3),
    (_op_dot, 3), (_op_convolution, 3), (_op_gather, 3), (_op_scatter, 3), (_op_sort, 2),
    (_op_map, 1), (_op_while, 1), (_op_conditional, 1), (_op_call, 1), (_op_tuple, 1),
    (_op_reduce_precision, 1),
]


def generate(seed: int, **kw: Any) -> Case:
    """The module and inputs of ``seed`` (the same on every machine and run)."""
    return Generator(seed, **kw).case()


# --------------------------------------------------------------------------------------------
# XLA in a child process


def _xla_request(req: tuple[Any, ...]) -> Any:
    """Serve one request in the worker (jax imported here only)."""
    from hloscope.xla import client as xla

    kind = req[0]
    if kind == "parse":
        module = xla.parse_hlo_text(req[1])
        shapes = {}
        for comp in module.computations():
            for inst in comp.instructions():
                line = inst.to_string()
                lhs, _, rhs = line.partition(" = ")
                opcode = xla._opcode_text(inst)
                shapes[lhs.lstrip("%")] = (opcode, rhs[: rhs.index(f" {opcode}(")])
        return module.to_string(xla._print_options(metadata=False)), shapes
    if kind == "cost":
        return xla.cost_analysis(req[1])
    if kind == "compile":
        xla.compile_hlo(req[1])
        return None
    if kind == "run":
        compiled = xla.compile_hlo(req[1])
        return compiled.run(req[2])
    if kind == "run-optimized":  # the outputs and the module XLA:CPU compiled after optimizing
        compiled = xla.compile_hlo(req[1])
        return compiled.run(req[2]), compiled.executable.hlo_modules()[0].to_string()
    raise ValueError(kind)


def _worker_main() -> None:
    """The child's loop: length-prefixed pickled requests on stdin, replies on the real stdout."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # XLA's own prints must not corrupt the reply stream
    inp = sys.stdin.buffer
    while True:
        header = inp.read(8)
        if len(header) < 8:
            return
        req = pickle.loads(inp.read(struct.unpack("<Q", header)[0]))
        try:
            reply: tuple[str, Any] = ("ok", _xla_request(req))
        except Exception as e:  # XLA's errors are data here, not failures of the worker
            reply = ("error", f"{type(e).__name__}: {e}")
        data = pickle.dumps(reply)
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()


class XlaWorker:
    """XLA's parser, cost analysis and XLA:CPU in a child process that may die.

    ``call(kind, ...)`` returns ``(status, value)``: ``"ok"`` with the result, ``"error"`` with
    XLA's message, ``"abort"`` with the tail of the child's stderr when it died (CHECK failure,
    segfault), or ``"timeout"``. A dead or stuck child is replaced on the next call.
    """

    def __init__(self, timeout: float = 120.0) -> None:
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr_path = ""
        self.aborts = 0

    def _start(self) -> subprocess.Popen[bytes]:
        fd, self.stderr_path = tempfile.mkstemp(prefix="fuzz-xla-", suffix=".log")
        env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="1")
        env["PYTHONPATH"] = os.pathsep.join([str(_ROOT / "src"), env.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "_worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=fd)
        os.close(fd)
        return self.proc

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        if self.stderr_path:
            Path(self.stderr_path).unlink(missing_ok=True)
            self.stderr_path = ""

    def __enter__(self) -> XlaWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, n: int, deadline: float) -> bytes | None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        chunks, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, n - got)
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def call(self, *req: Any) -> tuple[str, Any]:
        proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
        assert proc.stdin is not None
        data = pickle.dumps(req)
        deadline = time.monotonic() + self.timeout
        try:
            proc.stdin.write(struct.pack("<Q", len(data)) + data)
            proc.stdin.flush()
            header = self._read(8, deadline)
            body = None if header is None else self._read(struct.unpack("<Q", header)[0], deadline)
        except (EOFError, BrokenPipeError):
            proc.wait()
            lines = Path(self.stderr_path).read_text(errors="replace").strip().splitlines()
            # The CHECK that failed says more than the stack trace under it.
            tail = [ln for ln in lines if "Check failed" in ln or "F0" in ln[:3]][:1] or lines[-2:]
            self.close()
            self.aborts += 1
            return "abort", f"exit {proc.returncode}: " + " | ".join(tail)
        if body is None:
            self.close()
            return "timeout", f"no answer within {self.timeout:.0f} s"
        return pickle.loads(body)


# --------------------------------------------------------------------------------------------
# The checks


@dataclasses.dataclass
class Failure:
    """One disagreement: which check, its class, the opcode (and type) it is pinned on, details."""

    check: str
    kind: str
    where: str
    detail: str
    inst: str = ""  # the instruction it is pinned on, when one is

    @property
    def signature(self) -> tuple[str, str, str]:
        return self.check, self.kind, self.where

    def __str__(self) -> str:
        return f"[{self.check}] {self.kind} @ {self.where}: {self.detail}"


@dataclasses.dataclass
class Outcome:
    """What ``check_case`` found: failures, and per check ``pass``/``fail``/``skip`` plus notes
    (XLA aborts, XLA:CPU refusing a module hloscope and XLA's parser hold valid, ...)."""

    failures: list[Failure] = dataclasses.field(default_factory=list)
    status: dict[str, str] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    xla_valid: bool | None = None
    values: tuple[dict[str, Any], dict[str, Any]] | None = None  # (hloscope's, XLA's) by name


def _parse_shape(text: str) -> Shape:
    from hloscope.text import parse_shape

    return parse_shape(text)


def _where(inst: Any) -> str:
    """``opcode`` plus the element types involved, the key failures are classed by."""
    def types(s: Shape) -> str:
        return ",".join(leaf.element_type for _, leaf in s.leaves())

    ops = "/".join(dict.fromkeys(types(o.shape) for o in inst.operands))
    return f"{inst.opcode.text}({ops})->{types(inst.shape)}"


def check_case(case: Case, worker: XlaWorker, checks: str = "abcde", *,
               compile_verdict: bool = False) -> Outcome:
    """Run the checks named in ``checks`` on ``case`` (see the module docstring)."""
    import hloscope as hs
    from hloscope.ir.shape_inference import ShapeInferenceError, infer_shape, same_shape

    out = Outcome()
    text = case.text()
    try:
        module = hs.parse(text)
        printed = hs.to_text(module)
    except Exception as e:
        out.failures.append(Failure("a", "hloscope-parse", "-", f"{type(e).__name__}: {e}"))
        out.status["a"] = "fail"
        return out
    insts = {i.name: i for c in module.computations for i in c.instructions}

    # (a) XLA reads hloscope's printing as the module it reads from the original text.
    status, orig = worker.call("parse", text)
    if status == "abort":
        out.notes.append(f"xla-abort parse: {orig}")
        return out
    if status != "ok":
        out.notes.append(f"xla-rejects-original: {str(orig)[:200]}")
    if "a" in checks:
        s2, back = worker.call("parse", printed)
        out.status["a"] = "pass"
        if s2 in ("abort", "timeout"):
            out.notes.append(f"xla-{s2} parse of the printing: {back}")
            out.status["a"] = "skip"
        elif s2 != "ok":
            out.failures.append(Failure("a", "xla-rejects-printed", "-", str(back)[:500]))
        elif status == "ok" and back[0].split("\n", 1)[1] != orig[0].split("\n", 1)[1]:
            a_lines = orig[0].splitlines()
            b_lines = back[0].splitlines()
            diff = next(((x, y) for x, y in zip(a_lines, b_lines) if x != y), ("", ""))
            out.failures.append(Failure("a", "printed-differs", "-",
                                        f"XLA reads {diff[0].strip()!r} from the original, "
                                        f"{diff[1].strip()!r} from hloscope's printing"))
        if any(f.check == "a" for f in out.failures):
            out.status["a"] = "fail"

    # (b), (c): XLA's verdict and inferred shapes from the shapeless text.
    s3, inferred = worker.call("parse", case.text(shapeless=True))
    if s3 == "abort":
        out.notes.append(f"xla-abort shapeless parse: {inferred}")
        return out
    xla_reason = None
    shapes: dict[str, Shape] = {}
    all_shapes: dict[str, Shape] = {}
    if s3 != "ok":
        xla_reason = str(inferred).replace("\n", " ")[:300]
    else:
        for name, (_, st) in inferred[1].items():
            shapes[name] = _parse_shape(st)
        all_shapes = dict(shapes)
        omitted = case.inferred()
        shapes = {n: s for n, s in shapes.items() if n in omitted}
        for name, s in shapes.items():
            inst = insts.get(name)
            if inst is not None and not same_shape(s, inst.shape) and xla_reason is None:
                xla_reason = (f"{name}: XLA infers {shape_text(s)}, declared "
                              f"{shape_text(inst.shape)}")
    xla_valid = xla_reason is None
    diagnostics = [d for d in hs.verify(module) if d.severity == "error"]
    if xla_valid and (compile_verdict or diagnostics):
        # Note [XLA's verdict]: the parser's shape inference is laxer than XLA:CPU (mixed float
        # precision, declared shapes it does not infer), so a disagreement asks the compiler.
        s4, msg = worker.call("compile", text)
        if s4 == "error" and _verifier_message(str(msg)):
            xla_valid, xla_reason = False, f"XLA:CPU's verifier: {str(msg)[:300]}"
        elif s4 in ("abort", "timeout"):
            out.notes.append(f"xla-{s4} compile: {msg}")
            return out  # no verdict from XLA: nothing to compare
    if xla_valid and (case.mutation or "").startswith("comparison-type:"):
        # HloVerifier's rule ("Expected comparison type ..."); XLA:CPU applies it only to
        # compares that survive its StableHLO round trip (empty or constant ones are folded
        # away first), so the compiler is no reliable judge of it.
        xla_valid, xla_reason = False, "HloVerifier: the comparison type does not fit the operands"
    if xla_valid and diagnostics and all(_folded_before_verifying(insts.get(d.instruction or ""), d.message)
                                         for d in diagnostics):
        xla_valid, xla_reason = False, "HloVerifier: mixed float precision (checked as written)"
    out.xla_valid = xla_valid
    if "b" in checks:
        out.status["b"] = "pass"
        if xla_valid and diagnostics:
            inst = insts.get(diagnostics[0].instruction or "")
            out.failures.append(Failure("b", "hloscope-rejects-valid", _where(inst) if inst else "-",
                                        diagnostics[0].message[:400], getattr(inst, "name", "")))
        elif not xla_valid and not diagnostics:
            out.failures.append(Failure("b", "hloscope-accepts-invalid",
                                        case.mutation or "-", str(xla_reason)))
        if any(f.check == "b" for f in out.failures):
            out.status["b"] = "fail"
    if "c" in checks and s3 == "ok":
        out.status["c"] = "pass"
        for name, s in shapes.items():
            inst = insts.get(name)
            if inst is None or inst.opcode.text not in PARSER_INFERS:
                continue
            # Compare only where hloscope sees the operands XLA saw.
            if not all(same_shape(all_shapes.get(o.name, o.shape), o.shape) for o in inst.operands):
                continue
            try:
                mine = infer_shape(inst)
            except ShapeInferenceError as e:
                if not xla_valid:
                    continue  # XLA's inference is laxer than its verifier (mixed precision)
                out.failures.append(Failure("c", "hloscope-cannot-infer", _where(inst), f"{name}: {e}", name))
                continue
            if mine is not None and not same_shape(mine, s):
                out.failures.append(Failure("c", "inferred-shape", _where(inst),
                                            f"{name}: XLA {shape_text(s)}, hloscope {shape_text(mine)}",
                                            name))
        if any(f.check == "c" for f in out.failures):
            out.status["c"] = "fail"
    if not xla_valid or diagnostics:
        return out

    # (d) cost analysis, on valid modules only (XLA's may CHECK-fail on malformed ones).
    if "d" in checks:
        s5, cost = worker.call("cost", text)
        if s5 != "ok":
            out.notes.append(f"xla-cost-{s5}: {str(cost)[:200]}")
        else:
            mine = hs.cost(module).total
            out.status["d"] = "pass"
            for key, got in (("flops", mine.flops), ("transcendentals", mine.transcendentals),
                             ("bytes accessed", mine.bytes_accessed)):
                want = float(cost.get(key, 0.0))
                if not math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-9):
                    culprit = _cost_culprit(module, key)
                    out.failures.append(Failure("d", f"cost-{key.split()[0]}", culprit,
                                                f"XLA {want:g}, hloscope {got:g}"))
                    out.status["d"] = "fail"

    # (e) execution.
    if "e" in checks:
        _check_execution(case, module, worker, out)
    return out


def _folded_before_verifying(inst: Any, message: str) -> bool:
    """Whether XLA:CPU, having accepted a module hloscope rejects for mixing float precisions,
    only did so because it folded the empty instruction away before its verifier ran (Note
    [XLA's verdict]); the verifier's rule is then taken as written."""
    if inst is None or "mixes floating-point types" not in message:
        return False
    return any(leaf.element_count == 0 for s in [inst.shape, *(o.shape for o in inst.operands)]
               for _, leaf in s.leaves())


def _verifier_message(msg: str) -> bool:
    """Whether XLA:CPU refused a module for being malformed (its conversion to StableHLO or its
    verifier), not for lacking a kernel."""
    keys = ("error: loc(", "Expected instruction to have shape", "INVALID_ARGUMENT",
            "mixed precision", "hlo verifier")
    return any(k in msg for k in keys)


def _cost_culprit(module: Any, key: str) -> str:
    """The opcodes with a nonzero share of ``key`` (the reducer narrows them down to one)."""
    from hloscope.analysis.cost import analyze_cost

    per = analyze_cost(module).per_instruction
    attr = {"flops": "flops", "transcendentals": "transcendentals", "bytes accessed": "bytes_accessed"}[key]
    ops = sorted({i.opcode.text for i, c in per.items() if getattr(c, attr)})
    return ",".join(ops) or "-"


# --------------------------------------------------------------------------------------------
# Comparing outputs (Note [Comparing outputs])


def _tolerance_tables() -> dict[str, dict[np.dtype[Any], dict[str, float]]]:
    """The project's per-dtype tables (tests/interpret/tolerances.py), widened to the types the
    fuzzer adds: fp8 (two units in the last place), c64 and c128 (as f32 and f64)."""
    import importlib.util

    path = _ROOT / "tests" / "interpret" / "tolerances.py"
    spec = importlib.util.spec_from_file_location("_fuzz_tolerances", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    extra = {np.dtype(ml_dtypes.float8_e4m3fn): dict(rtol=2 ** -2, atol=2 ** -6),
             np.dtype(ml_dtypes.float8_e5m2): dict(rtol=2 ** -1, atol=2 ** -14)}
    tables = {}
    for name in ("REDUCTION", "LINALG"):
        table = dict(getattr(mod, name))
        table.setdefault(np.dtype(np.complex64), table[np.dtype(np.float32)])
        table.setdefault(np.dtype(np.complex128), table[np.dtype(np.float64)])
        for k, v in extra.items():
            table.setdefault(k, v)
        tables[name] = table
    return tables


_TOLERANCES: dict[str, dict[np.dtype[Any], dict[str, float]]] = {}

# Opcodes whose float results must be bit-exact: they move or pick values, or are exact
# operations (negate, abs, max, min, compare) whose results have one right answer.
_EXACT = frozenset({
    "parameter", "constant", "broadcast", "reshape", "transpose", "slice", "concatenate", "pad",
    "reverse", "dynamic-slice", "dynamic-update-slice", "gather", "tuple", "get-tuple-element",
    "copy", "bitcast-convert", "select", "clamp", "sort", "negate", "abs", "maximum", "minimum",
    "compare", "iota", "real", "imag", "is-finite", "sign", "floor", "ceil", "round-nearest-afz",
    "round-nearest-even", "convert", "reduce-precision", "complex", "not", "and", "or", "xor",
})
_LINALG = frozenset({"dot", "convolution"})


# Exact for real operands only: a complex sign divides by |z|, which rounds.
_EXACT_FOR_REAL = frozenset({"sign"})


def _table_for(opcode: str, dtype: np.dtype[Any] | None = None) -> dict[np.dtype[Any], dict[str, float]] | None:
    if opcode in _EXACT and not (opcode in _EXACT_FOR_REAL and dtype is not None and dtype.kind == "c"):
        return None
    if not _TOLERANCES:
        _TOLERANCES.update(_tolerance_tables())
    return _TOLERANCES["LINALG" if opcode in _LINALG else "REDUCTION"]


def _leaves(value: Any, prefix: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], np.ndarray]]:
    if isinstance(value, tuple):
        for k, v in enumerate(value):
            yield from _leaves(v, (*prefix, k))
    else:
        yield prefix, np.asarray(value)


def _as_float(a: np.ndarray) -> np.ndarray:
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


_LOW_FLOATS = tuple(np.dtype(t) for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                           ml_dtypes.float8_e5m2))


def _is_floating(dtype: np.dtype[Any]) -> bool:
    return dtype.kind in "cf" or dtype in _LOW_FLOATS


def _tiny(dtype: np.dtype[Any]) -> float:
    real = np.dtype(np.float32 if dtype == np.complex64 else np.float64 if dtype == np.complex128 else dtype)
    return float(ml_dtypes.finfo(real).tiny)


def _flush(x: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """``x`` (float64) with the subnormals of ``dtype`` replaced by zeros of their sign."""
    return np.where(np.abs(x) < _tiny(dtype), np.copysign(0.0, x), x)


def compare_arrays(ours: np.ndarray, theirs: np.ndarray, opcode: str) -> str | None:
    """None when ``ours`` matches XLA's ``theirs`` for a result of ``opcode``, else what differs
    (the first differing element, with both values)."""
    if ours.dtype != theirs.dtype:
        return f"dtype {ours.dtype} vs XLA's {theirs.dtype}"
    if ours.shape != theirs.shape:
        return f"shape {ours.shape} vs XLA's {theirs.shape}"
    if ours.size == 0:
        return None
    kind = ours.dtype.kind
    if not _is_floating(ours.dtype):
        bad = ours != theirs
    else:
        a, b = _as_float(ours), _as_float(theirs)
        parts = [(a.real, b.real), (a.imag, b.imag)] if kind == "c" else [(a, b)]
        table = _table_for(opcode, ours.dtype)
        tol = table.get(ours.dtype) if table is not None else None
        bad = np.zeros(ours.shape, dtype=bool)
        for x, y in parts:
            nan = np.isnan(x) | np.isnan(y)
            # Note [Legitimate differences]: XLA:CPU runs with subnormals flushed to zero.
            x, y = _flush(x, ours.dtype), _flush(y, ours.dtype)
            bad |= np.isnan(x) != np.isnan(y)
            if tol is None:
                # Bit-exact, -0.0 included (signbit), NaNs equal as NaNs.
                bad |= ~nan & ((x != y) | (np.signbit(x) != np.signbit(y)))
            else:
                inf = np.isinf(x) | np.isinf(y)
                bad |= inf & ~nan & (x != y)
                fin = ~nan & ~inf
                with np.errstate(invalid="ignore", over="ignore"):
                    bad |= fin & (np.abs(x - y) > tol["atol"] + tol["rtol"] * np.abs(y))
    if not bad.any():
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())}/{bad.size} elements differ, first at {list(idx)}: "
            f"hloscope {ours[idx]!r}, XLA {theirs[idx]!r}")


def _producer(inst: Any) -> str:
    """The opcode whose arithmetic produced ``inst``'s value (through get-tuple-element)."""
    while inst.opcode.text == "get-tuple-element":
        inst = inst.operands[0]
    if inst.opcode.text in ("while", "conditional", "call"):
        return "add"  # bodies are elementwise arithmetic: the elementwise tolerance
    return inst.opcode.text


def _named_values(module: Any, value: Any) -> dict[str, Any]:
    """The root's value split by the instructions it holds (Note [Comparing outputs])."""
    root = module.entry.root
    if root.opcode.text == "tuple":
        return {o.name: v for o, v in zip(root.operands, value)}
    return {root.name: value}


def _check_execution(case: Case, module: Any, worker: XlaWorker, out: Outcome) -> None:
    import hloscope as hs


    status, theirs = worker.call("run", case.text(), case.inputs)
    if status in ("abort", "timeout"):
        out.notes.append(f"xla-{status} run: {theirs}")
        return
    if status == "error":
        msg = str(theirs).replace("\n", " ")
        if _verifier_message(msg):
            out.failures.append(Failure("b", "hloscope-accepts-invalid", case.mutation or "-",
                                        f"XLA:CPU refuses: {msg[:400]}"))
            out.status["b"] = "fail"
        else:
            out.notes.append(f"xla-cpu-refuses: {msg[:300]}")
        return
    out.status["e"] = "pass"
    try:
        ours = _run_hloscope(module, case.inputs)
    except Exception as e:
        inst = getattr(e, "instruction", None)
        where = _where(inst) if inst is not None else "-"
        out.failures.append(Failure("e", "hloscope-run-error", where,
                                    f"{type(e).__name__}: {str(e).splitlines()[0][:300]}",
                                    getattr(inst, "name", "")))
        out.status["e"] = "fail"
        return
    out.values = (_named_values(module, ours), _named_values(module, theirs))
    failure = _compare_outputs(module, *out.values)
    if failure is not None:
        flushed = _flushed_case(case)
        if flushed is not None:
            # Note [Legitimate differences]: XLA:CPU treats subnormal inputs as zeros (DAZ).
            try:
                again = _compare_outputs(module, _named_values(
                    module, _run_hloscope(hs.parse(flushed.text()), flushed.inputs)), out.values[1])
            except Exception:
                again = failure
            if again is None:
                out.notes.append(f"xla-cpu-flushes-subnormal-inputs: {failure}")
                return
        out.failures.append(failure)
        out.status["e"] = "fail"


def _run_hloscope(module: Any, inputs: list[Any]) -> Any:
    import hloscope as hs

    # Overflow and NaN warnings are numpy doing IEEE arithmetic, as XLA does silently.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return hs.run(module, inputs)


def _flushed_case(case: Case) -> Case | None:
    """``case`` with the subnormals of its inputs and constants flushed to signed zeros, or
    None when it has none."""
    inputs = [_flush_input(v) for v in case.inputs]
    changed = any(a is not b for a, b in zip(inputs, case.inputs))
    comps = []
    for comp in case.comps:
        insts = []
        for inst in comp.insts:
            if inst.value is not None and isinstance(inst.shape, ArrayShape):
                v = _flush_input(inst.value)
                if v is not inst.value:
                    inst = dataclasses.replace(inst, value=v, literal=literal_text(v, inst.shape.element_type))
                    changed = True
            insts.append(inst)
        comps.append(Comp(comp.name, insts, comp.root))
    return Case(case.seed, comps, inputs, case.mutation) if changed else None


def _flush_input(v: Any) -> Any:
    """``v`` with its subnormals replaced by signed zeros (``v`` itself when it has none)."""
    if isinstance(v, tuple):
        out = tuple(_flush_input(x) for x in v)
        return v if all(a is b for a, b in zip(out, v)) else out
    a = np.asarray(v)
    if not _is_floating(a.dtype) or a.size == 0:
        return v
    wide = _as_float(a)
    parts = [wide.real, wide.imag] if a.dtype.kind == "c" else [wide]
    if not any(((np.abs(p) < _tiny(a.dtype)) & (p != 0)).any() for p in parts):
        return v
    flat = [_flush(p, a.dtype) for p in parts]
    if a.dtype.kind != "c":
        return flat[0].astype(a.dtype)
    out = np.empty(a.shape, a.dtype)  # not re + 1j * im: 1j * inf is nan + inf j
    out.real, out.imag = flat
    return out


def _compare_outputs(module: Any, mine_by: dict[str, Any], theirs_by: dict[str, Any]) -> Failure | None:
    """The first instruction whose value differs (Note [Comparing outputs]), as a failure."""
    insts = {i.name: i for i in module.entry.instructions}
    # Whether each value is bit-identical in both: an exact operation (max, compare, convert,
    # data movement) of operands that differ in rounding may differ too, legitimately.
    exact: dict[str, bool] = {}
    for name in mine_by:  # instruction order: the first difference is the culprit
        inst = insts[name]
        inputs_exact = all(exact.get(o.name, True) for o in inst.operands)
        exact[name] = True
        for (path, a), (_, b) in zip(_leaves(mine_by[name]), _leaves(theirs_by[name])):
            exact[name] &= compare_arrays(a, b, "copy") is None
            if inputs_exact:
                msg, kind = compare_arrays(a, b, _producer(inst)), "value"
            elif _is_floating(a.dtype):
                msg, kind = compare_arrays(a, b, "add"), "value-of-inexact-operands"
            else:
                continue  # integers or pred from operands that differ in rounding: no verdict
            if msg is not None:
                return Failure("e", kind, _where(inst), f"{name}{list(path) if path else ''}: {msg}", name)
    return None


# --------------------------------------------------------------------------------------------
# Reducing a failure to a small module


def _called(comp: Comp, names: set[str]) -> set[str]:
    import re

    found = set()
    for inst in comp.insts:
        for tok in re.findall(r"[\w.-]+", inst.attrs):
            if tok in names:
                found.add(tok)
    return found


def _rebuild(case: Case, insts: list[Inst], root: str, inputs: dict[str, Any]) -> Case:
    """A case with entry ``insts`` (parameters renumbered, dead code and unused computations
    dropped); ``inputs`` maps parameter names to their values."""
    by_name = {i.name: i for i in insts}
    live: set[str] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if n not in live:
            live.add(n)
            stack.extend(by_name[n].operands)
    kept = [dataclasses.replace(i) for i in insts if i.name in live]
    kept.sort(key=lambda i: i.opcode != "parameter")
    values = []
    for k, inst in enumerate(i for i in kept if i.opcode == "parameter"):
        inst.number = k
        values.append(inputs[inst.name])
    entry = Comp(case.entry.name, kept, root)
    names = {c.name for c in case.comps[:-1]}
    reach, todo = set(), [entry]
    while todo:
        for n in _called(todo.pop(), names) - reach:
            reach.add(n)
            todo.append(next(c for c in case.comps if c.name == n))
    comps = [c for c in case.comps[:-1] if c.name in reach] + [entry]
    return Case(case.seed, comps, values, case.mutation)


def _param_inputs(case: Case) -> dict[str, Any]:
    return {i.name: v for i, v in zip((i for i in case.entry.insts if i.opcode == "parameter"),
                                       case.inputs)}


def _zeros(shape: Shape) -> Any:
    if isinstance(shape, TupleShape):
        return tuple(_zeros(s) for s in shape.elements)
    return np.zeros(shape.dimensions, PRIMITIVE_TYPES[shape.element_type].dtype)


def _as_parameter(inst: Inst, value: Any) -> tuple[Inst, Any]:
    return Inst(inst.name, inst.shape, "parameter", [], number=0), \
        value if value is not None else _zeros(inst.shape)


def reduce_case(case: Case, failure: Failure, worker: XlaWorker, *, compile_verdict: bool = False,
                log: Callable[[str], None] = lambda s: None) -> Case:
    """A smaller case that still fails like ``failure``: the failing instruction cut out with
    its operands as parameters, other instructions replaced by parameters holding their values,
    root elements dropped, and elementwise arrays shrunk to the differing elements."""
    checks = failure.check + ("b" if failure.check != "b" else "")

    def same(f: Failure) -> bool:
        if failure.check == "d":
            return f.check == "d" and f.kind == failure.kind
        return f.signature == failure.signature

    def fails(c: Case) -> Outcome | None:
        out = check_case(c, worker, checks, compile_verdict=compile_verdict)
        return out if any(same(f) for f in out.failures) else None

    values: dict[str, Any] = dict(_param_inputs(case))
    first = check_case(case, worker, checks, compile_verdict=compile_verdict)
    if first.values is not None:
        values.update(first.values[0])
    best = case
    # 1. Cut the culprit out: its operands become parameters (values as hloscope computed them).
    if failure.inst and failure.inst in {i.name for i in case.entry.insts}:
        tgt = case.entry.inst(failure.inst)
        for keep_constants in (False, True):
            insts, inputs = [], {}
            for o in dict.fromkeys(tgt.operands):
                src = case.entry.inst(o)
                if src.opcode == "constant" and keep_constants:
                    insts.append(src)
                    continue
                p, v = _as_parameter(src, values.get(o))
                insts.append(p)
                inputs[o] = v
            cut = _rebuild(case, insts + [tgt], tgt.name, inputs)
            if fails(cut):
                best = cut
                log(f"cut to {tgt.opcode}")
                break
    # 2. Replace instructions by parameters and drop root elements while the failure stays.
    changed = True
    while changed:
        changed = False
        entry = best.entry
        inputs = _param_inputs(best)
        root = entry.inst(entry.root)
        cands: list[Case] = []
        if root.opcode == "tuple":
            for k in range(len(root.operands)):
                ops = root.operands[:k] + root.operands[k + 1:]
                if not ops:
                    continue
                if len(ops) == 1:
                    cands.append(_rebuild(best, entry.insts, ops[0], inputs))
                else:
                    new_root = dataclasses.replace(root, operands=ops, shape=TupleShape(
                        tuple(entry.inst(o).shape for o in ops)))
                    cands.append(_rebuild(best, [new_root if i is root else i for i in entry.insts],
                                          entry.root, inputs))
        for inst in reversed(entry.insts):
            if inst.opcode in ("parameter",) or inst is root or inst.name == failure.inst:
                continue
            p, v = _as_parameter(inst, values.get(inst.name))
            cands.append(_rebuild(best, [p if i is inst else i for i in entry.insts], entry.root,
                                  {**inputs, inst.name: v}))
        for cand in cands:
            if len(cand.text()) < len(best.text()) and fails(cand):
                best, changed = cand, True
                log(f"reduced to {len(best.entry.insts)} instructions")
                break
    if failure.check == "e":
        best = _shrink_elements(best, fails, log)
    return best


_ELEMENTWISE = frozenset(UNARY_TYPES) | frozenset(BINARY_TYPES) | {
    "compare", "select", "clamp", "convert", "reduce-precision"}


def _shrink_elements(case: Case, fails: Callable[[Case], Outcome | None],
                     log: Callable[[str], None]) -> Case:
    """For an elementwise root over parameters, keep only one differing element."""
    e = case.entry
    root = e.inst(e.root)
    if root.opcode not in _ELEMENTWISE or not isinstance(root.shape, ArrayShape) or root.shape.rank == 0:
        return case
    dims = root.shape.dimensions
    ops = [e.inst(o) for o in root.operands]
    if any(o.opcode != "parameter" or not isinstance(o.shape, ArrayShape)
           or o.shape.dimensions not in (dims, ()) for o in ops):
        return case
    out = fails(case)
    if out is None or out.values is None:
        return case
    mine, theirs = out.values[0][root.name], out.values[1][root.name]
    inputs = _param_inputs(case)
    for flat in list(np.flatnonzero(_mismatch_mask(np.asarray(mine), np.asarray(theirs), root.opcode)))[:8]:
        idx = np.unravel_index(flat, dims)
        insts, new_inputs = [], {}
        for inst in e.insts:
            s = inst.shape
            if isinstance(s, ArrayShape) and s.dimensions == dims and (inst.opcode == "parameter" or inst is root):
                inst = dataclasses.replace(inst, shape=A(s.element_type, (1,)))
            insts.append(inst)
            if inst.opcode == "parameter":
                v = np.asarray(inputs[inst.name])
                new_inputs[inst.name] = v[idx].reshape(1) if v.shape == dims else v
        cand = _rebuild(case, insts, e.root, new_inputs)
        if fails(cand):
            log("shrunk to one element")
            return cand
    return case


def _mismatch_mask(ours: np.ndarray, theirs: np.ndarray, opcode: str) -> np.ndarray:
    if ours.shape != theirs.shape or ours.dtype != theirs.dtype:
        return np.ones(ours.shape, dtype=bool)
    flat_a, flat_b = ours.reshape(-1), theirs.reshape(-1)
    return np.array([compare_arrays(flat_a[k:k + 1], flat_b[k:k + 1], opcode) is not None
                     for k in range(flat_a.size)]).reshape(ours.shape)


def describe_repro(small: Case, failure: Failure, worker: XlaWorker) -> str:
    """The repro text of a reduced case, its comment saying what differs. For check e the
    module is also run with its inputs as constants, which XLA folds with its evaluator
    (HloEvaluator) instead of compiling: when the evaluator sides with hloscope, the difference
    is XLA:CPU's compiled code against XLA's own reference, and the comment says so."""
    again = next((f for f in check_case(small, worker, failure.check + "b").failures
                  if f.check == failure.check), failure)
    head = f"seed {small.seed}: [{again.check}] {again.kind} @ {again.where}: {again.detail}"
    text = repro_text(small, head)
    if failure.check != "e":
        return text
    import hloscope as hs

    try:
        module = hs.parse(text)
        status, reply = worker.call("run-optimized", text, [])
        ours = _run_hloscope(module, [])
    except Exception as e:
        return repro_text(small, f"{head} | evaluator check failed: {e}")
    if status != "ok":
        return repro_text(small, f"{head} | XLA with constant inputs: {status}")
    folded, optimized = reply
    root = module.entry.root
    mine = compare_arrays(_first_leaf_of(ours), _first_leaf_of(folded), _producer(root))
    if f" {root.opcode.text}(" in optimized.split("ENTRY", 1)[-1] or "fusion(" in optimized:
        verdict = ("with constant inputs XLA:CPU still compiles it (not folded): "
                   + ("then it agrees with hloscope" if mine is None else "same difference"))
    elif mine is None:
        verdict = ("XLA's evaluator (constant inputs, folded) agrees with hloscope: only XLA:CPU's "
                   "compiled code differs")
    else:
        verdict = "XLA's evaluator (constant inputs, folded) differs from hloscope too"
    return repro_text(small, f"{head} | {verdict}")


def _first_leaf_of(value: Any) -> np.ndarray:
    return next(_leaves(value))[1]


def repro_text(case: Case, comment: str) -> str:
    """``case`` as a self-contained module: entry parameters become constants holding their
    inputs, under a one-line comment."""
    inputs = _param_inputs(case)
    insts = []
    for inst in case.entry.insts:
        if inst.opcode == "parameter" and isinstance(inst.shape, ArrayShape):
            lit = literal_text(np.asarray(inputs[inst.name]), inst.shape.element_type)
            inst = Inst(inst.name, inst.shape, "constant", [], literal=lit)
        insts.append(inst)
    entry = Comp(case.entry.name, insts, case.entry.root)
    body = Case(case.seed, case.comps[:-1] + [entry], [], None).text()
    return f"// {comment}\n{body}"


# --------------------------------------------------------------------------------------------
# The campaign and the command line


def _seed_range(text: str) -> range:
    if ":" in text:
        a, b = text.split(":")
        return range(int(a), int(b))
    return range(int(text), int(text) + 1)


def _note_class(note: str) -> str:
    head, _, msg = note.partition(": ")
    if head.startswith("xla-cpu-refuses"):
        return head + ": " + msg.split(":")[2 if msg.startswith("XlaCompileError") else 0][:70].strip()
    return head


def campaign(seeds: range, checks: str, *, compile_verdict: bool = False, out_dir: Path | None = None,
             reduce: bool = False, verbose: bool = False) -> dict[str, Any]:
    """Check every seed; returns (and with ``out_dir`` writes) counts per check, the failures
    grouped by signature with their seeds, and XLA's aborts and refusals."""
    status: dict[str, Counter[str]] = {c: Counter() for c in checks}
    groups: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    notes: dict[str, list[int]] = {}
    started = time.monotonic()
    log = (out_dir / "failures.jsonl").open("w") if out_dir else None
    with XlaWorker() as worker:
        for n, seed in enumerate(seeds):
            case = generate(seed)
            try:
                out = check_case(case, worker, checks, compile_verdict=compile_verdict)
            except Exception as e:  # a bug of the fuzzer itself: report it, keep going
                out = Outcome([Failure("fuzz", "runner-error", "-", f"{type(e).__name__}: {e}")])
            for c in checks:
                status[c][out.status.get(c, "skip")] += 1
            for note in out.notes:
                notes.setdefault(_note_class(note), []).append(seed)
            for f in out.failures:
                groups.setdefault(f.signature, []).append((seed, f.detail))
                if log:
                    log.write(json.dumps({"seed": seed, **dataclasses.asdict(f)}) + "\n")
                if verbose:
                    print(f"seed {seed}: {f}", flush=True)
            if (n + 1) % 100 == 0:
                print(f"... {n + 1} modules, {sum(len(v) for v in groups.values())} failures, "
                      f"{time.monotonic() - started:.0f} s", flush=True)
        summary = {
            "modules": len(seeds), "seconds": round(time.monotonic() - started, 1),
            "checks": {c: dict(v) for c, v in status.items()},
            "failures": [{"check": k[0], "kind": k[1], "where": k[2], "count": len(v),
                          "seeds": [s for s, _ in v[:10]], "example": v[0][1]}
                         for k, v in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1])))],
            "notes": {k: {"count": len(v), "seeds": v[:10]}
                      for k, v in sorted(notes.items(), key=lambda kv: -len(kv[1]))},
            "xla_aborts": worker.aborts,
        }
        if out_dir:  # before reducing, which may take long
            (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
        if reduce and out_dir:
            repro_dir = out_dir / "repros"
            repro_dir.mkdir(exist_ok=True)
            for k, (sig, items) in enumerate(sorted(groups.items())):
                seed = items[0][0]
                case = generate(seed)
                failure = next((f for f in check_case(case, worker, checks, compile_verdict=compile_verdict)
                                .failures if f.signature == sig), None) if sig[0] != "fuzz" else None
                if failure is None:
                    continue  # not reproducible (an XLA abort or timeout on the way)
                name = f"{k:03d}_{sig[0]}_{sig[1]}_{sig[2].split('(')[0]}.hlo"
                try:
                    small = reduce_case(case, failure, worker, compile_verdict=compile_verdict)
                    (repro_dir / name).write_text(describe_repro(small, failure, worker))
                except Exception as e:  # a reducer bug must not lose the campaign's results
                    print(f"could not reduce seed {seed} ({sig}): {type(e).__name__}: {e}")
    if log:
        log.close()
    if out_dir:
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _print_summary(summary: dict[str, Any]) -> None:
    print(f"\n{summary['modules']} modules in {summary['seconds']} s")
    for c, counts in summary["checks"].items():
        print(f"  check {c}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"  XLA aborts: {summary['xla_aborts']}")
    for note, v in summary["notes"].items():
        print(f"  note {v['count']:5d}  {note}  seeds {v['seeds'][:5]}")
    print("failures by class:")
    for f in summary["failures"]:
        print(f"  [{f['check']}] {f['count']:4d}  {f['kind']} @ {f['where']}  seeds {f['seeds'][:5]}")
        print(f"         {f['example'][:300]}")


def _compare_file(path: Path) -> int:
    """Print hloscope's and XLA:CPU's values of a parameterless module; 1 when they differ."""
    import hloscope as hs

    text = path.read_text()
    module = hs.parse(text, str(path))
    with XlaWorker() as worker:
        status, theirs = worker.call("run", text, [])
    if status != "ok":
        print(f"XLA: {status}: {theirs}")
        return 1
    try:
        ours = _run_hloscope(module, [])
    except Exception as e:
        print(f"hloscope: {type(e).__name__}: {str(e).splitlines()[0]}")
        print(f"XLA:      {[a.tolist() for _, a in _leaves(theirs)]}")
        return 1
    differ = 0
    for (path_, a), (_, b) in zip(_leaves(ours), _leaves(theirs)):
        msg = compare_arrays(a, b, _producer(module.entry.root))
        differ |= msg is not None
        print(f"output {list(path_)}: {'differs: ' + msg if msg else 'equal'}")
        print(f"  hloscope {a.tolist()}\n  XLA      {b.tolist()}")
    return int(differ)


def main(argv: list[str] | None = None) -> int:
    """The command line; see the module docstring."""
    ap = argparse.ArgumentParser(prog="fuzz_hlo.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="print the module a seed generates")
    g.add_argument("seed", type=int)
    g.add_argument("--shapeless", action="store_true", help="leave out the shapes XLA infers")
    g.add_argument("--inputs", action="store_true", help="print the inputs too")
    r = sub.add_parser("run", help="check a range of seeds against XLA")
    r.add_argument("--seeds", default="0:100", help="A:B (half-open) or one seed")
    r.add_argument("--checks", default="abcde", help="letters of the checks to run (default abcde)")
    r.add_argument("--compile", action="store_true",
                   help="also take XLA:CPU's compilation (its verifier) as XLA's verdict")
    r.add_argument("--out", type=Path, help="write failures.jsonl, summary.json (and repros/)")
    r.add_argument("--reduce", action="store_true", help="minimise one failure per class into OUT/repros")
    r.add_argument("-v", "--verbose", action="store_true", help="print every failure as found")
    d = sub.add_parser("reduce", help="minimise the failure of one seed")
    d.add_argument("seed", type=int)
    d.add_argument("--checks", default="abcde")
    d.add_argument("--out", type=Path, help="write the repro here (default: print it)")
    k = sub.add_parser("compare", help="run a module file (no parameters, e.g. a saved repro) "
                                       "on hloscope and XLA:CPU and show both results")
    k.add_argument("file", type=Path)
    sub.add_parser("_worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.cmd == "_worker":
        _worker_main()
        return 0
    if args.cmd == "compare":
        return _compare_file(args.file)
    if args.cmd == "gen":
        case = generate(args.seed)
        print(f"// mutation: {case.mutation}" if case.mutation else "// valid by construction")
        print(case.text(shapeless=args.shapeless))
        if args.inputs:
            for k, v in enumerate(case.inputs):
                print(f"// parameter {k}: {np.asarray(v).dtype}{list(np.shape(v))} {np.asarray(v).tolist()}")
        return 0
    if args.cmd == "run":
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
        summary = campaign(_seed_range(args.seeds), args.checks, compile_verdict=args.compile,
                           out_dir=args.out, reduce=args.reduce, verbose=args.verbose)
        _print_summary(summary)
        return 1 if summary["failures"] else 0
    case = generate(args.seed)
    with XlaWorker() as worker:
        out = check_case(case, worker, args.checks)
        if not out.failures:
            print(f"seed {args.seed} passes checks {args.checks}")
            return 0
        failure = out.failures[0]
        print(f"reducing {failure}")
        small = reduce_case(case, failure, worker, log=print)
        text = describe_repro(small, failure, worker)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 1


if __name__ == "__main__":
    sys.exit(main())

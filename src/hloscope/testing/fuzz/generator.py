"""The fuzzer's generator: ``Generator`` builds one random, well-typed module from a seed, drawing
one op generator at a time from a weighted table (``hloscope.testing.fuzz.ops.OPS``).
"""
from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.ir.shape import ArrayShape, Shape, TupleShape
from hloscope.testing.fuzz.model import (
    ALL_TYPES,
    INDEX_TYPES,
    PARSER_INFERS,
    A,
    Case,
    Comp,
    Inst,
    default_comparison_type,
    literal_text,
    random_values,
    type_kind,
)

# --------------------------------------------------------------------------------------------
# The generator


class CompBuilder:
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
        self.e = CompBuilder(self, "main", entry=True)

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
    def parameter(self, c: CompBuilder, shape: ArrayShape, index_bound: int | None = None) -> str:
        """A new entry parameter with seeded input values."""
        assert c.entry
        n = len(self.params)
        name = c.add("parameter", shape, [], number=n)
        self.params.append(c.insts[-1])
        self.inputs.append(random_values(shape.element_type, shape.dimensions, self.rng, index_bound))
        return name

    def constant(self, c: CompBuilder, shape: ArrayShape) -> str:
        vals = random_values(shape.element_type, shape.dimensions, self.rng)
        return c.add("constant", shape, [], literal=literal_text(vals, shape.element_type), value=vals)

    def need(self, c: CompBuilder, t: str | None = None, dims: tuple[int, ...] | None = None,
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

    def index_scalar(self, c: CompBuilder, bound: int, t: str | None = None) -> str:
        """A scalar integer start index in [-2, bound + 2]."""
        t = t or self.rng.choice(INDEX_TYPES)
        if c.entry:
            return self.parameter(c, A(t), index_bound=bound)
        v = random_values(t, (), self.rng, index_bound=bound)
        return c.add("constant", A(t), [], literal=literal_text(v, t))

    def indices(self, c: CompBuilder, dims: tuple[int, ...], bound: int) -> str:
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
    def sub(self, stem: str, params: Sequence[Shape], body: Callable[[CompBuilder, list[str]], str]) -> str:
        c = CompBuilder(self, self.fresh(stem), entry=False)
        names = [c.add("parameter", s, [], number=k) for k, s in enumerate(params)]
        root = body(c, names)
        self.comps.append(c.finish(root))
        return c.name

    def scalar_reducer(self, types: list[str], kind: str | None = None) -> tuple[str, list[str]]:
        """A reducer over ``types`` and the identity init value text of each; ``kind`` picks a
        known reduction (add, multiply, maximum, minimum, and, or) or a custom one."""
        rng = self.rng
        if len(types) == 2 and kind is None and rng.random() < 0.5 and type_kind(types[1]) in ("signed", "unsigned") \
                and type_kind(types[0]) not in ("complex",):
            return self._argmax_reducer(types)
        ops = []
        for t in types:
            choices = ["add", "multiply"] + (["maximum", "minimum"] if type_kind(t) != "complex" else [])
            if type_kind(t) in ("pred", "signed", "unsigned"):
                choices += ["and", "or", "xor"] if type_kind(t) != "pred" else ["and", "or"]
            ops.append(kind if kind in choices else rng.choice(choices))
        custom = rng.random() < 0.3
        params = [A(t) for t in types] * 2
        n = len(types)

        def body(c: CompBuilder, p: list[str]) -> str:
            outs = []
            for k, (t, op) in enumerate(zip(types, ops)):
                a, b = p[k], p[n + k]
                if custom and op in ("maximum", "minimum") and type_kind(t) != "pred":
                    # max/min spelled as compare + select: the same reduction, not pattern-matched.
                    d = "GT" if op == "maximum" else "LT"
                    ct = "TOTALORDER" if type_kind(t) == "float" else default_comparison_type(t)
                    cmp = c.add("compare", A("pred"), [a, b], f", direction={d}, type={ct}")
                    outs.append(c.add("select", A(t), [cmp, a, b]))
                else:
                    outs.append(c.add(op, A(t), [a, b]))
            return outs[0] if n == 1 else c.add("tuple", TupleShape(tuple(A(t) for t in types)), outs)

        name = self.sub("reducer", params, body)
        return name, [identity_text(op, t) for op, t in zip(ops, types)]

    def _argmax_reducer(self, types: list[str]) -> tuple[str, list[str]]:
        """(value, index) pairs: the larger value, the smaller index on ties (associative and
        commutative, so any reduction order gives one answer)."""
        vt, it = types
        ct = "TOTALORDER" if type_kind(vt) == "float" else default_comparison_type(vt)

        def body(c: CompBuilder, p: list[str]) -> str:
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
        lowest = "-inf" if type_kind(vt) == "float" and vt != "f8e4m3fn" else _lowest_text(vt)
        # The init pair must be an identity (XLA may apply it any number of times): the lowest
        # value with the highest index loses every tie.
        return name, [lowest, _highest_text(it)]

    # --- the module ------------------------------------------------------------------------------
    def case(self, table: list[tuple[Callable[[Generator, CompBuilder], None], int]]) -> Case:
        """The module: ``size`` op generators drawn from ``table`` (generator, weight) pairs,
        which ``hloscope.testing.fuzz.ops.OPS`` holds (passed in: the ops import this module)."""
        ops = [fn for fn, w in table for _ in range(w)]
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


def identity_text(op: str, t: str) -> str:
    """The literal of the identity of reducer ``op`` on element type ``t``."""
    kind = type_kind(t)
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
    kind = type_kind(t)
    if kind == "pred":
        return "false"
    if kind == "float":
        return repr(-float(ml_dtypes.finfo(PRIMITIVE_TYPES[t].dtype).max))
    return str(int(np.iinfo(PRIMITIVE_TYPES[t].dtype).min))


def _highest_text(t: str) -> str:
    kind = type_kind(t)
    if kind == "pred":
        return "true"
    if kind == "float":
        return repr(float(ml_dtypes.finfo(PRIMITIVE_TYPES[t].dtype).max))
    return str(int(np.iinfo(PRIMITIVE_TYPES[t].dtype).max))


def braced(xs: Any) -> str:
    """``{1,2,3}``: integers as an HLO attribute list."""
    return "{" + ",".join(str(int(x)) for x in xs) + "}"

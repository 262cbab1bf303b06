"""THE opcode table: every HLO opcode XLA has, with its text spelling, arity and family.

Every other stage (lexer keywords, parser dispatch, printer, shape inference, interpreter, cost
analysis, coverage reports) reads this table. Mirrors XLA's ``HLO_OPCODE_LIST`` in
``xla/hlo/ir/hlo_opcode.h``, kept sorted by enum name as XLA keeps it.

Note [Adding an opcode]
    The lexer, parser and printer read this table, so a new member here is parsed and printed
    at once. Then each stage gets a rule, or states why not (tests/test_coverage.py fails on a
    silent gap; ``hloscope status`` shows the matrix). Every per-opcode table is an ``OpTable``
    (``ir/op_table.py``):

    1. here: ``NAME = OpInfo("text", arity, Family.X)``;
    2. ``ir/attribute_specs.py``: the kind of each new attribute (else it is kept raw);
       ``ir/canonical.py``: its place in XLA's attribute order, if XLA prints one;
    3. shape inference: ``@shape_rule`` in ``ir/shapes/<family>.py``, or a reason in
       ``NOT_INFERABLE`` (``ir/shapes/rules.py``) and optionally a ``@shape_check``;
    4. ``ir/verifier.py``: ``_VARIADIC_COUNTS`` for a variadic opcode, ``@_calls`` for one
       that calls computations;
    5. the interpreter: a pure numpy function (``interpret/<family>.py``; an elementwise op is
       a row of ``elementwise.UNARY``/``BINARY``) and its ``@evaluates`` handler, or a reason
       in ``interpret/registry.UNSUPPORTED``; ``interpret/lockstep.py`` needs a ``STACKED``
       rule only when the handler calls computations or meets other devices;
    6. ``analysis/cost.py``: ``@cost_rule``, or a ``NO_COST`` entry (default bytes only);
       ``analysis/memory/dataflow.py``: a rule only if it forwards or aliases its operands'
       values (by default it defines fresh ones);
    7. ``xla/rewrite.py``: only if XLA:CPU cannot compile it as it is;
    8. tests: an oracle program (``hloscope/testing/oracle/programs*.py``) and, for the fuzzer, an op
       generator in ``hloscope/testing/fuzz/ops.py``.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Family", "OpInfo", "Opcode", "opcode_from_text", "OPCODES_BY_TEXT"]


class Family(enum.Enum):
    """Groups of opcodes that later stages handle alike (habit: families first)."""

    UNARY = "elementwise unary"
    BINARY = "elementwise binary"
    TERNARY = "elementwise ternary"
    COMPARE = "compare"
    CONVERT = "convert"
    SOURCE = "source"  # parameter, constant, iota, replica-id, ...
    SHAPE = "shape"  # data movement without arithmetic
    REDUCTION = "reduction"
    LINALG = "linear algebra"
    INDEXING = "indexing"
    CONTROL_FLOW = "control flow"
    TUPLE = "tuple"
    COLLECTIVE = "collective"
    ASYNC = "async"
    RNG = "random"
    IO = "io"  # infeed, outfeed, send, recv and tokens
    CUSTOM = "custom"
    DYNAMIC = "dynamic shape"
    NORMALIZATION = "batch normalization"
    OTHER = "other"

    __hash__ = object.__hash__  # as Opcode's: singletons, hashed by identity in C


@dataclass(frozen=True, slots=True)
class OpInfo:
    """Text spelling, arity (None when variadic) and family of one opcode."""

    text: str
    arity: int | None
    family: Family


F = Family


class Opcode(enum.Enum):
    """Every HLO opcode. ``Opcode.ADD.text == "add"``."""

    ABS = OpInfo("abs", 1, F.UNARY)
    ACOS = OpInfo("acos", 1, F.UNARY)
    ACOSH = OpInfo("acosh", 1, F.UNARY)
    ADD = OpInfo("add", 2, F.BINARY)
    ADD_DEPENDENCY = OpInfo("add-dependency", 2, F.IO)
    AFTER_ALL = OpInfo("after-all", None, F.IO)
    ALL_GATHER = OpInfo("all-gather", None, F.COLLECTIVE)
    ALL_GATHER_DONE = OpInfo("all-gather-done", 1, F.COLLECTIVE)
    ALL_GATHER_START = OpInfo("all-gather-start", None, F.COLLECTIVE)
    ALL_REDUCE = OpInfo("all-reduce", None, F.COLLECTIVE)
    ALL_REDUCE_DONE = OpInfo("all-reduce-done", 1, F.COLLECTIVE)
    ALL_REDUCE_START = OpInfo("all-reduce-start", None, F.COLLECTIVE)
    ALL_TO_ALL = OpInfo("all-to-all", None, F.COLLECTIVE)
    AND = OpInfo("and", 2, F.BINARY)
    ASIN = OpInfo("asin", 1, F.UNARY)
    ASINH = OpInfo("asinh", 1, F.UNARY)
    ASYNC_DONE = OpInfo("async-done", 1, F.ASYNC)
    ASYNC_START = OpInfo("async-start", None, F.ASYNC)
    ASYNC_UPDATE = OpInfo("async-update", None, F.ASYNC)
    ATAN = OpInfo("atan", 1, F.UNARY)
    ATAN2 = OpInfo("atan2", 2, F.BINARY)
    ATANH = OpInfo("atanh", 1, F.UNARY)
    BATCH_NORM_GRAD = OpInfo("batch-norm-grad", 5, F.NORMALIZATION)
    BATCH_NORM_INFERENCE = OpInfo("batch-norm-inference", 5, F.NORMALIZATION)
    BATCH_NORM_TRAINING = OpInfo("batch-norm-training", 3, F.NORMALIZATION)
    BITCAST = OpInfo("bitcast", 1, F.SHAPE)
    BITCAST_CONVERT = OpInfo("bitcast-convert", 1, F.CONVERT)
    BROADCAST = OpInfo("broadcast", 1, F.SHAPE)
    CALL = OpInfo("call", None, F.CONTROL_FLOW)
    CBRT = OpInfo("cbrt", 1, F.UNARY)
    CEIL = OpInfo("ceil", 1, F.UNARY)
    CHOLESKY = OpInfo("cholesky", 1, F.LINALG)
    CLAMP = OpInfo("clamp", 3, F.TERNARY)
    CLZ = OpInfo("count-leading-zeros", 1, F.UNARY)
    COLLECTIVE_BROADCAST = OpInfo("collective-broadcast", None, F.COLLECTIVE)
    COLLECTIVE_PERMUTE = OpInfo("collective-permute", None, F.COLLECTIVE)
    COLLECTIVE_PERMUTE_DONE = OpInfo("collective-permute-done", 1, F.COLLECTIVE)
    COLLECTIVE_PERMUTE_START = OpInfo("collective-permute-start", None, F.COLLECTIVE)
    COLLECTIVE_REDUCE = OpInfo("collective-reduce", None, F.COLLECTIVE)
    COMPARE = OpInfo("compare", 2, F.COMPARE)
    COMPLEX = OpInfo("complex", 2, F.BINARY)
    CONCATENATE = OpInfo("concatenate", None, F.SHAPE)
    CONDITIONAL = OpInfo("conditional", None, F.CONTROL_FLOW)
    CONSTANT = OpInfo("constant", 0, F.SOURCE)
    CONVERT = OpInfo("convert", 1, F.CONVERT)
    CONVOLUTION = OpInfo("convolution", None, F.LINALG)
    COPY = OpInfo("copy", 1, F.SHAPE)
    COPY_DONE = OpInfo("copy-done", 1, F.ASYNC)
    COPY_START = OpInfo("copy-start", 1, F.ASYNC)
    COS = OpInfo("cosine", 1, F.UNARY)
    COSH = OpInfo("cosh", 1, F.UNARY)
    CUSTOM_CALL = OpInfo("custom-call", None, F.CUSTOM)
    DIVIDE = OpInfo("divide", 2, F.BINARY)
    DOMAIN = OpInfo("domain", 1, F.OTHER)
    DOT = OpInfo("dot", 2, F.LINALG)
    DYNAMIC_RESHAPE = OpInfo("dynamic-reshape", None, F.DYNAMIC)
    DYNAMIC_SLICE = OpInfo("dynamic-slice", None, F.INDEXING)
    DYNAMIC_UPDATE_SLICE = OpInfo("dynamic-update-slice", None, F.INDEXING)
    ERF = OpInfo("erf", 1, F.UNARY)
    EXP = OpInfo("exponential", 1, F.UNARY)
    EXPM1 = OpInfo("exponential-minus-one", 1, F.UNARY)
    FFT = OpInfo("fft", 1, F.LINALG)
    FLOOR = OpInfo("floor", 1, F.UNARY)
    FUSION = OpInfo("fusion", None, F.CONTROL_FLOW)
    GATHER = OpInfo("gather", 2, F.INDEXING)
    GET_DIMENSION_SIZE = OpInfo("get-dimension-size", 1, F.DYNAMIC)
    GET_TUPLE_ELEMENT = OpInfo("get-tuple-element", 1, F.TUPLE)
    IMAG = OpInfo("imag", 1, F.UNARY)
    INFEED = OpInfo("infeed", 1, F.IO)
    IOTA = OpInfo("iota", 0, F.SOURCE)
    IS_FINITE = OpInfo("is-finite", 1, F.UNARY)
    LOG = OpInfo("log", 1, F.UNARY)
    LOG1P = OpInfo("log-plus-one", 1, F.UNARY)
    LOGISTIC = OpInfo("logistic", 1, F.UNARY)
    MAP = OpInfo("map", None, F.CONTROL_FLOW)
    MAXIMUM = OpInfo("maximum", 2, F.BINARY)
    MINIMUM = OpInfo("minimum", 2, F.BINARY)
    MULHI = OpInfo("mulhi", 2, F.BINARY)
    MULTIPLY = OpInfo("multiply", 2, F.BINARY)
    NEGATE = OpInfo("negate", 1, F.UNARY)
    NOT = OpInfo("not", 1, F.UNARY)
    OPTIMIZATION_BARRIER = OpInfo("opt-barrier", 1, F.TUPLE)
    OR = OpInfo("or", 2, F.BINARY)
    OUTFEED = OpInfo("outfeed", 2, F.IO)
    PAD = OpInfo("pad", 2, F.SHAPE)
    PARAMETER = OpInfo("parameter", 0, F.SOURCE)
    PARTITION_ID = OpInfo("partition-id", 0, F.SOURCE)
    POPCNT = OpInfo("popcnt", 1, F.UNARY)
    POWER = OpInfo("power", 2, F.BINARY)
    RAGGED_ALL_TO_ALL = OpInfo("ragged-all-to-all", 6, F.COLLECTIVE)
    RAGGED_DOT = OpInfo("ragged-dot", 3, F.LINALG)
    REAL = OpInfo("real", 1, F.UNARY)
    RECV = OpInfo("recv", 1, F.IO)
    RECV_DONE = OpInfo("recv-done", 1, F.IO)
    REDUCE = OpInfo("reduce", None, F.REDUCTION)
    REDUCE_PRECISION = OpInfo("reduce-precision", 1, F.CONVERT)
    REDUCE_SCATTER = OpInfo("reduce-scatter", None, F.COLLECTIVE)
    REDUCE_WINDOW = OpInfo("reduce-window", None, F.REDUCTION)
    REMAINDER = OpInfo("remainder", 2, F.BINARY)
    REPLICA_ID = OpInfo("replica-id", 0, F.SOURCE)
    RESHAPE = OpInfo("reshape", 1, F.SHAPE)
    REVERSE = OpInfo("reverse", 1, F.SHAPE)
    RNG = OpInfo("rng", None, F.RNG)
    RNG_BIT_GENERATOR = OpInfo("rng-bit-generator", 1, F.RNG)
    RNG_GET_AND_UPDATE_STATE = OpInfo("rng-get-and-update-state", 0, F.RNG)
    ROUND_NEAREST_AFZ = OpInfo("round-nearest-afz", 1, F.UNARY)
    ROUND_NEAREST_EVEN = OpInfo("round-nearest-even", 1, F.UNARY)
    RSQRT = OpInfo("rsqrt", 1, F.UNARY)
    SCALED_DOT = OpInfo("scaled-dot", 4, F.LINALG)
    SCAN = OpInfo("scan", None, F.CONTROL_FLOW)
    SCATTER = OpInfo("scatter", None, F.INDEXING)
    SELECT = OpInfo("select", 3, F.TERNARY)
    SELECT_AND_SCATTER = OpInfo("select-and-scatter", 3, F.REDUCTION)
    SEND = OpInfo("send", 2, F.IO)
    SEND_DONE = OpInfo("send-done", 1, F.IO)
    SET_DIMENSION_SIZE = OpInfo("set-dimension-size", 2, F.DYNAMIC)
    SHIFT_LEFT = OpInfo("shift-left", 2, F.BINARY)
    SHIFT_RIGHT_ARITHMETIC = OpInfo("shift-right-arithmetic", 2, F.BINARY)
    SHIFT_RIGHT_LOGICAL = OpInfo("shift-right-logical", 2, F.BINARY)
    SHUFFLE = OpInfo("shuffle", 1, F.SHAPE)
    SIGN = OpInfo("sign", 1, F.UNARY)
    SIN = OpInfo("sine", 1, F.UNARY)
    SINH = OpInfo("sinh", 1, F.UNARY)
    SLICE = OpInfo("slice", 1, F.SHAPE)
    SORT = OpInfo("sort", None, F.REDUCTION)
    SQRT = OpInfo("sqrt", 1, F.UNARY)
    STOCHASTIC_CONVERT = OpInfo("stochastic-convert", 2, F.CONVERT)
    SUBTRACT = OpInfo("subtract", 2, F.BINARY)
    TAN = OpInfo("tan", 1, F.UNARY)
    TANH = OpInfo("tanh", 1, F.UNARY)
    TOPK = OpInfo("topk", 1, F.REDUCTION)
    TRANSPOSE = OpInfo("transpose", 1, F.SHAPE)
    TRIANGULAR_SOLVE = OpInfo("triangular-solve", 2, F.LINALG)
    TUPLE = OpInfo("tuple", None, F.TUPLE)
    WHILE = OpInfo("while", 1, F.CONTROL_FLOW)
    XOR = OpInfo("xor", 2, F.BINARY)

    # Text, arity and family are plain attributes of each member, copied from its OpInfo once:
    # every stage reads them per instruction, and read through ``value`` (an enum descriptor
    # written in Python) they took 3.4 M descriptor calls in the report of XLA's Llama 3.1 8B
    # step at ten times its size.
    def __init__(self, info: OpInfo) -> None:
        self.text: str = info.text
        self.arity: int | None = info.arity
        self.family: Family = info.family

    # Members are singletons, equal only to themselves: hashed by identity in C, not by name
    # in Python as enum's __hash__ does (4 M hashes in that report: sets and tables of opcodes).
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Opcode.{self.name}"

    def __str__(self) -> str:
        return self.value.text


OPCODES_BY_TEXT: dict[str, Opcode] = {op.text: op for op in Opcode}

# Collectives whose results are produced asynchronously by a *-start/*-done pair.
ASYNC_PAIRS: dict[Opcode, Opcode] = {
    Opcode.ALL_GATHER_START: Opcode.ALL_GATHER_DONE,
    Opcode.ALL_REDUCE_START: Opcode.ALL_REDUCE_DONE,
    Opcode.COLLECTIVE_PERMUTE_START: Opcode.COLLECTIVE_PERMUTE_DONE,
    Opcode.COPY_START: Opcode.COPY_DONE,
    Opcode.ASYNC_START: Opcode.ASYNC_DONE,
    Opcode.SEND: Opcode.SEND_DONE,
    Opcode.RECV: Opcode.RECV_DONE,
}


def opcode_from_text(text: str) -> Opcode | None:
    """The Opcode spelled ``text`` in HLO, or None."""
    return OPCODES_BY_TEXT.get(text)

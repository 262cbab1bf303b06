"""The verifier: shape inference plus a structural lint over a whole module.

``verify(module)`` collects every problem as a ``Diagnostic`` and never raises, however
malformed the module; ``check(module)`` raises ``VerifyError`` when any diagnostic is an error.
Each message says what is wrong and what was expected; ``str(diagnostic)`` adds where, as
``file:line:col: error: message`` with the source line and a caret when the module was parsed
from text, else as ``computation/instruction: message``.

The checks, in the order they run per instruction (XLA's ``HloVerifier`` and ``ShapeVerifier``):
operand counts against the opcode table, operands and control predecessors defined in the same
computation, called computations present in the module, the re-inferred shape against the
declared one (``hloscope.ir.shape_inference``; compared as XLA's ``ShapeUtil::Compatible``,
blind to layouts and dynamic flags), and the signatures of called computations (while,
conditional, call, fusion, map, reducers and comparators, and the one instruction a sugared
``call-start`` wraps). Per computation: parameter numbers unique and contiguous, no cycle
through operands and control predecessors, and an async computation holding one instruction.
Per module: where buffer shapes may appear (``buffer_verifier``), the entry against
``entry_computation_layout`` and every ``input_output_alias`` entry (same byte size).

Where XLA accepts what hloscope would question (a collective's reducer of other types, a
declared shape XLA's parser replaces), the finding is a warning, not an error.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hloscope.errors import VerifyError
from hloscope.gc_pause import cyclic_gc_paused
from hloscope.ir.buffer_verifier import buffer_problems
from hloscope.ir.collective_shapes import group_size_problems
from hloscope.ir.computation import Computation
from hloscope.ir.instruction import CALLED_COMPUTATION_ATTRS, Instruction
from hloscope.ir.module import Module
from hloscope.ir.op_table import OpTable
from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import ArrayShape, Shape, TupleShape
from hloscope.ir.shape_inference import (
    ShapeInferenceError,
    async_wrapped_computation,
    async_wrapped_instruction,
    check_shape,
    compatible,
    infer_shape,
    same_shape,
    same_type_ignoring_fp_precision,
    shape_text,
)

__all__ = ["Diagnostic", "check", "verify"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One verifier finding. ``severity`` is ``"error"`` or ``"warning"``."""

    severity: str
    message: str
    instruction: str | None = None
    computation: str | None = None
    span: Any = field(default=None, compare=False, repr=False)  # a text Span, when known

    def __str__(self) -> str:
        if self.span is not None:
            try:
                return self.span.render(self.message, self.severity)
            except Exception:  # a span into a changed source must not hide the message
                pass
        where = "/".join(x for x in (self.computation, self.instruction) if x)
        return f"{where}: {self.message}" if where else f"{self.severity}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """The finding as plain JSON data (no rendering)."""
        out: dict[str, Any] = {"severity": self.severity, "message": self.message,
                               "instruction": self.instruction, "computation": self.computation}
        if self.span is not None:
            try:
                out["line"], out["column"] = self.span.line, self.span.column
            except Exception:
                pass
        return out


def verify(module: Module, *, replicas: int | None = None, partitions: int | None = None) -> list[Diagnostic]:
    """Every problem found in ``module``, in module order; an empty list when it is well formed.

    ``replicas``/``partitions`` name the device grid the module is to run on (default: its
    header's ``replica_count``/``num_partitions``); when one is known, all-gathers and
    reduce-scatters whose shapes ask for groups of another size than that grid forms are
    errors (``hloscope.ir.collective_shapes``), also where XLA's verifier, taking an unknown
    count as 1, lets them pass."""
    # The cyclic collector would walk the whole module again and again while the verifier
    # allocates its small per-instruction objects (Note [No cyclic GC during analyses] in
    # gc_pause.py); it waits until the verifier returns.
    with cyclic_gc_paused():
        v = _Verifier(module)
        v.run()
        v.group_sizes(replicas, partitions)
    return _never_called_as_warnings(module, v.diagnostics)


def _never_called_as_warnings(module: Module, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """A problem in a computation the entry never reaches is a warning: nothing runs it, and
    jax's path into XLA:CPU drops it before XLA verifies anything (XLA's import tests hold
    deliberately malformed computations beside a trivial entry, and XLA:CPU runs them)."""
    if not any(d.severity == "error" for d in diagnostics):
        return diagnostics
    reached = {c.name for c in module.reachable_computations()}
    out = []
    for d in diagnostics:
        if d.severity == "error" and d.computation is not None and d.computation not in reached:
            d = Diagnostic("warning", f"{d.message} (computation {d.computation} is never called from the "
                           "entry; nothing runs it)", d.instruction, d.computation, d.span)
        out.append(d)
    return out


def check(module: Module) -> None:
    """Raise ``VerifyError`` with every diagnostic when ``verify`` finds any error."""
    diagnostics = verify(module)
    if any(d.severity == "error" for d in diagnostics):
        raise VerifyError(diagnostics)


# Variadic opcodes' operand-count constraints: (minimum, "even"/"odd"/None), XLA's verifier.
_VARIADIC_COUNTS: dict[Opcode, tuple[int, str | None]] = {
    Opcode.REDUCE: (2, "even"), Opcode.REDUCE_WINDOW: (2, "even"), Opcode.SCATTER: (3, "odd"),
    Opcode.DYNAMIC_SLICE: (2, None), Opcode.DYNAMIC_UPDATE_SLICE: (3, None),
    Opcode.CONCATENATE: (1, None), Opcode.SORT: (1, None), Opcode.CONVOLUTION: (2, None),
    Opcode.CONDITIONAL: (2, None), Opcode.ALL_REDUCE: (1, None), Opcode.ALL_GATHER: (1, None),
    Opcode.REDUCE_SCATTER: (1, None), Opcode.ALL_TO_ALL: (1, None), Opcode.MAP: (1, None),
    Opcode.COLLECTIVE_PERMUTE: (1, None),
}


def _operand_list(inst: Instruction) -> str:
    return ", ".join(shape_text(o.shape) for o in inst.operands)


def _params(comp: Computation) -> list[Shape]:
    return [p.shape for p in comp.parameters]


def _sig(shapes: Iterable[Shape], result: Shape) -> str:
    return "(" + ", ".join(shape_text(s) for s in shapes) + ") -> " + shape_text(result)


class _Verifier:
    """One verification run; ``diagnostics`` accumulates in module order."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.diagnostics: list[Diagnostic] = []
        self.comps = {id(c) for c in module.computations}
        self.inst: Instruction | None = None

    # --- reporting ---------------------------------------------------------------------------
    def error(self, message: str, inst: Instruction | None = None, comp: Computation | None = None,
              severity: str = "error") -> None:
        inst = inst or self.inst
        if comp is None and inst is not None:
            comp = inst.computation
        self.diagnostics.append(Diagnostic(
            severity, message, inst.name if inst is not None else None,
            comp.name if comp is not None else None,
            getattr(inst, "span", None) if inst is not None else getattr(comp, "span", None)))

    def warning(self, message: str) -> None:
        self.error(message, severity="warning")

    def group_sizes(self, replicas: int | None, partitions: int | None) -> None:
        """Gathers and scatters against the device grid, when one is known (collective_shapes)."""
        r = replicas if replicas is not None else self.module.replica_count
        p = partitions if partitions is not None else self.module.num_partitions
        if r is None and p is None:
            return
        reported = {(d.computation, d.instruction) for d in self.diagnostics}
        try:
            for inst, message in group_size_problems(self.module, r or 1, p or 1):
                comp = inst.computation.name if inst.computation is not None else None
                if (comp, inst.name) not in reported:  # shape inference said it already
                    self.error(message, inst)
        except Exception as e:
            self.error(f"verifier could not check collective group sizes: {e!r}", None, self.module.entry)

    # --- driver ------------------------------------------------------------------------------
    def run(self) -> None:
        for comp in self.module.computations:
            try:
                self.computation(comp)
            except Exception as e:  # never raise on a malformed module: report and go on
                self.error(f"verifier could not check computation {comp.name}: {e!r}", None, comp)
        self.inst = None
        try:
            for inst, message in buffer_problems(self.module):
                self.error(message, inst)
        except Exception as e:
            self.error(f"verifier could not check where buffers are used: {e!r}", None, self.module.entry)
        try:
            self.entry_layout()
            self.aliases()
        except Exception as e:
            self.error(f"verifier could not check the module header: {e!r}", None, self.module.entry)

    def computation(self, comp: Computation) -> None:
        members = {id(i) for i in comp.instructions}
        if id(comp.root) not in members:
            self.error(f"root {comp.root.name} is not an instruction of computation {comp.name}", None, comp)
        numbers = sorted(p.attrs.get("parameter_number", -1) for p in comp.instructions
                         if p.opcode is Opcode.PARAMETER)
        if numbers != list(range(len(numbers))):
            self.error(f"parameter numbers {numbers} of computation {comp.name} must be 0..{len(numbers) - 1}, "
                       "each once", None, comp)
        for inst in comp.instructions:
            self.inst = inst
            try:
                self.instruction(inst, members)
            except Exception as e:
                self.error(f"verifier could not check {inst.opcode.text}: {e!r}")
        self.inst = None
        self.cycles(comp, members)

    def instruction(self, inst: Instruction, members: set[int]) -> None:
        op = inst.opcode
        n = len(inst.operands)
        if op.arity is not None and n != op.arity:
            self.error(f"{op.text} takes {op.arity} operand{'s' * (op.arity != 1)}, got {n}")
            return
        rule = _VARIADIC_COUNTS.get(op)
        if rule is not None and (n < rule[0] or (rule[1] == "even" and n % 2) or (rule[1] == "odd" and n % 2 == 0)):
            parity = f" ({rule[1]} count)" if rule[1] else ""
            self.error(f"{op.text} takes at least {rule[0]} operands{parity}, got {n}")
            return
        undefined = [o.name for o in (*inst.operands, *inst.control_predecessors) if id(o) not in members]
        if undefined:
            self.error(f"uses {', '.join(undefined)}, not defined in computation {inst.computation.name if inst.computation else '?'}")
            return
        for key in CALLED_COMPUTATION_ATTRS:
            value = inst.attrs.get(key)
            for c in value if isinstance(value, list) else () if value is None else (value,):
                if isinstance(c, str) or id(c) not in self.comps:
                    self.error(f"{key}={getattr(c, 'name', c)} is not a computation of module {self.module.name}")
                    return
        try:
            inferred = infer_shape(inst)
            check_shape(inst)
        except ShapeInferenceError as e:
            self.error(f"{e} (in {op.text}({_operand_list(inst)}))")
            return
        if inferred is not None and not compatible(inferred, inst.shape):
            message = (f"expected shape {shape_text(inferred)} from {op.text}({_operand_list(inst)}), "
                       f"declared {shape_text(inst.shape)}")
            if op in _SHAPE_BUILT_BY_XLA_PARSER:
                self.warning(f"{message}; XLA's parser ignores the declared shape and builds "
                             f"{shape_text(inferred)}, so hloscope and XLA see different modules")
            else:
                self.error(message)
        # A sugared async-start (`call-start`) wraps one instruction: check it as XLA checks the
        # computation its parser builds (Note [Async shapes] in shape_async.py).
        # Its callee's signature is the computation's, which the start's rule checked.
        wrapped = async_wrapped_instruction(inst)
        if wrapped is not None and wrapped.opcode in (Opcode.CALL, Opcode.FUSION):
            wrapped = None
        for i in (inst,) if wrapped is None else (inst, wrapped):
            mixed = _mixed_float_types(i)
            if mixed:
                self.error(f"{i.opcode.text} mixes floating-point types {', '.join(mixed)} in its operands "
                           f"({_operand_list(i)}); XLA's verifier allows one precision per instruction")
            checker = _CALL_CHECKS.get(i.opcode)
            if checker is not None:
                checker(self, i)

    # --- called computations -----------------------------------------------------------------
    def expect_signature(self, inst: Instruction, comp: Computation, role: str,
                         params: Sequence[Shape], result: Shape | None, severity: str = "error") -> None:
        """Report when ``comp`` does not take ``params`` (and return ``result``, if given)."""
        got = _params(comp)
        ok = len(got) == len(params) and all(same_shape(a, b) for a, b in zip(got, params, strict=True))
        if result is not None:
            ok = ok and same_shape(comp.root.shape, result)
        if not ok:
            want = _sig(params, result) if result is not None else "(" + ", ".join(map(shape_text, params)) + ")"
            self.error(f"{role} {comp.name} must be {want}, is {_sig(got, comp.root.shape)}", severity=severity)

    def reducer(self, inst: Instruction, attr: str, types: list[str], result: str | None = None,
                severity: str = "error") -> None:
        """``attr`` must be ``(T1..Tn, T1..Tn) -> (T1..Tn)`` over scalars (or ``-> pred[]``)."""
        comp = inst.attrs.get(attr)
        if comp is None:
            return
        scalars = [ArrayShape(t) for t in types]
        if result == "pred":
            out: Shape = ArrayShape("pred")
        else:
            out = scalars[0] if len(scalars) == 1 else TupleShape(tuple(scalars))
        self.expect_signature(inst, comp, {"comparator": "comparator", "select": "select computation"}
                              .get(attr, "reducer"), scalars + scalars, out, severity)

    def cycles(self, comp: Computation, members: set[int]) -> None:
        """Report one instruction on each cycle through operands and control predecessors."""
        state: dict[int, int] = {}  # 1 = on the DFS stack, 2 = done
        for start in comp.instructions:
            if id(start) in state:
                continue
            stack = [(start, iter((*start.operands, *start.control_predecessors)))]
            state[id(start)] = 1
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    state[id(node)] = 2
                    stack.pop()
                    continue
                s = state.get(id(nxt))
                if s == 1:
                    self.error(f"cycle through operands/control predecessors: {nxt.name} depends on itself "
                               f"via {node.name}", nxt, comp)
                elif s is None and id(nxt) in members:
                    state[id(nxt)] = 1
                    stack.append((nxt, iter((*nxt.operands, *nxt.control_predecessors))))

    # --- module header -----------------------------------------------------------------------
    def entry_layout(self) -> None:
        layout = self.module.entry_computation_layout
        entry = self.module.entry
        if layout is None:
            return
        params = _params(entry)
        if len(layout.parameters) != len(params) or not all(
                same_shape(a, b) for a, b in zip(layout.parameters, params, strict=True)) or not same_shape(
                layout.result, entry.root.shape):
            # XLA's own verifier rejects this, but jax's path into XLA:CPU compiles the entry
            # computation as written and drops the layout (XLA's layouts_and_names.hlo: an f16
            # identity under an f32 layout runs on f16): a warning, the signature is what runs.
            self.error(f"entry_computation_layout {_sig(layout.parameters, layout.result)} does not match "
                       f"entry computation {entry.name} {_sig(params, entry.root.shape)}; the computation's "
                       "signature is what runs (XLA:CPU compiles it so and drops the layout)", entry.root, entry,
                       severity="warning")

    def aliases(self) -> None:
        # XLA's HloInputOutputAliasConfig::Verify: aliased arrays need the same byte size (not
        # the same shape: a reshaped or transposed buffer may be donated), and each parameter
        # buffer aliases at most one output.
        entry = self.module.entry
        seen: set[tuple[int, tuple[int, ...]]] = set()
        for a in self.module.input_output_alias:
            out = _subshape(entry.root.shape, a.output_index)
            if a.parameter_number >= len(entry.parameters) or a.parameter_number < 0:
                self.error(f"input_output_alias {a}: entry has no parameter {a.parameter_number}", None, entry)
                continue
            param = _subshape(entry.parameters[a.parameter_number].shape, a.parameter_index)
            if out is None:
                self.error(f"input_output_alias {a}: output index {list(a.output_index)} is not in "
                           f"{shape_text(entry.root.shape)}", None, entry)
            elif param is None:
                self.error(f"input_output_alias {a}: parameter index {list(a.parameter_index)} is not in "
                           f"{shape_text(entry.parameters[a.parameter_number].shape)}", None, entry)
            elif not (isinstance(out, ArrayShape) and isinstance(param, ArrayShape)):
                self.error(f"input_output_alias {a}: output {shape_text(out)} and parameter "
                           f"{shape_text(param)} must both be arrays", None, entry)
            elif out.byte_size() != param.byte_size():
                self.error(f"input_output_alias {a}: output {shape_text(out)} ({out.byte_size()} bytes) and "
                           f"parameter {shape_text(param)} ({param.byte_size()} bytes) differ in size",
                           None, entry)
            elif (a.parameter_number, tuple(a.parameter_index)) in seen:
                self.error(f"input_output_alias {a}: parameter {a.parameter_number} "
                           f"{{{','.join(map(str, a.parameter_index))}}} aliases two outputs", None, entry)
            seen.add((a.parameter_number, tuple(a.parameter_index)))


# XLA's parser builds these shapes from the operands (or from element 0 of the declared tuple)
# and drops the rest of what the text declares, so a wrong declaration never reaches XLA's
# verifier: hloscope warns, as its own IR keeps the declared shape.
_SHAPE_BUILT_BY_XLA_PARSER = frozenset({Opcode.SEND, Opcode.SEND_DONE, Opcode.RECV, Opcode.RECV_DONE,
                                        Opcode.INFEED, Opcode.OUTFEED})


# Opcodes XLA's verifier lets mix float precisions in their operands (CheckMixedPrecisionOperands:
# they pass data through, group it in tuples, or accumulate in a chosen type).
_MIXED_PRECISION_OK = frozenset({
    Opcode.CALL, Opcode.CONDITIONAL, Opcode.CONSTANT, Opcode.CONVOLUTION, Opcode.DOT,
    Opcode.RAGGED_DOT, Opcode.SCALED_DOT, Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START,
    Opcode.ALL_REDUCE_DONE, Opcode.ALL_GATHER, Opcode.ALL_GATHER_START, Opcode.ALL_GATHER_DONE,
    Opcode.ASYNC_DONE, Opcode.ASYNC_UPDATE, Opcode.ASYNC_START, Opcode.COLLECTIVE_PERMUTE,
    Opcode.COLLECTIVE_PERMUTE_START, Opcode.COLLECTIVE_PERMUTE_DONE, Opcode.COPY_DONE,
    Opcode.COPY_START, Opcode.CUSTOM_CALL, Opcode.DOMAIN, Opcode.FUSION,
    Opcode.GET_TUPLE_ELEMENT, Opcode.OPTIMIZATION_BARRIER, Opcode.INFEED, Opcode.OUTFEED,
    Opcode.PARAMETER, Opcode.RECV, Opcode.RECV_DONE, Opcode.REDUCE_PRECISION,
    Opcode.REDUCE_WINDOW, Opcode.SEND, Opcode.SEND_DONE, Opcode.SORT, Opcode.TUPLE, Opcode.WHILE,
})


def _mixed_float_types(inst: Instruction) -> list[str]:
    """The distinct float element types among ``inst``'s operands when XLA forbids mixing them
    there (empty when they agree or the opcode may mix)."""
    if inst.opcode in _MIXED_PRECISION_OK:
        return []
    floats = {leaf.element_type for o in inst.operands for _, leaf in o.shape.leaves()
              if leaf.primitive_type.kind == "float"}
    return sorted(floats) if len(floats) > 1 else []


def _subshape(shape: Shape, index: tuple[int, ...]) -> Shape | None:
    for i in index:
        if not isinstance(shape, TupleShape) or not 0 <= i < len(shape.elements):
            return None
        shape = shape.elements[i]
    return shape


def _leaf_types(shapes: Iterable[Shape]) -> list[str]:
    return [s.element_type for s in shapes if isinstance(s, ArrayShape)]


# --- per-opcode signature checks of called computations ----------------------------------------
_CALL_CHECKS: OpTable[Callable[[_Verifier, Instruction], None]] = OpTable(
    "verifier call signatures", fallback="calls no computation, or its callee's signature is free")
_calls = _CALL_CHECKS.register


@_calls(Opcode.WHILE)
def _check_while(v: _Verifier, inst: Instruction) -> None:
    init = inst.operands[0].shape
    v.expect_signature(inst, inst.attrs["body"], "while body", [init], init)
    v.expect_signature(inst, inst.attrs["condition"], "while condition", [init], ArrayShape("pred"))


@_calls(Opcode.CONDITIONAL)
def _check_conditional(v: _Verifier, inst: Instruction) -> None:
    branches = inst.attrs.get("branch_computations") or [
        inst.attrs[k] for k in ("true_computation", "false_computation") if k in inst.attrs]
    selector = inst.operands[0].shape
    want = "pred" if "true_computation" in inst.attrs else "s32"
    if not same_shape(selector, ArrayShape(want)) and not (want == "s32" and same_shape(selector, ArrayShape("pred"))):
        v.error(f"conditional's selector must be {want}[], got {shape_text(selector)}")
    if len(branches) != len(inst.operands) - 1:
        v.error(f"conditional has {len(branches)} branches but {len(inst.operands) - 1} branch operands")
        return
    for k, (b, arg) in enumerate(zip(branches, inst.operands[1:], strict=True)):
        v.expect_signature(inst, b, f"branch {k}", [arg.shape], inst.shape)


@_calls(Opcode.CALL, Opcode.FUSION)
def _check_call(v: _Verifier, inst: Instruction) -> None:
    key = "to_apply" if inst.opcode is Opcode.CALL else "calls"
    comp = inst.attrs.get(key)
    if isinstance(comp, list):
        comp = comp[0] if comp else None
    if comp is None:
        return
    operands = [o.shape for o in inst.operands]
    if inst.opcode is Opcode.FUSION:
        # XLA's HandleFusion: a fusion may pass more operands than its computation takes.
        operands = operands[:len(comp.parameters)] if len(comp.parameters) <= len(operands) else operands
    v.expect_signature(inst, comp, {Opcode.FUSION: "fused computation"}.get(inst.opcode, "callee"),
                       operands, None)


@_calls(Opcode.ASYNC_START)
def _check_async_start(v: _Verifier, inst: Instruction) -> None:
    # XLA's VerifyAsyncComputation: on the main thread, an async computation holds one
    # instruction (and parameters), unless the start marks a collectives group or the
    # computation is a barrier (parameters and get-tuple-elements only).
    comp = async_wrapped_computation(inst)
    if comp is None or inst.attrs.get("async_execution_thread", "main") != "main":
        return
    fa = inst.frontend_attributes
    if fa is not None and "_collectives_group" in fa.map:
        return
    others = [i for i in comp.instructions if i is not comp.root and i.opcode is not Opcode.PARAMETER]
    if others and any(i.opcode is not Opcode.GET_TUPLE_ELEMENT for i in others):
        v.error(f"async computation {comp.name} must hold only its root and parameters, holds "
                f"{', '.join(i.name for i in others[:3])}{', ...' if len(others) > 3 else ''} too; "
                "put the work in a call inside it")


@_calls(Opcode.MAP)
def _check_map(v: _Verifier, inst: Instruction) -> None:
    comp = inst.attrs["to_apply"]
    v.expect_signature(inst, comp, "mapped computation",
                       [ArrayShape(t) for t in _leaf_types(o.shape for o in inst.operands)], None)


@_calls(Opcode.REDUCE, Opcode.REDUCE_WINDOW)
def _check_reduce(v: _Verifier, inst: Instruction) -> None:
    n = len(inst.operands) // 2
    _check_reducer(v, inst, _leaf_types(o.shape for o in inst.operands[n:]),
                   _leaf_types(o.shape for o in inst.operands[:n]))


def _check_reducer(v: _Verifier, inst: Instruction, inits: list[str], inputs: list[str]) -> None:
    # XLA's VerifyReducerShape: the reducer is (acc..., x...) -> acc... over scalars, where the
    # accumulators are the reducer's own result types and inits and inputs may differ from them
    # in float precision only (the op itself then forbids mixing, see _mixed_float_types).
    n = len(inits)
    comp = inst.attrs.get("to_apply")
    if comp is None:
        return
    acc = [leaf.element_type for _, leaf in comp.root.shape.leaves()]
    if len(acc) != n or not all(same_type_ignoring_fp_precision(a, t) for a, t in zip(acc, inits, strict=True)):
        v.reducer(inst, "to_apply", inits)
        return
    params = _params(comp)
    types = _leaf_types(params)
    if not (len(params) == 2 * n and types[:n] == acc and all(isinstance(p, ArrayShape) and not p.rank
                                                              for p in params)
            and all(same_type_ignoring_fp_precision(p, x) for p, x in zip(types[n:], inputs, strict=True))):
        v.reducer(inst, "to_apply", acc)


@_calls(Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START, Opcode.REDUCE_SCATTER)
def _check_all_reduce(v: _Verifier, inst: Instruction) -> None:
    # XLA's verifier does not look at a collective's reducer (backends pick the arithmetic by
    # the reducer's root opcode), so a reducer of other types is only a warning.
    types = sorted(set(_leaf_types(o.shape for o in inst.operands)))
    if len(types) == 1:  # combined collectives with mixed types share one reducer per type
        v.reducer(inst, "to_apply", types, severity="warning")


@_calls(Opcode.SCATTER)
def _check_scatter(v: _Verifier, inst: Instruction) -> None:
    n = (len(inst.operands) - 1) // 2
    _check_reducer(v, inst, _leaf_types(o.shape for o in inst.operands[:n]),
                   _leaf_types(o.shape for o in inst.operands[n + 1:]))


@_calls(Opcode.SELECT_AND_SCATTER)
def _check_select_and_scatter(v: _Verifier, inst: Instruction) -> None:
    t = _leaf_types([inst.operands[0].shape])
    v.reducer(inst, "select", t, "pred")
    v.reducer(inst, "scatter", _leaf_types([inst.operands[1].shape]))


@_calls(Opcode.SORT)
def _check_sort(v: _Verifier, inst: Instruction) -> None:
    # The comparator takes each operand's pair of elements in turn: (T0, T0, T1, T1, ...) -> pred[].
    comp = inst.attrs.get("to_apply")
    if comp is not None:
        params = [ArrayShape(t) for t in _leaf_types(o.shape for o in inst.operands) for _ in (0, 1)]
        v.expect_signature(inst, comp, "comparator", params, ArrayShape("pred"))

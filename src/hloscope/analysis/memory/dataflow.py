"""Dataflow: which values each instruction defines, where they appear, and which share a buffer.

This is XLA's ``HloDataflowAnalysis`` (SSA form, ``bitcast_defines_value=false``) followed by
``HloAliasAnalysis``: a *value* is defined once (by an instruction at a shape index, or as a phi
of a loop or conditional) and appears at *positions*; a *buffer* is a set of values that must
live at the same address. Fusion bodies hold no values (their instructions never own memory);
computations called by ``to_apply``/``comparator``/... are *embedded*: their values get
thread-local allocations and no live range.

How each opcode moves values is a registry keyed by opcode (``DATAFLOW_RULES``, an
``OpTable``); opcodes without an entry define a fresh value at every shape index.

Note [Aliasing through while]
-----------------------------
A while loop's state at index ``i`` flows init -> condition parameter -> body parameter -> body
root -> back to the parameters -> while result. XLA makes one phi per place (while result, body
parameter, condition parameter) and puts all of them, the init value and the body root value in
one buffer, so the loop updates its state in place::

    init{i} --+--> cond.param{i} (phi)      all five share one buffer;
              +--> body.param{i} (phi) ...  body.root{i}
              +--> while{i} (phi)            live ranges chain, see liveness.py

When the body passes index ``i`` through unchanged (root{i} is body.param{i}), the phis collapse
into the init value, as XLA's phi simplification does: no new value exists at all (``w`` in a
scan keeps one value from the entry parameter through every loop position).

Note [In-place outputs]
-----------------------
Some outputs must reuse an operand's buffer (XLA's ``GetInPlaceInputOutputPairs``):
dynamic-update-slice (operand 0), scatter (operands ``0..n-1``), a fusion whose root (or root
tuple element), or a bitcast of it, is such an op on a fusion parameter,
``output_to_operand_aliasing`` of custom calls and fusions, and the module's
``input_output_alias``. The output stays its own value but joins the operand's buffer.

Note [Value numbering]
----------------------
Value ids break ties wherever XLA sorts values: the heap simulator's events at one time and
its placement order among equal sizes and durations, the live-range peak's sweep. XLA numbers
values as ``HloDataflowAnalysis`` creates them: computations in the order the module prints
them, instructions of each in ``MakeInstructionPostOrder`` order, a tuple's indices outer
first; loop and conditional phis are created later, while propagating, so they come last.
``analyze_dataflow`` numbers its values the same way; with it the temporaries' offsets of all
60 programs in ``tests/analysis/test_memory.py`` equal XLA:CPU's, while definition order left
9 of them with values swapped between chunks (same totals).

Note [Lean values]
------------------
On Llama 3.1 8B scaled to 100x (3.2 M instructions) the dataflow and live ranges grew the
process by 5 GB, and on the kind of VM we measure on, fresh memory costs more per byte the
larger the process is, so their size was much of their time. Most of it was bookkeeping that
almost every instruction has in the same form:

* an array-shaped instruction with one value had ``{(): [v]}`` as its sets (a dict and a list,
  288 bytes); ``Dataflow.sets`` keeps the Value alone there (``value_sets`` and ``value_set``
  read both forms);
* the defining position is a flag (``defined_here``); the others go to ``other_positions``,
  a shared empty tuple until a value has one;
* uses are not stored: liveness needs only each value's last reader, found in one pass over the
  instructions, and the dump's use lists are made on the first ``Dataflow.uses``;
* ``buffer_of`` is a list by value id, and buffers are grouped without a dict of lists;
* the post order asks which instructions are used at all, not the computation's user map
  (which would stay cached in the module).

At 10x, what the dataflow, live ranges and curve hold fell from 458 to 198 MB (tracemalloc);
every figure is unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hloscope.ir import Opcode
from hloscope.ir.buffer_assignment import HloPosition, HloUse, ShapeIndex
from hloscope.ir.op_table import OpTable
from hloscope.ir.opcode import Family

if TYPE_CHECKING:
    from hloscope.ir import Computation, Instruction, Module, Shape

__all__ = ["Value", "Buffer", "Dataflow", "analyze_dataflow", "instruction_post_order",
           "ELEMENTWISE_FAMILIES", "FORWARDING"]

# Opcodes that pass their operands' values on without reading them: their users are the uses
# (``Dataflow.uses``; liveness's ``last_reads``). A get-tuple-element reads only the tuple's own
# value, its pointer table.
FORWARDING = frozenset({Opcode.TUPLE, Opcode.BITCAST})
ELEMENTWISE_FAMILIES = frozenset({Family.UNARY, Family.BINARY, Family.TERNARY, Family.COMPARE, Family.CONVERT})
# Callers whose computations run as sequential code (XLA's CallContext::kControlFlow) or hold
# no values (fusion); every other caller's computations are embedded: reduce's to_apply, sort's
# comparator, a custom call's called_computations, ...
_SEQUENTIAL_CALLERS = frozenset({Opcode.CALL, Opcode.WHILE, Opcode.CONDITIONAL, Opcode.FUSION,
                                 Opcode.ASYNC_START, Opcode.ASYNC_UPDATE, Opcode.ASYNC_DONE})


def _embedded_callees(inst: Instruction) -> list[Computation]:
    # Async sugar (`reduce-start(...), to_apply=add`) calls what the wrapped op calls: a
    # reducer stays embedded, a call's computation sequential.
    op = inst.attrs.get("async_wrapped_opcode") or inst.opcode
    if op in _SEQUENTIAL_CALLERS:
        return []
    return inst.called_computations


@dataclass(eq=False, slots=True)
class Value:
    """One HloValue: defined by ``instruction`` at ``index``; ``computation`` is its home.

    Its positions other than the defining one are kept in ``other_positions``; the uses are
    found on demand (``Dataflow.uses``). See Note [Lean values].
    """

    id: int
    instruction: Instruction
    index: ShapeIndex
    shape: Shape  # the shape at ``index``
    is_phi: bool = False
    embedded: bool = False  # in a to_apply-style computation: thread-local
    # Where the value appears besides its definition, in the order the dataflow meets them
    # (a shared empty tuple until there is one).
    other_positions: list[tuple[Instruction, ShapeIndex]] | tuple[()] = ()
    defined_here: bool = False  # whether the defining position holds the value (almost always)
    size: int = field(init=False)  # bytes of ``shape``, computed once (assignment reads it often)
    color: int = field(init=False)  # memory space of ``shape``'s layout

    def __post_init__(self) -> None:
        self.size = self.shape.byte_size()
        layout = self.shape.layout
        self.color = layout.memory_space if layout is not None else 0

    @property
    def name(self) -> str:
        return self.instruction.name

    @property
    def positions(self) -> list[tuple[Instruction, ShapeIndex]]:
        """Every position, the defining one first (XLA's ``HloValue::positions``)."""
        head = [(self.instruction, self.index)] if self.defined_here else []
        return head + list(self.other_positions)

    def hlo_positions(self) -> tuple[HloPosition, ...]:
        return tuple(HloPosition(i.name, x) for i, x in self.positions)

    def __repr__(self) -> str:
        return f"<{self.id} {self.name}{list(self.index)}{' (phi)' if self.is_phi else ''}>"


@dataclass(eq=False, slots=True)
class Buffer:
    """One HloBuffer: values that must share an address; ``size`` is the largest of them."""

    id: int
    values: list[Value]
    live_out: bool = False
    size: int = field(init=False)  # the largest value's bytes
    color: int = field(init=False)  # the first value's memory space

    def __post_init__(self) -> None:
        self.size = max(v.size for v in self.values)
        self.color = self.values[0].color


ValueSets = dict[ShapeIndex, list[Value]]
# An instruction's entry in ``Dataflow.sets``: its value sets, or the one Value alone where
# that is all there is (``{(): [v]}``; Note [Lean values]).
SetsEntry = ValueSets | Value


def _lean(sets: ValueSets) -> SetsEntry:
    if len(sets) == 1:
        only = sets.get(())
        if only is not None and len(only) == 1:
            return only[0]
    return sets


def _full(entry: SetsEntry) -> ValueSets:
    return {(): [entry]} if isinstance(entry, Value) else entry


def _values_at(entry: SetsEntry, index: ShapeIndex) -> list[Value]:
    if isinstance(entry, Value):
        return [entry] if not index else []
    return entry.get(index, [])


@dataclass
class Dataflow:
    """The result: values in definition order, buffers, and each instruction's value sets."""

    module: Module
    values: list[Value]
    buffers: list[Buffer]
    buffer_of: list[Buffer]  # value id -> buffer
    # instruction -> index -> values there; the Value alone where that is all (Note [Lean values]):
    # read it through ``value_sets`` and ``value_set``.
    sets: dict[Instruction, SetsEntry]
    embedded: set[Computation]  # thread-local computations
    sequential: list[Computation]  # computations with a schedule (entry, bodies, branches)
    post_order: dict[Computation, list[Instruction]] = field(default_factory=dict)  # instruction_post_order per computation
    _uses: dict[int, list[tuple[Instruction, int, ShapeIndex]]] | None = field(default=None, repr=False)

    def value_sets(self, instruction: Instruction) -> ValueSets:
        """Index -> the values there, for every index of ``instruction``'s shape it has values at."""
        entry = self.sets.get(instruction)
        return {} if entry is None else _full(entry)

    def value_set(self, instruction: Instruction, index: ShapeIndex = ()) -> list[Value]:
        entry = self.sets.get(instruction)
        return [] if entry is None else _values_at(entry, index)

    def top_values(self, instruction: Instruction) -> Sequence[Value]:
        """``value_set(instruction)`` to read, not keep: no list made for a lone value (the
        buffer assignment asks once per operand of every buffer's instruction)."""
        entry = self.sets.get(instruction)
        if entry is None:
            return ()
        return (entry,) if isinstance(entry, Value) else entry.get((), ())

    def uses(self, value: Value) -> list[tuple[Instruction, int, ShapeIndex]]:
        """``value``'s uses, (user, operand number, index in the operand), as XLA's
        ``HloValue::GetUses``: a tuple or bitcast forwards without using, a get-tuple-element
        reads only the tuple's own value. Found for every value on the first ask."""
        if self._uses is None:
            self._uses = _collect_uses(self)
        return self._uses.get(value.id, [])

    def hlo_uses(self, value: Value) -> tuple[HloUse, ...]:
        return tuple(HloUse(i.name, n, x) for i, n, x in self.uses(value))


def _collect_uses(df: Dataflow) -> dict[int, list[tuple[Instruction, int, ShapeIndex]]]:
    # (liveness.last_reads applies the same rule without making a tuple per use)
    uses: dict[int, list[tuple[Instruction, int, ShapeIndex]]] = {}
    for inst in df.sets:
        op = inst.opcode
        if op in FORWARDING:
            continue
        if op is Opcode.GET_TUPLE_ELEMENT:
            for v in df.value_set(inst.operands[0]):
                uses.setdefault(v.id, []).append((inst, 0, ()))
            continue
        for n, operand in enumerate(inst.operands):
            for idx, vs in df.value_sets(operand).items():
                for v in vs:
                    uses.setdefault(v.id, []).append((inst, n, idx))
    return uses


def _indices(shape: Shape, prefix: ShapeIndex = ()) -> Iterator[tuple[ShapeIndex, Shape]]:
    yield prefix, shape
    for i, e in enumerate(getattr(shape, "elements", ())):
        yield from _indices(e, (*prefix, i))


class _Builder:
    def __init__(self, module: Module) -> None:
        self.module = module
        self.values: list[Value] = []
        self.sets: dict[Instruction, SetsEntry] = {}
        self.replaced: dict[Value, list[Value]] = {}  # collapsed phi -> what it stands for
        self.unions: list[tuple[Value, Value]] = []
        self.embedded: set[Computation] = set()
        self.sequential: list[Computation] = []
        self.done: set[Computation] = set()
        self.elements: dict[int, tuple[ValueSets, dict[int, ValueSets]]] = {}  # see element_sets

    def new(self, inst: Instruction, index: ShapeIndex, shape: Shape, *, phi: bool = False, embedded: bool = False) -> Value:
        v = Value(len(self.values), inst, index, shape, phi, embedded)
        self.values.append(v)
        return v

    def define_all(self, inst: Instruction, embedded: bool) -> SetsEntry:
        shape = inst.shape
        if not shape.is_tuple:
            return self.new(inst, (), shape, embedded=embedded)
        return {idx: [self.new(inst, idx, s, embedded=embedded)] for idx, s in _indices(shape)}

    def run(self, comp: Computation, params: list[ValueSets] | None, embedded: bool = False) -> ValueSets:
        """Walk ``comp`` (params given by the caller, or defined here); returns the root's sets."""
        if params is None and comp in self.done:
            return _full(self.sets[comp.root])
        self.done.add(comp)
        if not embedded and comp not in self.sequential:
            self.sequential.append(comp)
        for inst in comp.instructions:
            for callee in _embedded_callees(inst):
                self.embedded.add(callee)
                self.run(callee, None, embedded=True)
            if inst.opcode is Opcode.PARAMETER and params is not None:
                self.sets[inst] = _lean(params[inst.attrs["parameter_number"]])
                continue
            rule = DATAFLOW_RULES.get(inst.opcode)
            if rule is None:
                self.sets[inst] = self.define_all(inst, embedded)
            else:
                out = rule(self, inst)
                self.sets[inst] = out if isinstance(out, Value) else _lean(out)
            if inst.opcode is Opcode.FUSION:
                self._embedded_in_fusion(inst)
        return _full(self.sets[comp.root])

    def _embedded_in_fusion(self, fusion: Instruction) -> None:
        # reduce/sort inside a fusion still call their to_apply as real (thread-local) code.
        for comp in fusion.called_computations:
            for inst in comp.instructions:
                if inst.opcode is Opcode.FUSION:
                    self._embedded_in_fusion(inst)
                for callee in _embedded_callees(inst):
                    if callee not in self.done:
                        self.embedded.add(callee)
                        self.run(callee, None, embedded=True)

    def operand_sets(self, inst: Instruction, i: int) -> ValueSets:
        return _full(self.sets[inst.operands[i]])

    def element_sets(self, sets: ValueSets, k: int) -> ValueSets:
        """``sets``' element ``k`` re-rooted at ``()``: what ``get-tuple-element index=k`` sees.

        Each tuple's sets are split by first index once, so ``n`` get-tuple-elements of an
        ``n``-tuple cost ``O(n)`` in all, not ``O(n)`` each (a loop body reading its state).
        """
        cached = self.elements.get(id(sets))
        if cached is None or cached[0] is not sets:
            split: dict[int, ValueSets] = {}
            for idx, vs in sets.items():
                if idx:
                    split.setdefault(idx[0], {})[idx[1:]] = vs
            cached = self.elements[id(sets)] = (sets, split)
        return dict(cached[1].get(k, {}))


# --- the registry: how each opcode defines or forwards values ---------------------------------
_Rule = Callable[[_Builder, "Instruction"], SetsEntry]
DATAFLOW_RULES: OpTable[_Rule] = OpTable(
    "dataflow", fallback="defines a fresh value at every index of its shape (define_all)")
_rule = DATAFLOW_RULES.register


def _sub(sets: ValueSets, prefix: ShapeIndex, new_prefix: ShapeIndex = ()) -> ValueSets:
    n = len(prefix)
    return {(*new_prefix, *idx[n:]): vs for idx, vs in sets.items() if idx[:n] == prefix}


def _is_embedded(b: _Builder, inst: Instruction) -> bool:
    return inst.computation in b.embedded


@_rule(Opcode.BITCAST, Opcode.OPTIMIZATION_BARRIER, Opcode.ASYNC_UPDATE)
def _forward(b: _Builder, inst: Instruction) -> SetsEntry:
    entry = b.sets[inst.operands[0]]
    return entry if isinstance(entry, Value) else dict(entry)


@_rule(Opcode.TUPLE)
def _tuple(b: _Builder, inst: Instruction) -> ValueSets:
    out: ValueSets = {(): [b.new(inst, (), inst.shape, embedded=_is_embedded(b, inst))]}
    for i in range(len(inst.operands)):
        out.update(_sub(b.operand_sets(inst, i), (), (i,)))
    return out


@_rule(Opcode.GET_TUPLE_ELEMENT)
def _gte(b: _Builder, inst: Instruction) -> SetsEntry:
    # The tuple's own dict, not a copy: element_sets splits each tuple's sets once.
    return _lean(b.element_sets(_full(b.sets[inst.operands[0]]), inst.attrs["index"]))


@_rule(Opcode.COPY_START)
def _copy_start(b: _Builder, inst: Instruction) -> ValueSets:
    # XLA's copy-start defines its tuple, the destination {0} and the context {2}; {1} is the
    # operand's own value (a value defined there too was a phantom copy of the source buffer,
    # seed 004's 56 MiB `copy-start{1}` at the peak).
    embedded = _is_embedded(b, inst)
    out: ValueSets = {idx: [b.new(inst, idx, shape, embedded=embedded)]
                      for idx, shape in _indices(inst.shape)
                      if idx[:1] != (1,)}
    out.update(_sub(b.operand_sets(inst, 0), (), (1,)))
    return out


@_rule(Opcode.COPY_DONE)
def _copy_done(b: _Builder, inst: Instruction) -> ValueSets:
    return _sub(b.operand_sets(inst, 0), (0,))


def _define_where(b: _Builder, inst: Instruction, keep: Callable[[ShapeIndex, Shape], bool]) -> ValueSets:
    embedded = _is_embedded(b, inst)
    return {idx: [b.new(inst, idx, shape, embedded=embedded)]
            for idx, shape in _indices(inst.shape) if keep(idx, shape)}


# Note [Async collectives]: a start's operand slot {0} holds the operands' own values and its
# destination {1} is defined by the start; the done's result is the start's destination (an
# all-reduce-done its operand), as in XLA's HloDataflowAnalysis. Defining fresh values there
# made phantom buffers the size of every operand and result.
@_rule(Opcode.ALL_REDUCE_DONE)
def _all_reduce_done(b: _Builder, inst: Instruction) -> ValueSets:
    return dict(b.operand_sets(inst, 0))


@_rule(Opcode.ALL_GATHER_START)
def _all_gather_start(b: _Builder, inst: Instruction) -> ValueSets:
    out = _define_where(b, inst, lambda idx, shape: shape.is_tuple or idx[:1] == (1,))
    n = len(inst.operands)
    for i in range(n):
        out.update(_sub(b.operand_sets(inst, i), (), (0,) if n == 1 else (0, i)))
    return out


@_rule(Opcode.COLLECTIVE_PERMUTE_START)
def _collective_permute_start(b: _Builder, inst: Instruction) -> ValueSets:
    out = _define_where(b, inst, lambda idx, shape: idx[:1] != (0,))
    operands = inst.operands
    if len(operands) > 1 and len(operands) != 4:  # several operands, not the in-place form
        for k in range(len(operands)):
            out.update(_sub(b.operand_sets(inst, k), (), (0, k)))
    else:
        out.update(_sub(b.operand_sets(inst, 0), (), (0,)))
    return out


@_rule(Opcode.ALL_GATHER_DONE, Opcode.COLLECTIVE_PERMUTE_DONE)
def _done_of_destination(b: _Builder, inst: Instruction) -> ValueSets:
    out = b.element_sets(b.operand_sets(inst, 0), 1)
    if inst.shape.is_tuple:
        out[()] = [b.new(inst, (), inst.shape, embedded=_is_embedded(b, inst))]
    return out


@_rule(Opcode.ASYNC_START)
def _async_start(b: _Builder, inst: Instruction) -> ValueSets:
    # XLA's async-start defines its tuples, its result {1} (inside the wrapped computation,
    # which hloscope does not model: the start stands in) and its contexts {2...}; the
    # operand slots {0, i} are the operands' own values, not copies.
    embedded = _is_embedded(b, inst)
    out: ValueSets = {idx: [b.new(inst, idx, shape, embedded=embedded)]
                      for idx, shape in _indices(inst.shape)
                      if shape.is_tuple or idx[0] != 0}
    for i in range(len(inst.operands)):
        out.update(_sub(b.operand_sets(inst, i), (), (0, i)))
    return out


@_rule(Opcode.ASYNC_DONE)
def _async_done(b: _Builder, inst: Instruction) -> ValueSets:
    return _sub(b.operand_sets(inst, 0), (1,))


@_rule(Opcode.CALL)
def _call(b: _Builder, inst: Instruction) -> ValueSets:
    callee = inst.attrs["to_apply"]
    params = [b.operand_sets(inst, i) for i in range(len(inst.operands))]
    return dict(b.run(callee, params))


@_rule(Opcode.CONDITIONAL)
def _conditional(b: _Builder, inst: Instruction) -> ValueSets:
    branches = inst.attrs.get("branch_computations") or [
        inst.attrs["true_computation"], inst.attrs["false_computation"]]
    roots = [b.run(c, [b.operand_sets(inst, k + 1)]) for k, c in enumerate(branches)]
    out: ValueSets = {}
    for idx, shape in _indices(inst.shape):
        first = roots[0].get(idx, [])
        if all(r.get(idx, []) == first for r in roots[1:]) and len(first) == 1:
            out[idx] = first
            continue
        phi = b.new(inst, idx, shape, phi=True)
        for r in roots:
            for v in r.get(idx, []):
                b.unions.append((phi, v))
        out[idx] = [phi]
    return out


@_rule(Opcode.WHILE)
def _while(b: _Builder, inst: Instruction) -> ValueSets:
    # See Note [Aliasing through while].
    init = b.operand_sets(inst, 0)
    body, cond = inst.attrs["body"], inst.attrs["condition"]
    shapes = list(_indices(inst.shape))
    phis = {}
    for place in (cond.parameters[0], body.parameters[0], inst):
        phis[place] = {idx: b.new(place, idx, s, phi=True) for idx, s in shapes}
    b.run(cond, [{i: [v] for i, v in phis[cond.parameters[0]].items()}])
    root = b.run(body, [{i: [v] for i, v in phis[body.parameters[0]].items()}])
    for idx, _ in shapes:
        body_phi = phis[body.parameters[0]][idx]
        if root.get(idx) == [body_phi]:
            for place in phis:
                b.replaced[phis[place][idx]] = init.get(idx, [])
            continue
        group = [phis[p][idx] for p in phis] + init.get(idx, []) + root.get(idx, [])
        for v in group[1:]:
            b.unions.append((group[0], v))
    return {idx: [phis[inst][idx]] for idx, _ in shapes}


def in_place_pairs(inst: Instruction) -> list[tuple[int, ShapeIndex, ShapeIndex]]:
    """(operand number, operand index, output index) that must share (Note [In-place outputs])."""
    op = inst.opcode
    if op is Opcode.DYNAMIC_UPDATE_SLICE:
        return [(0, (), ())]
    if op is Opcode.SCATTER:
        n = len(inst.operands) // 2
        return [(i, (), (i,) if n > 1 else ()) for i in range(n)]
    pairs: list[tuple[int, ShapeIndex, ShapeIndex]] = []
    raw = inst.attrs.get("output_to_operand_aliasing")
    if raw is not None:
        text = getattr(raw, "text", str(raw))
        for out_idx, num, op_idx in re.findall(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}", text):
            pairs.append((int(num), _ints(op_idx), _ints(out_idx)))
    if op is Opcode.FUSION:
        root = inst.attrs["calls"].root
        outs = list(enumerate(root.operands)) if root.opcode is Opcode.TUPLE else [(None, root)]
        for k, r in outs:
            # A bitcast of the updated buffer is still that buffer (measured on XLA:CPU, jaxlib
            # 0.10: vmapped scatters fuse into dynamic-update-slice + bitcast and stay in place).
            while r.opcode is Opcode.BITCAST:
                r = r.operands[0]
            if r.opcode in (Opcode.DYNAMIC_UPDATE_SLICE, Opcode.SCATTER):
                src = r.operands[0]
                while src.opcode is Opcode.BITCAST:
                    src = src.operands[0]
                if src.opcode is Opcode.PARAMETER:
                    pairs.append((src.attrs["parameter_number"], (), () if k is None else (k,)))
    return pairs


def _ints(text: str) -> ShapeIndex:
    return tuple(int(x) for x in text.replace(" ", "").split(",") if x)


def analyze_dataflow(module: Module) -> Dataflow:
    """Values, positions, uses and buffers of ``module`` (see the module docstring)."""
    b = _Builder(module)
    b.run(module.entry, None)

    def resolve(vs: list[Value]) -> list[Value]:
        out: list[Value] = []
        for v in vs:
            if v in b.replaced:
                out.extend(resolve(b.replaced[v]))
            elif v not in out:
                out.append(v)
        return out

    # Resolved in place, and only where something is to resolve: copying every instruction's
    # sets doubled the analysis's memory (at 3M instructions, gigabytes of fresh pages).
    sets, replaced = b.sets, b.replaced
    for inst, s in sets.items():
        if isinstance(s, Value):
            if s in replaced:
                sets[inst] = _lean({(): resolve([s])})
            continue
        for idx, vs in s.items():
            if len(vs) != 1 or vs[0] in replaced:
                s[idx] = resolve(vs)
    live = [v for v in b.values if v not in b.replaced]
    # Only computations that hold values need an order (fusion bodies hold none: most of an
    # optimized module's computations).
    homes = {v.instruction.computation for v in live}
    post_order = {comp: instruction_post_order(comp) for comp in module.computations if comp in homes}
    _sort_as_xla_numbers(live, module, post_order)  # Note [Value numbering]
    for i, v in enumerate(live):
        v.id = i
    # Positions, in one pass over every instruction (Note [Lean values]).
    for inst, s in sets.items():
        if isinstance(s, Value):
            if s.instruction is inst and not s.index:
                s.defined_here = True
            elif s.other_positions:
                s.other_positions.append((inst, ()))
            else:
                s.other_positions = [(inst, ())]
            continue
        for idx, vs in s.items():
            for v in vs:
                if v.instruction is inst and v.index == idx:
                    v.defined_here = True
                elif v.other_positions:
                    v.other_positions.append((inst, idx))
                else:
                    v.other_positions = [(inst, idx)]
    # Union-find over values -> buffers.
    # Only values that join another have an entry (most stay alone: a list over all values
    # made an int per value, 3 M of them at 100x).
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        up = parent.get(x, x)
        while up != x:
            top = parent.get(up, up)
            parent[x] = top
            x, up = top, parent.get(top, top)
        return x

    def union(a: Value, c: Value) -> None:
        ra, rc = find(a.id), find(c.id)
        if ra != rc:
            parent[max(ra, rc)] = min(ra, rc)

    for a, c in b.unions:
        for x in resolve([a]):
            for y in resolve([c]):
                union(x, y)
    for inst, s in sets.items():
        for num, op_idx, out_idx in in_place_pairs(inst):
            if num < len(inst.operands):
                for x in _values_at(sets[inst.operands[num]], op_idx):
                    for y in _values_at(s, out_idx):
                        union(x, y)
    entry = module.entry
    root_sets = _full(sets[entry.root])
    for alias in module.input_output_alias:
        param = entry.parameters[alias.parameter_number]
        for x in _values_at(sets[param], tuple(alias.parameter_index)):
            for y in root_sets.get(tuple(alias.output_index), []):
                union(x, y)
    # A buffer's root is its smallest value id (``union`` keeps the smaller), so walking the
    # values in id order meets each buffer at its root first: buffers come in root order.
    buffers: list[Buffer] = []
    buffer_of: list[Buffer] = []
    for v in live:
        root = find(v.id)
        if root == v.id:
            buf = Buffer(len(buffers), [v])
            buffers.append(buf)
        else:
            buf = buffer_of[root]
            buf.values.append(v)
            if v.size > buf.size:
                buf.size = v.size
        buffer_of.append(buf)
    for vs in root_sets.values():
        for v in vs:
            buffer_of[v.id].live_out = True
    return Dataflow(module, live, buffers, buffer_of, sets, b.embedded, b.sequential, post_order)


def _sort_as_xla_numbers(values: list[Value], module: Module,
                         post_order: dict[Computation, list[Instruction]]) -> None:
    """Sort ``values``, still in creation order, into XLA's numbering (Note [Value numbering]).

    The order is (computation's rank, post-order position, index, creation number), phis last
    in creation order. Two stable sorts give it without a tuple per value: by index first (phis
    all alike), then by one int per instruction, shared by its values (a 3 M-value module made
    3 M five-element keys).
    """
    comps = module.computations
    width = max((len(order) for order in post_order.values()), default=0) + 1
    rank: dict[Instruction, int] = {}
    for c, comp in enumerate(comps):
        order = post_order.get(comp)
        if order is not None:
            base = c * width + 1
            for k, inst in enumerate(order):
                rank[inst] = base + k
    comp_rank: dict[Computation | None, int] = {c: k for k, c in enumerate(comps)}
    phi_key = len(comps) * width  # above every instruction's

    def instruction_key(v: Value) -> int:
        if v.is_phi:
            return phi_key
        inst = v.instruction
        r = rank.get(inst)
        # One outside every post order ranks first within its computation (outside every
        # computation: first of all), as XLA never meets one.
        return r if r is not None else comp_rank.get(inst.computation, -1) * width

    empty: ShapeIndex = ()
    values.sort(key=lambda v: empty if v.is_phi else v.index)
    values.sort(key=instruction_key)


def instruction_post_order(comp: Computation) -> list[Instruction]:
    """XLA's ``MakeInstructionPostOrder``: operands before users, walking depth first from each
    instruction without users or control successors (in the computation's order), first
    operand first, control predecessors before operands."""
    instructions = comp.instructions
    # Read straight from attrs, and operands pushed even when done (popped at once then): a
    # generator per instruction was most of the cost (307,000 instructions at ten times Llama).
    has_successor: set[Instruction] = set()
    for i in instructions:
        preds = i.attrs.get("control-predecessors")
        if preds:
            has_successor.update(preds)
    # Who is used at all, not by whom: the computation's user map would outlive the call.
    used: set[Instruction] = set()
    for i in instructions:
        used.update(i.operands)
    visiting: set[Instruction] = set()
    done: set[Instruction] = set()
    out: list[Instruction] = []
    for root in instructions:
        if root in used or root in has_successor or root in done:
            continue
        stack = [root]
        while stack:
            cur = stack[-1]
            if cur in done:
                stack.pop()
                continue
            if cur in visiting:
                stack.pop()
                visiting.discard(cur)
                done.add(cur)
                out.append(cur)
                continue
            visiting.add(cur)
            stack.extend(reversed(cur.operands))
            preds = cur.attrs.get("control-predecessors")
            if preds:
                stack.extend(preds)
    return out

"""Which value of one module is which value of another module of the same program.

``match_values(a, b)`` pairs each value of ``b`` (an instruction's result, inside fusions
too) with at most one value of ``a`` that should hold the same numbers (Note [Matching
values]); ``compare`` (compare.py) then runs both and compares the pairs.

Note [Matching values]
    XLA's passes keep an instruction's ``metadata`` (op_name, source line) through fusion,
    layout assignment and SPMD partitioning, so op_name is the thread between a module before
    and after optimizations, or between two compilers' outputs of one jax program. Values are
    seen through fusions: a fused parameter is the fusion's operand, a fusion is its fused
    root (``resolve``). In order:

    1. Entry parameters pair by number, and the outputs (the root's elements) by index.
    2. Two versions of one module (one of them edited) keep their names: when nearly every
       value of ``b`` has a namesake of the same opcode in ``a``, names pair them.
    3. Within each op_name, walking ``b`` in execution order (so operands are paired before
       their users), a value pairs with the one value of ``a`` of the same opcode whose
       operands are all its operands' partners, position by position (or the same
       constants): the same operation on the same values. Without such anchors it pairs
       only when it is the one value of its op_name, opcode and shape on both sides and its
       unpaired operands have the opcodes of the other's. XLA's
       rewrites keep the op_name on new instructions that compute something else (the
       simplifier folds ``m / c / d`` into ``m / (c * d)`` and the new divide keeps the
       divide's op_name; a broadcast hoisted out of a divide keeps it too), so op_name and
       position alone pair wrongly, and a wrong pair shows as a divergence. Every pair must
       also be *consistent*: each paired operand of ``b``'s value is paired with an
       ancestor of ``a``'s. Shapes are equal, or differ by a whole factor per dimension (a
       partitioned module's shard of a global value).
    4. Dataflow fills what metadata leaves out (constants and broadcasts often have none):
       for a pair of the same opcode, operands at the same position pair when they have the
       same opcode, compatible shapes and the same (or no) op_name; repeated until nothing
       changes.
    5. A fusion's value is its fused root's, so a fusion takes the partner of its root.

    Several values of ``b`` may pair with one of ``a`` (XLA clones an instruction into every
    fusion that reads it; a fused ``log`` and the fusion it is the root of), never the other
    way round. Values with no partner are not compared:
    when in doubt, none is better than a wrong one, which would show as a divergence.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict

from hloscope.interpret.observe import fusion_callers, watched_computations
from hloscope.ir import ArrayShape, Computation, Instruction, Module, Opcode

__all__ = ["Matching", "match_values", "value_instructions", "execution_order", "compatible_shapes", "resolve",
           "precision_floor"]

# Instructions that hold no value of their own (their value is another's), never compared.
_NOT_VALUES = frozenset({Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT, Opcode.WHILE, Opcode.CALL,
                         Opcode.CONDITIONAL, Opcode.OPTIMIZATION_BARRIER, Opcode.AFTER_ALL,
                         Opcode.ADD_DEPENDENCY, Opcode.PARAMETER})
_ANCESTOR_SEARCH = 4000  # values visited at most when checking that one value is upstream of another

Callers = dict[Computation, Instruction]


@dataclasses.dataclass
class Matching:
    """``partner[b] = a`` for each matched value of ``b``; ``how[b]`` says which rule matched
    it ("parameter", "output", "name", "op_name", "dataflow", "fusion root")."""

    partner: dict[Instruction, Instruction] = dataclasses.field(default_factory=dict)
    how: dict[Instruction, str] = dataclasses.field(default_factory=dict)

    def add(self, b: Instruction, a: Instruction, how: str) -> bool:
        if b in self.partner:
            return False
        self.partner[b] = a
        self.how[b] = how
        return True

    def __len__(self) -> int:
        return len(self.partner)


def value_instructions(module: Module) -> list[Instruction]:
    """The instructions whose results are values to compare: every instruction of the
    watched computations and the fused ones (Note [Watched computations] in
    interpret/observe.py) except those whose value is another's, in their computations' order."""
    out = []
    for comp in watched_computations(module, fused=True):
        for inst in comp.instructions:
            if inst.opcode not in _NOT_VALUES:
                out.append(inst)
    return out


def execution_order(module: Module) -> list[Instruction]:
    """The values of ``module`` (as ``value_instructions``) in the order a run makes them: a
    called computation's instructions just before the instruction calling it."""
    out: list[Instruction] = []
    watched = {id(c) for c in watched_computations(module, fused=True)}
    seen: set[int] = set()

    def walk(comp: Computation) -> None:
        seen.add(id(comp))
        for inst in comp.instructions:
            for callee in inst.called_computations:
                if id(callee) in watched and id(callee) not in seen:
                    walk(callee)
            if inst.opcode not in _NOT_VALUES:
                out.append(inst)

    walk(module.entry)
    return out


def _shape_key(inst: Instruction) -> str:
    return inst.shape.to_text(layout=False)


def compatible_shapes(a: Instruction, b: Instruction) -> bool:
    """Same element type and rank, each dimension of ``a`` a whole multiple of ``b``'s (a
    shard of a global value) or the other way round."""
    sa, sb = a.shape, b.shape
    if not isinstance(sa, ArrayShape) or not isinstance(sb, ArrayShape):
        return _shape_key(a) == _shape_key(b)
    if sa.element_type != sb.element_type or len(sa.dimensions) != len(sb.dimensions):
        return False
    da, db = tuple(sa.dimensions), tuple(sb.dimensions)
    if da == db:
        return True
    return all(y and x % y == 0 for x, y in zip(da, db)) or all(x and y % x == 0 for x, y in zip(da, db))


def _op_name(inst: Instruction) -> str | None:
    md = inst.metadata
    return md.op_name if md is not None else None


def resolve(inst: Instruction, callers: Callers) -> Instruction:
    """The instruction that made ``inst``'s value: a fused parameter's fusion operand, a
    fusion's fused root, a get-tuple-element's tuple element (through tuples and fusions).
    ``callers`` maps fused computations to their fusion (``observe.fusion_callers``)."""
    for _ in range(64):
        op = inst.opcode
        if op is Opcode.FUSION:
            inst = inst.called_computations[0].root
        elif op is Opcode.PARAMETER:
            caller = callers.get(inst.computation) if inst.computation is not None else None
            if caller is None:
                return inst
            inst = caller.operands[inst.parameter_number]
        elif op is Opcode.GET_TUPLE_ELEMENT:
            t = inst.operands[0]
            inner = t.called_computations[0].root if t.opcode is Opcode.FUSION else t
            if inner.opcode is not Opcode.TUPLE:
                return inst
            inst = inner.operands[inst.attrs["index"]]
        else:
            return inst
    return inst


def _literal(inst: Instruction) -> object:
    """A constant's value, through broadcasts of it: one number when every element is the
    same (``f32[1] {0.1}`` and a broadcast ``f32[] 0.1`` alike), else its text; None when
    ``inst`` is no constant."""
    while inst.opcode is Opcode.BROADCAST:
        inst = inst.operands[0]
    if inst.opcode is not Opcode.CONSTANT:
        return None
    literal = inst.attrs.get("literal")
    shape = inst.shape
    if isinstance(shape, ArrayShape) and literal is not None and not literal.elided:
        try:
            size = 1
            for d in shape.dimensions:
                size *= d
            if size <= 64:
                values = literal.to_numpy(shape).reshape(-1)
                if values.size and (values == values[0]).all():
                    return float(values[0]) if values.dtype.kind in "fiub" else str(values[0])
        except Exception:  # an odd literal: compare its text
            pass
    return str(literal)


class _Side:
    """One module's values seen through fusions: each value's resolved operands."""

    def __init__(self, module: Module, order: list[Instruction]) -> None:
        self.module = module
        self.callers = fusion_callers(module)
        self.values = order
        self.inputs: dict[Instruction, list[Instruction]] = {
            v: [resolve(o, self.callers) for o in v.operands] for v in order}
        self._upstream: dict[tuple[int, int], bool] = {}

    def upstream(self, x: Instruction, y: Instruction) -> bool:
        """Whether ``x``'s value flows into ``y``'s (``x`` is ``y`` or one of its ancestors);
        a search bounded by ``_ANCESTOR_SEARCH`` values says yes when it cannot tell."""
        key = (id(x), id(y))
        known = self._upstream.get(key)
        if known is not None:
            return known
        found = x is y
        todo, seen = [y], {id(y)}
        while todo and not found and len(seen) < _ANCESTOR_SEARCH:
            for o in self.inputs.get(todo.pop(), ()):
                if o is x:
                    found = True
                    break
                if id(o) not in seen:
                    seen.add(id(o))
                    todo.append(o)
        else:
            if not found and len(seen) >= _ANCESTOR_SEARCH:
                found = True
        self._upstream[key] = found
        return found


def match_values(a: Module, b: Module) -> Matching:
    """Pair the values of ``b`` with those of ``a`` (Note [Matching values])."""
    m = Matching()
    sa, sb = _Side(a, execution_order(a)), _Side(b, execution_order(b))
    for pa, pb in zip(a.entry.parameters, b.entry.parameters):
        m.add(pb, pa, "parameter")
    oa = [resolve(o, sa.callers) for o in _outputs(a)]
    ob = [resolve(o, sb.callers) for o in _outputs(b)]
    if len(oa) == len(ob):
        for x, y in zip(oa, ob):
            if y.opcode not in _NOT_VALUES and x.opcode not in _NOT_VALUES and compatible_shapes(x, y):
                m.add(y, x, "output")
    _same_names(m, sa.values, sb.values)
    by_name_a: dict[str, list[Instruction]] = defaultdict(list)
    for inst in sa.values:
        name = _op_name(inst)
        if name:
            by_name_a[name].append(inst)
    classes_a: dict[tuple[object, ...], int] = defaultdict(int)
    for inst in sa.values:
        classes_a[_class(inst)] += 1
    classes_b: dict[tuple[object, ...], int] = defaultdict(int)
    for inst in sb.values:
        classes_b[_class(inst)] += 1
    for inst in sb.values:  # operands before users: their partners anchor the choice
        name = _op_name(inst)
        if not name or inst in m.partner or inst.opcode is Opcode.FUSION:
            continue
        cands = [x for x in by_name_a.get(name, ()) if _may_pair(m, sa, sb, x, inst)]
        anchored = [x for x in cands if _anchored(m, sa, sb, x, inst)]
        if len(anchored) == 1:
            m.add(inst, anchored[0], "op_name")
        elif (not anchored and len(cands) == 1 and classes_b[_class(inst)] == 1
              and classes_a[_class(cands[0])] == 1 and _anchored(m, sa, sb, cands[0], inst, loose=True)):
            m.add(inst, cands[0], "op_name")
    _propagate(m, sa, sb)
    _fusions(m, sb.values)
    return m


def _outputs(module: Module) -> list[Instruction]:
    root = module.entry.root
    return list(root.operands) if root.opcode is Opcode.TUPLE else [root]


def _same_names(m: Matching, values_a: list[Instruction], values_b: list[Instruction]) -> None:
    """Step 2 of Note [Matching values]."""
    by_name = {x.name: x for x in values_a}
    hits = []
    for y in values_b:
        x = by_name.get(y.name)
        if x is not None and x.opcode is y.opcode and compatible_shapes(x, y):
            hits.append((y, x))
    if values_b and len(hits) >= 0.9 * len(values_b):
        for y, x in hits:
            m.add(y, x, "name")


def _class(inst: Instruction) -> tuple[object, ...]:
    return (_op_name(inst), inst.opcode, _shape_key(inst))


def _may_pair(m: Matching, sa: _Side, sb: _Side, a: Instruction, b: Instruction) -> bool:
    """Step 3's conditions: the same opcode, compatible shapes, consistent."""
    if a.opcode is not b.opcode or not compatible_shapes(a, b):
        return False
    for o in sb.inputs.get(b, ()):
        p = m.partner.get(o)
        if p is not None and (p is a or not sa.upstream(p, a)):
            return False
    return True


def _anchored(m: Matching, sa: _Side, sb: _Side, a: Instruction, b: Instruction, *, loose: bool = False) -> bool:
    """Every operand of ``b`` is paired with ``a``'s at the same position, or both are the
    same constant (Note [Matching values], step 3); ``loose`` also lets an operand with no
    partner stand for one of the same opcode."""
    ia, ib = sa.inputs.get(a, []), sb.inputs.get(b, [])
    if len(ia) != len(ib) or not ib:
        return loose and len(ia) == len(ib)
    for ra, rb in zip(ia, ib):
        if m.partner.get(rb) is ra:
            continue
        la = _literal(ra)
        if la is not None and la == _literal(rb):
            continue
        if not (loose and rb not in m.partner and ra.opcode is rb.opcode and la is None):
            return False
    return True


def _propagate(m: Matching, sa: _Side, sb: _Side) -> None:
    """Step 4 of Note [Matching values]: operands at the same position of matched pairs."""
    work = list(m.partner.items())
    while work:
        b, a = work.pop()
        ib, ia = sb.inputs.get(b), sa.inputs.get(a)
        if b.opcode is not a.opcode or ib is None or ia is None or len(ib) != len(ia):
            continue
        for bo, ao in zip(ib, ia):
            if (bo in m.partner or bo.opcode in _NOT_VALUES or ao.opcode in _NOT_VALUES
                    or _op_name(bo) != _op_name(ao) or not _may_pair(m, sa, sb, ao, bo)):
                continue
            m.add(bo, ao, "dataflow")
            work.append((bo, ao))


def _fusions(m: Matching, values_b: list[Instruction]) -> None:
    """Step 5 of Note [Matching values]: a fusion is its fused root."""
    for inst in values_b:
        if inst.opcode is Opcode.FUSION and inst not in m.partner:
            root = inst.called_computations[0].root
            a = m.partner.get(root)
            if a is not None and compatible_shapes(a, inst):
                m.add(inst, a, "fusion root")


def precision_floor(module: Module, looseness: dict[str, float]) -> dict[Instruction, str]:
    """For each value, the float type among its own and its ancestors' (through fusions)
    with the largest ``looseness`` (a number per dtype name; types not in it are ignored): a
    float32 value computed from bfloat16 ones carries bfloat16's rounding, which two modules
    that round in different places show (Note [Comparing values] in tolerances.py)."""
    callers = fusion_callers(module)
    floor: dict[Instruction, str] = {}

    def own(inst: Instruction) -> str | None:
        shape = inst.shape
        name = shape.element_type if isinstance(shape, ArrayShape) else None
        return name if name is not None and name in looseness else None

    for v in execution_order(module):
        best = own(v)
        for o in v.operands:
            r = resolve(o, callers)
            f = floor.get(r) or own(r)
            if f is not None and (best is None or looseness[f] > looseness[best]):
                best = f
        if best is not None:
            floor[v] = best
    return floor

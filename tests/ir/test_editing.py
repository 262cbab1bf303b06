"""Editing the IR: add, replace and remove instructions with ``users`` kept correct, and
``replace_all_uses_with`` (Note [Editing the IR] in hloscope/ir/computation.py)."""
from __future__ import annotations

import pytest

from hloscope.ir import ArrayShape, Instruction, Opcode
from hloscope.text import parse_module

TEXT = """HloModule m

ENTRY e {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  a = f32[4] add(p, q)
  b = f32[4] multiply(a, a)
  ROOT c = f32[4] subtract(b, p)
}
"""

F32 = ArrayShape("f32", (4,))


def _module():
    m = parse_module(TEXT)
    e = m.entry
    return m, e, {i.name: i for i in e.instructions}


def _names(insts) -> list[str]:
    return [i.name for i in insts]


def _users_from_scratch(comp) -> dict[str, list[str]]:
    """The users each instruction should have, recomputed from the operands."""
    out: dict[str, list[str]] = {i.name: [] for i in comp.instructions}
    for inst in comp.instructions:
        for op in dict.fromkeys(inst.operands):
            out[op.name].append(inst.name)
    return {k: sorted(v) for k, v in out.items()}


def _check_users(comp) -> None:
    assert {i.name: sorted(_names(i.users)) for i in comp.instructions} == _users_from_scratch(comp)


def test_users_of_a_module_as_read() -> None:
    _, e, i = _module()
    assert _names(i["p"].users) == ["a", "c"]
    assert _names(i["a"].users) == ["b"]  # used twice by b, listed once
    assert i["c"].users == []


def test_add_instruction_before_and_at_end() -> None:
    _, e, i = _module()
    e.users(i["p"])  # build the map first, so the edits below must keep it up to date
    neg = e.add_instruction(Instruction("n", Opcode.NEGATE, F32, [i["a"]]), before=i["b"])
    assert _names(e.instructions) == ["p", "q", "a", "n", "b", "c"]
    assert neg.computation is e
    assert _names(i["a"].users) == ["b", "n"]
    tail = e.add_instruction(Instruction("t", Opcode.ABS, F32, [neg]))
    assert e.instructions[-1] is tail and _names(neg.users) == ["t"]
    _check_users(e)


def test_add_instruction_rejects_foreign_operands() -> None:
    _, e, _ = _module()
    stray = Instruction("x", Opcode.NEGATE, F32)
    with pytest.raises(ValueError, match="belongs to no computation"):
        e.add_instruction(Instruction("y", Opcode.ABS, F32, [stray]))


def test_replace_all_uses_with_updates_users_and_root() -> None:
    _, e, i = _module()
    changed = i["p"].replace_all_uses_with(i["q"])
    assert _names(changed) == ["a", "c"]
    assert i["p"].users == [] and _names(i["q"].users) == ["a", "c"]
    assert [o.name for o in i["a"].operands] == ["q", "q"]
    _check_users(e)
    d = e.add_instruction(Instruction("d", Opcode.NEGATE, F32, [i["c"]]))
    i["c"].replace_all_uses_with(d)  # c is the root: d becomes the root (as in XLA)
    assert e.root is d
    _check_users(e)


def test_replace_instruction_takes_place_users_and_root() -> None:
    _, e, i = _module()
    e.users(i["a"])
    b2 = Instruction("b2", Opcode.ADD, F32, [i["a"], i["q"]])
    assert e.replace_instruction(i["b"], b2) is b2
    assert _names(e.instructions) == ["p", "q", "a", "b2", "c"]
    assert i["b"].computation is None and i["b"] not in e.users(i["a"])
    assert _names(i["a"].users) == ["b2"] and _names(b2.users) == ["c"]
    c2 = Instruction("c", Opcode.NEGATE, F32, [b2])
    e.replace_instruction(i["c"], c2)
    assert e.root is c2 and e.instruction("c") is c2
    _check_users(e)


def test_replace_instruction_needs_the_same_shape() -> None:
    _, e, i = _module()
    with pytest.raises(ValueError, match="shapes differ"):
        e.replace_instruction(i["b"], Instruction("w", Opcode.NEGATE, ArrayShape("f32", (8,)), []))


def test_remove_instruction() -> None:
    _, e, i = _module()
    with pytest.raises(ValueError, match="still used by b"):
        e.remove_instruction(i["a"])
    with pytest.raises(ValueError, match="root"):
        e.remove_instruction(i["c"])
    i["q"].replace_all_uses_with(i["p"])
    with pytest.raises(ValueError, match="signature"):
        e.remove_instruction(i["q"])
    dead = e.add_instruction(Instruction("dead", Opcode.NEGATE, F32, [i["a"]]))
    e.remove_instruction(dead)
    assert dead.computation is None
    assert _names(i["a"].users) == ["b"] and "dead" not in _names(e.instructions)
    _check_users(e)


def test_replace_operand_with() -> None:
    _, e, i = _module()
    i["b"].replace_operand_with(0, i["p"])  # b = multiply(p, a): a still used once
    assert _names(i["a"].users) == ["b"] and _names(i["p"].users) == ["a", "c", "b"]
    i["b"].replace_operand_with(1, i["p"])  # a is no longer used by b
    assert i["a"].users == []
    _check_users(e)


def test_control_dependencies_follow_a_replaced_instruction() -> None:
    m = parse_module("""HloModule m

ENTRY e {
  p = f32[4] parameter(0)
  a = f32[4] negate(p)
  b = f32[4] abs(p), control-predecessors={a}
  ROOT t = (f32[4], f32[4]) tuple(a, b)
}
""")
    e = m.entry
    a, b = e.instruction("a"), e.instruction("b")
    a2 = e.replace_instruction(a, Instruction("a2", Opcode.NEGATE, F32, [e.instruction("p")]))
    assert b.control_predecessors == [a2]
    b2 = e.add_instruction(Instruction("b2", Opcode.ABS, F32, [e.instruction("p")]))
    e.replace_instruction(b, b2)
    assert b2.control_predecessors == [a2]
    c = e.add_instruction(Instruction("c", Opcode.ABS, F32, [e.instruction("p")],
                                      {"control-predecessors": [b2]}))
    e.remove_instruction(c)  # unused: removing it drops its control edge from b2
    e.replace_instruction(b2, Instruction("b3", Opcode.ABS, F32, [e.instruction("p")]))
    d = e.add_instruction(Instruction("d", Opcode.ABS, F32, [e.instruction("p")],
                                      {"control-predecessors": [a2]}))
    e.remove_instruction(d)
    assert "control-predecessors" not in d.attrs and e.instruction("b3").control_predecessors == [a2]
    a2.replace_all_uses_with(e.instruction("p"))
    e.remove_instruction(a2)  # a control predecessor of b3: the edge goes with it
    assert e.instruction("b3").control_predecessors == []


def test_printed_after_edits() -> None:
    m, e, i = _module()
    neg = e.add_instruction(Instruction("n", Opcode.NEGATE, F32, [i["b"]]), before=i["c"])
    e.replace_operand(i["c"], 0, neg)
    text = m.to_text()
    assert "n = f32[4] negate(b)" in text and "ROOT c = f32[4] subtract(n, p)" in text
    assert parse_module(text).equals(m)


def test_module_add_and_remove_computation() -> None:
    m, e, _ = _module()
    callee = parse_module("HloModule x\n\nENTRY f {\n  ROOT z = f32[] parameter(0)\n}\n").entry
    callee.is_entry = False
    m.add_computation(callee, before=e)
    assert m.computations[0] is callee and m.computation("f") is callee
    with pytest.raises(ValueError, match="already has"):
        m.add_computation(callee)
    with pytest.raises(ValueError, match="entry"):
        m.remove_computation(e)
    m.remove_computation(callee)
    assert callee.module is None and [c.name for c in m.computations] == ["e"]

"""Syntax XLA's parser accepts beyond what XLA's printer writes, and the canonicalizations its
module applies, each reduced to a small hand-written module (found by running
tools/xla_corpus.py over XLA's test suite).

For every case: hloscope parses it, its canonical printing equals jaxlib's ShortParsable
printing, XLA reads hloscope's own printing as the same module, and hloscope reads it back
equal. The tests without jaxlib pin what hloscope decides on its own (names, literals, order).
"""
from __future__ import annotations

import pytest

import hloscope as hs
from hloscope.ir.equality import first_difference
from hloscope.ir.literal import Literal, canonical_literal_text
from hloscope.ir.module import NameUniquer
from hloscope.ir.printer import xla_instruction_order
from hloscope.text import parse_shape

CASES: dict[str, str] = {
    # Shapes XLA infers when they are left out (tuple, elementwise, dot, get-tuple-element, call).
    "inferred_shapes": """HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = add(x, y)
}
ENTRY e {
  a = f32[2,3]{0,1} parameter(0)
  b = f32[2,3]{0,1} parameter(1)
  c = add(a, b)
  d = f32[3,2] transpose(a), dimensions={1,0}
  e = dot(a, d), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = tuple(c, e)
  g = get-tuple-element(t), index=1
  k = f32[] constant(1)
  z = call(k, k), to_apply=add
  ROOT r = tuple(g, z)
}
""",
    # Operands written as instructions get names "<opcode>.anon" and come before their user.
    "nested_operands": """HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] add(f32[2] multiply(a, a), f32[2] constant({1, 2}))
  ROOT c = add(maximum(a, b), f32[2] constant({3, 4}))
}
""",
    # call-start / call-done: async ops wrapping one call, printed back as written.
    "async_sugar": """HloModule m
sum {
  x = f32[2] parameter(0)
  y = f32[2] parameter(1)
  ROOT s = f32[2] add(x, y)
}
ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  start = ((f32[2], f32[2]), f32[2]) call-start(a, b), to_apply=sum
  ROOT done = f32[2] call-done(start)
}
""",
    # No header: XLA names the module after its entry computation.
    "no_header": """ENTRY e {
  ROOT a = f32[4] parameter(0)
}
""",
    # `name:` is a name token to XLA's lexer, wherever a name stands.
    "name_with_colon": """HloModule m:
ENTRY e {
  ROOT a = f32[] parameter(0)
}
""",
    # Strings may span lines; module frontend attributes after the layout.
    "multiline_string": """HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}, frontend_attributes={k="v"}
ENTRY e {
  a = f32[2] parameter(0)
  ROOT b = f32[2] custom-call(a), custom_call_target="t", backend_config="{
    \\"x\\": 1
  }"
}
""",
    # Instruction names repeat across computations; XLA's module renames the repeats.
    "repeated_names": """HloModule m
add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[] add(p0, p1)
}
ENTRY e {
  p0 = f32[8] parameter(0)
  p0.1 = f32[] constant(0)
  x.0 = f32[] negate(p0.1)
  ROOT r = f32[] reduce(p0, x.0), dimensions={0}, to_apply=add
}
""",
    # Instructions written out of XLA's post-order print in post-order (the module is not scheduled).
    "post_order": """HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  c = f32[2] constant({1, 2})
  b = f32[2] negate(a)
  dead = f32[2] exponential(a)
  ROOT r = f32[2] add(b, c)
}
""",
    # Literals are re-printed from their values: %g digits, pred as 1/0, -0 read as an integer.
    "literals": """HloModule m
ENTRY e {
  a = f32[4] constant({1.0, 55906239034112, -0, nan})
  b = bf16[2] constant({0.1, -3.3})
  c = pred[1,2] constant({{true, false}})
  d = c64[] constant((1.5, -2))
  e = f32[1,1,2,1] constant({{{{1},{2}}}})
  f = f64[] constant(0.1)
  g = s4[2] constant({-1, 7})
  ROOT t = (f32[4], bf16[2], pred[1,2], c64[], f32[1,1,2,1], f64[], s4[2]) tuple(a, b, c, d, e, f, g)
}
""",
    # '?' marks a dimension the convolution does not use; XLA drops trailing ones.
    "dim_labels_unused": """HloModule m
ENTRY e {
  a = f32[1,4,4,2,1] parameter(0)
  w = f32[2,2,2,3,1] parameter(1)
  ROOT c = f32[1,3,3,3,1] convolution(a, w), window={size=2x2}, dim_labels=b01f?_01io?->b01f?
}
""",
    # A combined collective-permute takes one slice size list per operand.
    "collective_permute_slice_sizes": """HloModule m
ENTRY e {
  p0 = f32[128,32] parameter(0)
  p1 = f32[128,128] parameter(1)
  p2 = (s32[], s32[]) parameter(2)
  p3 = (s32[], s32[]) parameter(3)
  cps = (f32[128,32], f32[128,128]) collective-permute-start(p0, p1, p2, p3),
      source_target_pairs={{0,1}}, slice_sizes={{128,32}}
  ROOT cpd = f32[128,128] collective-permute-done(cps)
}
""",
    # Attributes in any order and with defaults written out or left out; XLA writes its own
    # order, drops defaults, adds replica_groups={}, sorts frontend attributes, and prints
    # shardings without their metadata.
    "attribute_order": """HloModule m, num_partitions=1, replica_count=2
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[4,8] parameter(0), sharding={devices=[2,1]0,1 metadata={op_name="a"}}
  b = f32[8,2] parameter(1), frontend_attributes={z="1", a="{x}", q="say \\"hi\\""}
  d = f32[4,2] dot(a, b), rhs_contracting_dims={0}, lhs_contracting_dims={1}, lhs_batch_dims={}, operand_precision={HIGH,DEFAULT}
  r = f32[4,2] all-reduce(d), to_apply=add, channel_id=1
  g = f32[8,2] all-gather(r), dimensions={0}, use_global_device_ids=false
  c = pred[4,2] compare(r, r), type=FLOAT, direction=LT
  t = f32[2,4] transpose(r), dimensions={1,0}
  ROOT out = (f32[8,2], pred[4,2], f32[2,4]) tuple(g, c, t), sharding={ replicated  metadata={op_name="o"} }
}
""",
    # An async-start whose computation is one instruction prints as `<opcode>-start`.
    "async_computation_as_sugar": """HloModule m
wrapped {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
ENTRY e {
  a = f32[4] parameter(0)
  s = ((f32[4]), f32[4], s32[]) async-start(a), calls=wrapped
  ROOT d = f32[4] async-done(s)
}
""",
    # Buffer shapes `b(...)`, and a transpose whose shape is inferred keeps the physical order.
    "buffer_shape_and_transpose": """HloModule m
ENTRY e {
  a = f32[16,8]{0,1} parameter(0)
  t = transpose(a), dimensions={1,0}
  pin = b(f32[8,16]) custom-call(t), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  ROOT r = f32[8,16] custom-call(pin), custom_call_target="Unpin"
}
""",
    # A custom-call's literal attribute: a shape and its value.
    "custom_call_literal": """HloModule m
ENTRY e {
  a = f32[1] parameter(0)
  ROOT c = f32[1,2] custom-call(a), custom_call_target="t", literal=s32[2]{0} {1, 2}
}
""",
}


def _xla():
    xla = pytest.importorskip("hloscope.xla.client")
    if not xla.available():
        pytest.skip("jaxlib's HLO parser is not available")
    return xla


@pytest.mark.parametrize("name", sorted(CASES))
def test_canonical_printing_equals_xla(name: str) -> None:
    xla = _xla()
    import jax

    if name == "multiline_string" and tuple(int(x) for x in jax.__version__.split(".")[:2]) < (0, 10):
        pytest.skip("XLA before jaxlib 0.10 leaves a backend_config that is not JSON out of its printing")
    text = CASES[name]
    m = hs.parse(text, f"{name}.hlo")
    theirs = xla.short_parsable_text(text)
    assert m.to_text(hs.PrintOptions.canonical()) == theirs
    printed = m.to_text()
    assert xla.short_parsable_text(printed) == theirs
    assert first_difference(m, hs.parse(printed)) is None


def test_inferred_shapes_without_xla() -> None:
    m = hs.parse(CASES["inferred_shapes"])
    shapes = {i.name: i.shape.to_text() for i in m.instructions()}
    assert shapes["c"] == "f32[2,3]{0,1}"  # elementwise: the operand's layout
    assert shapes["e"] == "f32[2,2]"  # dot: no layout (XLA gives it the default one)
    assert shapes["g"] == "f32[2,2]"
    assert shapes["z"] == "f32[]"  # call: the callee's root


def test_nested_operands_are_named_and_placed_before_their_user() -> None:
    m = hs.parse(CASES["nested_operands"])
    names = [i.name for i in m.entry.instructions]
    assert names == ["a", "multiply.anon", "constant.anon", "b", "maximum.anon", "constant.anon.1", "c"]
    assert [o.name for o in m.entry.instruction("c").operands] == ["maximum.anon", "constant.anon.1"]


def test_async_sugar_keeps_its_spelling() -> None:
    m = hs.parse(CASES["async_sugar"])
    start = m.entry.instruction("start")
    assert start.opcode is hs.ir.Opcode.ASYNC_START
    assert "call-start(a, b), to_apply=sum" in m.to_text()


@pytest.mark.parametrize("text, message", [
    # send has start/done opcodes of its own (send, send-done), so `send-start` is no sugar.
    ("ENTRY e {\n  a = f32[] parameter(0)\n  ROOT s = f32[] send-start(a)\n}\n", "unknown opcode 'send-start'"),
    ("ENTRY e {\n  a = f32[] parameter(0)\n  ROOT s = reshape(a)\n}\n", "XLA infers no shape for reshape"),
    ("ENTRY e {\n  a = f32[2] parameter(0)\n  ROOT s = add(a, f32[3] constant({1, 2, 3}))\n}\n",
     "cannot infer the shape of this add"),
    # An async-done's operand is an async-start (or -update).
    ("ENTRY e {\n  a = f32[] parameter(0)\n  ROOT d = f32[] call-done(a)\n}\n",
     "takes one operand, an async-start or async-update"),
    # A no-break space is not whitespace to XLA's lexer.
    ("ENTRY e {\n\xa0 ROOT a = f32[] parameter(0)\n}\n", "found '\\xa0'"),
])
def test_rejected_like_xla(text: str, message: str) -> None:
    with pytest.raises(hs.ParseError) as info:
        hs.parse(text, "bad.hlo")
    assert message in str(info.value)


def test_name_uniquer_follows_xla() -> None:
    u = NameUniquer()
    assert [u.unique(n) for n in ("p0", "p0", "p0.1", "p0", "x.0", "x", "x", "a.b", "a.b")] == \
        ["p0", "p0.1", "p0.2", "p0.3", "x.0", "x.1", "x.2", "a.b", "a.b.1"]


def test_post_order_without_xla() -> None:
    m = hs.parse(CASES["post_order"])
    # From each unused instruction in written order ("dead" before the root), operands first.
    assert [i.name for i in xla_instruction_order(m.entry)] == ["a", "dead", "b", "c", "r"]


@pytest.mark.parametrize("shape, text, expected", [
    ("f32[4]", "{1.0, 55906239034112, -0, -0.0}", "{1, 5.59062387e+13, 0, -0}"),
    ("f32[]", "0.1", "0.1"),
    ("f32[]", "nan(0x1)", "nan(0x1)"),
    ("bf16[2]", "{0.1, 1e10}", "{0.1001, 9.999e+09}"),
    ("f16[]", "0.1", "0.099976"),
    ("f64[]", "3.14159265358979", "3.14159265358979"),
    ("pred[2]", "{true, false}", "{1, 0}"),
    ("pred[]", "true", "true"),
    ("c64[1]", "{(1, 0.5)}", "{(1, 0.5)}"),
    ("s32[2,2]", "{{1,2},{3,4}}", "{ { 1, 2 }, { 3, 4 } }"),
    ("s32[3,1]", "{{1},{2},{3}}", "{ {1}, {2}, {3} }"),
    ("s32[1,1,1,2]", "{{{{1,2}}}}", "{ { /*i0=0*/ { /*i1=0*/ { 1, 2 } } } }"),
    ("(s32[2], f32[])", "({1, 2}, 3.0)", "( {1, 2}, 3 )"),
    ("f32[4]", "{...}", "{...}"),
])
def test_canonical_literals(shape: str, text: str, expected: str) -> None:
    assert canonical_literal_text(Literal(text), parse_shape(shape)) == expected

"""The verifier on async ops (both spellings, late binding), buffer shapes, and the rules that
gave false positives on XLA's own test modules (tools/xla_corpus.py).

Each module is hand-written after one of XLA's verifier rules (hlo_verifier.cc, named in the
comment); jaxlib's parser must accept every one, so what decides is the verifier's rule alone.
"""
from __future__ import annotations

import pytest

import hloscope as hs
from hloscope.ir.shape_inference import async_wrapped_instruction, infer_shape

_ADD = """add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
"""

# Modules XLA's verifier accepts.
VALID: dict[str, str] = {
    # `call-start` sugar: an async-start wrapping a call (Note [Async shapes]).
    "call_start_sugar": """HloModule m
f {
  x = f32[4] parameter(0)
  ROOT y = f32[4] add(x, x)
}
ENTRY e {
  p = f32[4] parameter(0)
  s = ((f32[4]), f32[4], u32[]) call-start(p), to_apply=f
  u = ((f32[4]), f32[4], u32[]) call-update(s)
  ROOT d = f32[4] call-done(u)
}
""",
    # The canonical spelling: calls= names a computation of one instruction.
    "async_start_calls": """HloModule m
wrapped {
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  ROOT c = f32[2,3] multiply(a, b)
}
ENTRY e {
  p = f32[2,3] parameter(0)
  q = f32[2,3] parameter(1)
  s = ((f32[2,3], f32[2,3]), f32[2,3], s32[]) async-start(p, q), calls=wrapped
  ROOT d = f32[2,3] async-done(s)
}
""",
    # Late binding: the start binds no operand and no result yet (a prefix of the callee's).
    "late_bound_call_start": """HloModule m
f {
  x = f32[5] parameter(0)
  ROOT y = f32[5] negate(x)
}
ENTRY e {
  ROOT s = ((), (), s32[]) call-start(), to_apply=f
}
""",
    # The sugar's done gives the callee's root even when the start bound only a prefix of it.
    "call_start_result_prefix": """HloModule m
f {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  ROOT t = (f32[], s32[]) tuple(a, b)
}
ENTRY e {
  p = f32[] parameter(0)
  q = s32[] parameter(1)
  s = ((f32[], s32[]), (), s32[]) call-start(p, q), to_apply=f
  ROOT d = (f32[], s32[]) call-done(s)
}
""",
    # Sugar of a non-inferable op: the declared result is the wrapped custom call's.
    "custom_call_start_sugar": """HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  s = ((f32[8]), f32[2,4], u32[]) custom-call-start(p), custom_call_target="foo"
  ROOT d = f32[2,4] custom-call-done(s)
}
""",
    # Sugar of a collective: the wrapped reduce-scatter is checked by its own rule.
    "reduce_scatter_start_sugar": _ADD + """ENTRY e {
  p = f32[8] parameter(0)
  s = ((f32[8]), f32[4], u32[]) reduce-scatter-start(p), dimensions={0}, replica_groups={{0,1}}, to_apply=add
  ROOT d = f32[4] reduce-scatter-done(s)
}
""",
    # InferUnaryOpShape passes any shape through copy, tuples included.
    "copy_of_tuple": """HloModule m
ENTRY e {
  p = (f32[2], s32[3]) parameter(0)
  ROOT c = (f32[2], s32[3]) copy(p)
}
""",
    # XLA's parser gives a reduce-window over scalars an empty window when none is written.
    "reduce_window_of_scalars": _ADD + """ENTRY e {
  p = f32[] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce-window(p, z), to_apply=add
}
""",
    # An all-to-all without a split dimension is the tuple form, a tuple even of one operand.
    "all_to_all_tuple_form": """HloModule m, replica_count=2
ENTRY e {
  p = f32[4] parameter(0)
  ROOT a = (f32[4]) all-to-all(p), replica_groups={{0,1}}
}
""",
    "all_to_all_array_form": """HloModule m, replica_count=2
ENTRY e {
  p = f32[4,2] parameter(0)
  ROOT a = f32[4,2] all-to-all(p), dimensions={0}, replica_groups={{0,1}}
}
""",
    # A group of one device: XLA takes the shard count from the declared result.
    "all_gather_groups_of_one": """HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  ROOT g = f32[8,3] all-gather(p), dimensions={0}, replica_groups={{0}}
}
""",
    # Aliased buffers need the same size, not the same shape.
    "alias_same_size": """HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY e {
  p = f32[4,6] parameter(0)
  ROOT r = f32[6,4] reshape(p)
}
""",
    # A fusion may pass more operands than its computation takes.
    "fusion_extra_operand": """HloModule m
fused {
  ROOT a = f32[3] parameter(0)
}
ENTRY e {
  p = f32[3] parameter(0)
  q = f32[3] parameter(1)
  ROOT f = f32[3] fusion(p, q), kind=kLoop, calls=fused
}
""",
    # rng-bit-generator may give the data alone.
    "rng_bit_generator_array": """HloModule m
ENTRY e {
  s = u64[2] parameter(0)
  ROOT r = u32[4,4] rng-bit-generator(s), algorithm=rng_default
}
""",
    # dynamic-update-slice updates a buffer in place and gives the buffer.
    "buffer_dynamic_update_slice": """HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  x = f32[2] parameter(1)
  i = s32[] parameter(2)
  b = b(f32[8]) custom-call(p), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  w = b(f32[8]) dynamic-update-slice(b, x, i)
  ROOT u = f32[8] custom-call(w), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
}
""",
    # A scatter's reducer may differ from the operands in float precision (VerifyReducerShape).
    "scatter_reducer_fp_precision": """HloModule m
add32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  o = bf16[6] parameter(0)
  i = s32[2,1] parameter(1)
  u = bf16[2] parameter(2)
  ROOT r = bf16[6] scatter(o, i, u), update_window_dims={}, inserted_window_dims={0},
    scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add32
}
""",
    # Buffers: Pin makes one, a custom call updates it in place, Unpin gives the array back.
    "buffers_pin_update_unpin": """HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  b = b(f32[8]) custom-call(p), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  w = b(f32[8]) custom-call(b), custom_call_target="fill", output_to_operand_aliasing={{}: (0, {})}
  ROOT u = f32[8] custom-call(w), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
}
""",
}

# Modules XLA's verifier accepts and hloscope warns about.
WARNINGS: dict[str, tuple[str, str]] = {
    # XLA does not check a collective's reducer.
    "all_reduce_reducer_of_other_type": (_ADD + """ENTRY e {
  p = bf16[4] parameter(0)
  ROOT r = bf16[4] all-reduce(p), replica_groups={}, to_apply=add
}
""", "reducer add must be"),
    # XLA's parser builds a send-done's shape itself and drops the declared one.
    "send_done_declared_shape": ("""HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  t = token[] after-all()
  s = (f32[2], u32[], token[]) send(p, t), channel_id=1
  ROOT d = (f32[2], token[]) send-done(s), channel_id=1
}
""", "XLA's parser ignores the declared shape"),
}

# Modules XLA's verifier rejects, and what hloscope's message says.
INVALID: dict[str, tuple[str, str]] = {
    # CheckAsyncOpComputationShapes: the start's result is the callee's root.
    "call_start_wrong_result": ("""HloModule m
f {
  x = f32[4] parameter(0)
  ROOT y = f32[4] add(x, x)
}
ENTRY e {
  p = f32[4] parameter(0)
  s = ((f32[4]), f32[3], u32[]) call-start(p), to_apply=f
  ROOT d = f32[3] call-done(s)
}
""", r"expected shape \(\(f32\[4\]\), f32\[4\], u32\[\]\) from async-start"),
    "async_done_wrong_shape": ("""HloModule m
wrapped {
  a = f32[2,3] parameter(0)
  ROOT c = f32[3,2] transpose(a), dimensions={1,0}
}
ENTRY e {
  p = f32[2,3] parameter(0)
  s = ((f32[2,3]), f32[3,2], s32[]) async-start(p), calls=wrapped
  ROOT d = f32[2,3] async-done(s)
}
""", r"expected shape f32\[3,2\] from async-done"),
    "async_start_operand_mismatch": ("""HloModule m
wrapped {
  a = f32[2,3] parameter(0)
  ROOT c = f32[2,3] negate(a)
}
ENTRY e {
  p = f32[3,2] parameter(0)
  s = ((f32[3,2]), f32[2,3], s32[]) async-start(p), calls=wrapped
  ROOT d = f32[2,3] async-done(s)
}
""", "do not match the parameters"),
    # VerifyAsyncComputation: one instruction (and parameters) on the main thread.
    "async_computation_of_two": ("""HloModule m
wrapped {
  a = f32[2] parameter(0)
  n = f32[2] negate(a)
  ROOT c = f32[2] exponential(n)
}
ENTRY e {
  p = f32[2] parameter(0)
  s = ((f32[2]), f32[2], s32[]) async-start(p), calls=wrapped
  ROOT d = f32[2] async-done(s)
}
""", "must hold only its root and parameters"),
    # CheckAsyncDoneOperands: every operand bound before the done.
    "done_before_binding": ("""HloModule m
f {
  x = f32[5] parameter(0)
  ROOT y = f32[5] negate(x)
}
ENTRY e {
  s = ((), f32[5], s32[]) call-start(), to_apply=f
  ROOT d = f32[5] call-done(s)
}
""", "every operand of the wrapped computation bound"),
    # The wrapped reduce-scatter's own rule: two shards, not four.
    "reduce_scatter_start_wrong_result": (_ADD + """ENTRY e {
  p = f32[8] parameter(0)
  s = ((f32[8]), f32[2], u32[]) reduce-scatter-start(p), dimensions={0}, replica_groups={{0,1}}, to_apply=add
  ROOT d = f32[2] reduce-scatter-done(s)
}
""", "groups of 2 devices has 2 shards"),
    # ExpectArray: a buffer is no array operand.
    "buffer_into_add": ("""HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  b = b(f32[8]) custom-call(p), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  ROOT a = f32[8] add(b, b)
}
""", "must be an array, got b"),
    "buffer_entry_parameter": ("""HloModule m
ENTRY e {
  p = b(f32[8]) parameter(0)
  ROOT u = f32[8] custom-call(p), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
}
""", "entry computation's parameters"),
    "buffer_operand_not_aliased": ("""HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  b = b(f32[8]) custom-call(p), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  ROOT w = f32[8] custom-call(b), custom_call_target="read"
}
""", "must be aliased to exactly one result"),
    "buffer_two_writers": ("""HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  b = b(f32[8]) custom-call(p), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  w1 = b(f32[8]) custom-call(b), custom_call_target="one", output_to_operand_aliasing={{}: (0, {})}
  w2 = b(f32[8]) custom-call(b), custom_call_target="two", output_to_operand_aliasing={{}: (0, {})}
  ROOT t = (b(f32[8]), b(f32[8])) tuple(w1, w2)
}
""", "more than one writer"),
    "pin_without_alias": ("""HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  b = b(f32[8]) custom-call(p), custom_call_target="Pin"
  ROOT u = f32[8] custom-call(b), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
}
""", "Pin must have one output_to_operand_aliasing"),
    "buffer_dynamic_update_slice_gives_array": ("""HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  x = f32[2] parameter(1)
  i = s32[] parameter(2)
  b = b(f32[8]) custom-call(p), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  ROOT w = f32[8] dynamic-update-slice(b, x, i)
}
""", "must give a buffer"),
    # HloInputOutputAliasConfig::Verify: aliased buffers of one size.
    "alias_other_size": ("""HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY e {
  p = f32[4,6] parameter(0)
  ROOT r = f32[4,5] slice(p), slice={[0:4], [0:5]}
}
""", "differ in size"),
}


def _errors(text: str) -> list[str]:
    return [d.message for d in hs.verify(hs.parse(text)) if d.severity == "error"]


def _warnings(text: str) -> list[str]:
    return [d.message for d in hs.verify(hs.parse(text)) if d.severity == "warning"]


@pytest.mark.parametrize("name", VALID)
def test_valid_modules_verify_clean(name: str) -> None:
    assert _errors(VALID[name]) == []


@pytest.mark.parametrize("name", WARNINGS)
def test_modules_xla_accepts_only_warn(name: str) -> None:
    text, message = WARNINGS[name]
    assert _errors(text) == []
    assert any(message in w for w in _warnings(text)), _warnings(text)


@pytest.mark.parametrize("name", INVALID)
def test_invalid_modules_are_reported(name: str) -> None:
    import re

    text, message = INVALID[name]
    errors = _errors(text)
    assert any(re.search(message, e) for e in errors), errors


def test_xla_parser_accepts_every_module() -> None:
    """What decides each case above is the verifier's rule, not the parser."""
    xla = pytest.importorskip("hloscope.xla.client")
    if not xla.available():
        pytest.skip("jax is not installed")
    texts = [*VALID.values(), *(t for t, _ in WARNINGS.values()), *(t for t, _ in INVALID.values())]
    for text in texts:
        xla.parse_hlo_text(text)


def test_sugar_wraps_an_instruction_of_the_named_opcode() -> None:
    m = hs.parse(VALID["reduce_scatter_start_sugar"])
    start = next(i for i in m.entry.instructions if i.name == "s")
    wrapped = async_wrapped_instruction(start)
    assert wrapped is not None and wrapped.opcode.text == "reduce-scatter"
    assert wrapped.operands == start.operands and "async_wrapped_opcode" not in wrapped.attrs
    assert infer_shape(wrapped).to_text(layout=False) == "f32[4]"
    done = m.entry.root
    assert infer_shape(done).to_text(layout=False) == "f32[4]"


def test_verify_cli_accepts_call_start_sugar(tmp_path) -> None:
    from hloscope.cli.main import main

    path = tmp_path / "as.hlo"
    path.write_text(VALID["call_start_sugar"])
    assert main(["verify", str(path)]) == 0

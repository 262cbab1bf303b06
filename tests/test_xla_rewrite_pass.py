"""The XLA:CPU rewrite as a pass over hloscope's IR (hloscope/xla/rewrite.py); needs no jax.
The end-to-end checks against XLA:CPU are in tests/test_xla_gpu_rewrite.py."""
from __future__ import annotations

import pytest

from hloscope.errors import HloscopeError
from hloscope.ir import Opcode
from hloscope.text import parse_module
from hloscope.xla.rewrite import collectives_need_rewrite, needs_rewrite, recompilable_text

OPTIMIZED = """HloModule m, is_scheduled=true, entry_computation_layout={(f16[16,32]{1,0}, f16[32,16]{1,0})->f16[16,16]{0,1}}

%fused (lhs: f16[16,32], rhs: f16[32,16]) -> f16[16,16] {
  %lhs = f16[16,32]{1,0} parameter(0)
  %rhs = f16[32,16]{1,0} parameter(1)
  ROOT %dot = f16[16,16]{1,0} dot(%lhs, %rhs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %e (lhs.1: f16[16,32], rhs.1: f16[32,16]) -> f16[16,16] {
  %lhs.1 = f16[16,32]{1,0} parameter(0)
  %rhs.1 = f16[32,16]{1,0} parameter(1)
  %gemm = f16[16,16]{1,0} fusion(%lhs.1, %rhs.1), kind=kCustom, calls=%fused, backend_config={
      fusion_backend_config:{kind:"__triton_nested_gemm_fusion"}}
  ROOT %bc = f16[16,16]{0,1} bitcast(%gemm)
}
"""


def test_fusions_become_calls_and_bitcasts_move_values() -> None:
    assert needs_rewrite(OPTIMIZED)
    rewrite = recompilable_text(OPTIMIZED)
    assert (rewrite.fusions, rewrite.bitcasts) == (1, 1)
    m = parse_module(rewrite.text)
    assert "is_scheduled" not in m.attrs and "entry_computation_layout" not in m.attrs
    e = m.entry
    assert [i.opcode for i in e.instructions] == [
        Opcode.PARAMETER, Opcode.PARAMETER, Opcode.CALL, Opcode.TRANSPOSE, Opcode.RESHAPE, Opcode.TRANSPOSE]
    call = e.instruction("gemm")
    assert call.attrs["to_apply"].name == "fused" and "kind" not in call.attrs
    # {1,0} -> {0,1}: physical order of the operand is (0, 1), of the result (1, 0).
    assert e.root.name == "bc" and e.root.attrs["dimensions"] == (1, 0)
    assert all(i.shape.layout is None for c in m.computations for i in c.instructions)


PARTITIONED = """HloModule p, num_partitions=4

ENTRY %e (x: f32[8]) -> (f32[8], u32[], u32[]) {
  %x = f32[8]{0} parameter(0), sharding={replicated}
  %ar = f32[8]{0} all-reduce(%x), channel_id=1, replica_groups={{0,1},{2,3}}, to_apply=%add
  %pid = u32[] partition-id()
  %rid = u32[] replica-id()
  ROOT %t = (f32[8]{0}, u32[], u32[]) tuple(%ar, %pid, %rid)
}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
"""


def test_partitions_become_replicas() -> None:
    rewrite = recompilable_text(PARTITIONED, partitions_as_replicas=4)
    m = parse_module(rewrite.text)
    assert m.replica_count == 4 and m.num_partitions is None
    e = m.entry
    ar = e.instruction("ar")
    # cross_replica_and_partition with one replica: one group of all four devices.
    assert "channel_id" not in ar.attrs and ar.attrs["replica_groups"].expanded() == [[0, 1, 2, 3]]
    assert e.instruction("pid").opcode is Opcode.REPLICA_ID
    assert e.instruction("rid").opcode is Opcode.CONSTANT
    assert "sharding" not in e.instruction("x").attrs
    assert [o.name for o in e.root.operands] == ["ar", "pid", "rid"]


PREFETCH = """HloModule t, is_scheduled=true

ENTRY %e (p: f32[4,8], q: f32[4,8]) -> f32[4,8] {
  %p = f32[4,8]{1,0} parameter(0)
  %q = f32[4,8]{1,0} parameter(1)
  %cs = (f32[4,8]{1,0:S(1)}, f32[4,8]{1,0}, u32[]) copy-start(%p), cross_program_prefetch_index=0
  %cd = f32[4,8]{1,0:S(1)} copy-done(%cs)
  ROOT %a = f32[4,8]{1,0} add(%cd, %q)
}
"""


def test_asynchronous_copies_become_copies() -> None:
    assert needs_rewrite(PREFETCH)
    rewrite = recompilable_text(PREFETCH)
    assert rewrite.copies == 1 and "1 copy-start/copy-done pairs as copies" in rewrite.describe()
    e = parse_module(rewrite.text).entry
    assert [i.opcode for i in e.instructions] == [Opcode.PARAMETER, Opcode.PARAMETER, Opcode.COPY, Opcode.ADD]
    assert [o.name for o in e.instruction("cd").operands] == ["p"]


COLLECTIVES = """HloModule c, num_partitions=8

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %e (x: f32[4], y: f32[]) -> ((f32[4], f32[]), f32[8], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %y = f32[] parameter(1)
  %ar = (f32[4]{0}, f32[]) all-reduce(%x, %y), channel_id=1, replica_groups=mesh['axis_0'=4,'axis_1'=2] {'axis_0'}, use_global_device_ids=true, to_apply=%add
  %ag = f32[8]{0} all-gather(%x), channel_id=2, replica_groups=[4,2]<=[2,4]T(1,0), dimensions={0}, use_global_device_ids=true
  %a2a = f32[4]{0} all-to-all(%x), channel_id=3, replica_groups=mesh['axis_0'=1,'axis_1'=2,'axis_2'=4], device_ids=([4,2]T(1,0)) {'axis_1'}, dimensions={0}
  ROOT %t = ((f32[4]{0}, f32[]), f32[8]{0}, f32[4]{0}) tuple(%ar, %ag, %a2a)
}
"""


def test_collectives_get_explicit_groups_and_lose_meaningless_channel_ids() -> None:
    """Note [Collectives XLA:CPU compiles]: mesh and iota groups become the lists they stand
    for; with one partition a flattened-id all-reduce (variadic or not) and all-gather name the
    same devices as replica groups without channel_id, which XLA's layout assignment needs."""
    before = parse_module(COLLECTIVES).entry
    groups = {name: before.instruction(name).attrs["replica_groups"].expanded(before.instruction(name).attrs.get("device_ids"))
              for name in ("ar", "ag", "a2a")}
    e = parse_module(recompilable_text(COLLECTIVES, partitions_as_replicas=8).text).entry
    for name, expected in groups.items():
        inst = e.instruction(name)
        assert inst.attrs["replica_groups"].groups == tuple(map(tuple, expected)), name
        assert "channel_id" not in inst.attrs and "use_global_device_ids" not in inst.attrs
        assert "device_ids" not in inst.attrs
    assert groups["ar"] == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert groups["ag"] == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_one_partition_drops_channel_ids_only_when_asked() -> None:
    text = COLLECTIVES.replace("num_partitions=8", "replica_count=8")
    kept = parse_module(recompilable_text(text).text).entry
    assert kept.instruction("ar").attrs["channel_id"] == 1  # the groups are explicit all the same
    assert kept.instruction("ar").attrs["replica_groups"].groups is not None
    rewrite = recompilable_text(text, single_partition=True)
    assert "3 collectives with their groups as lists and no channel_id" in rewrite.describe()
    single = parse_module(rewrite.text).entry
    assert "channel_id" not in single.instruction("ar").attrs
    assert "channel_id" not in single.instruction("ag").attrs
    assert single.instruction("a2a").attrs["channel_id"] == 3  # cross-partition: not an all-reduce kind
    assert collectives_need_rewrite(text, single_partition=False)  # mesh groups
    plain = "ar = f32[4] all-reduce(x), channel_id=1, replica_groups={{0,1}}, to_apply=add"
    assert collectives_need_rewrite(plain, single_partition=True)
    assert not collectives_need_rewrite(plain, single_partition=False)


CALLBACK = """HloModule cb

ENTRY %e (x: f32[3]) -> f32[3] {
  %x = f32[3]{0} parameter(0)
  %print = () custom-call(%x), custom_call_target="xla_ffi_python_cpu_callback", custom_call_has_side_effect=true, api_version=API_VERSION_TYPED_FFI, backend_config={index = 0 : ui64}
  ROOT %n = f32[3]{0} negate(%x)
}
"""


def test_debug_callbacks_become_no_value() -> None:
    """jax.debug.print calls Python code registered in the process that compiled the module;
    XLA:CPU elsewhere crashed calling it. It returns nothing, so it becomes the empty tuple."""
    assert needs_rewrite(CALLBACK)
    rewrite = recompilable_text(CALLBACK)
    assert rewrite.custom_calls == {"xla_ffi_python_cpu_callback": 1}
    assert "1 xla_ffi_python_cpu_callback calls as no value" in rewrite.describe()
    printed = parse_module(rewrite.text).entry.instruction("print")
    assert printed.opcode is Opcode.TUPLE and printed.operands == []
    returning = CALLBACK.replace("%print = () custom-call", "%print = f32[3]{0} custom-call")
    with pytest.raises(HloscopeError, match="jax.pure_callback"):
        recompilable_text(returning)

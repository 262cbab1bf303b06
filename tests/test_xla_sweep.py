"""hloscope.testing.xla_modules, the check tools/xla_sweep.py runs on XLA's test modules: how it
compares hloscope with XLA:CPU (modules of our own, never XLA's)."""
from __future__ import annotations

import numpy as np
import pytest

import hloscope
from hloscope.testing import xla_modules as sweep

RNG = np.random.default_rng(1)


def test_long_sums_summed_in_another_order_are_close() -> None:
    # An 8192-long f32 dot summed in order (as a sequential loop would) against the exactly
    # rounded sum: the column that cancels to ~0 differs by more than 1e-4 absolute, a few ulps
    # of the leaf's scale, which the sweep's tolerance allows (Note [Sweep tolerance]).
    a = RNG.standard_normal((32, 8192))
    b = RNG.standard_normal((8192, 32))
    a -= np.outer(a @ b[:, 0], b[:, 0]) / (b[:, 0] @ b[:, 0])  # column 0 of a @ b is ~0
    a, b = a.astype(np.float32), b.astype(np.float32)
    exact = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    in_order = np.cumsum(a[:, :, None] * b[None], axis=1, dtype=np.float32)[:, -1]
    assert not np.allclose(exact, in_order, rtol=1e-4, atol=1e-4)  # the old, per-element tolerance
    assert sweep.compare_leaf(exact, in_order) is None
    wrong = in_order.copy()
    wrong[3, 4] += 0.05  # 0.05 on values of RMS ~90: a real difference
    assert "1/1024 elements differ" in sweep.compare_leaf(exact, wrong)
    assert "1/3 elements differ" in sweep.compare_leaf(np.float32([1, 2, 3]), np.float32([1, 2, 3.001]))


def test_a_leaf_converted_from_bf16_is_compared_at_bf16_precision() -> None:
    import ml_dtypes

    m = hloscope.parse("""HloModule n
ENTRY e {
  x = bf16[3] parameter(0)
  c = f32[3] convert(x)
  y = f32[3] parameter(1)
  ROOT t = (f32[3], f32[3]) tuple(c, y)
}""")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    assert sweep._leaf_sources(m) == [bf16, None]
    ours, theirs = np.float32([12.8125, 1, 2]), np.float32([12.75, 1, 2])  # one bf16 ulp
    assert sweep.compare_leaf(ours, theirs, bf16) is None
    assert sweep.compare_leaf(ours, theirs) is not None


def test_outputs_computed_from_rng_are_not_compared() -> None:
    m = hloscope.parse("""HloModule r
draw {
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  ROOT u = f32[4] rng(lo, hi), distribution=rng_uniform
}
ENTRY e {
  x = f32[4] parameter(0)
  c = f32[4] call(), to_apply=draw
  s = f32[4] add(c, x)
  seed = u64[] custom-call(), custom_call_target="GetRngSeed"
  ROOT t = (f32[4], f32[4], u64[], f32[4]) tuple(s, x, seed, x)
}""")
    assert sweep._random_leaves(m) == [True, False, True, False]


def test_integer_inputs_are_shared_for_devices_that_disagree_on_control() -> None:
    import ml_dtypes

    inputs = [[np.int32(d), np.float32([d, d]), (np.bool_(d % 2), np.int8(d)), np.array([d], ml_dtypes.int4)]
              for d in range(3)]
    shared = sweep.share_integer_inputs(inputs)
    for d in range(3):
        assert shared[d][0] == 0 and shared[d][2][0] == np.False_ and shared[d][2][1] == 0
        assert int(shared[d][3][0]) == 0
        np.testing.assert_array_equal(shared[d][1], [d, d])  # floats stay per device


TRIP_COUNT_FROM_INPUT = """HloModule loop, replica_count=4
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
cond {
  p = (s32[], s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  x = f32[3] get-tuple-element(p), index=2
  acc = f32[3] get-tuple-element(p), index=3
  r = f32[3] all-reduce(x), replica_groups={{0,1,2,3}}, to_apply=sum
  acc2 = f32[3] add(acc, r)
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ROOT t = (s32[], s32[], f32[3], f32[3]) tuple(i2, n, x, acc2)
}
ENTRY e {
  n = s32[] parameter(0)
  x = f32[3] parameter(1)
  zero = s32[] constant(0)
  z = f32[] constant(0)
  acc = f32[3] broadcast(z), dimensions={}
  init = (s32[], s32[], f32[3], f32[3]) tuple(zero, n, x, acc)
  ROOT w = (s32[], s32[], f32[3], f32[3]) while(init), condition=cond, body=body
}"""


def test_a_trip_count_per_device_is_compared_on_shared_integers() -> None:
    # With its own random bound per device the program is undefined in XLA (the devices issue
    # different numbers of all-reduces); hloscope's deadlock is right, and the sweep compares
    # again on inputs whose integers every device shares (Note [Devices that disagree on control]).
    pytest.importorskip("hloscope.xla.client")
    row = sweep.check_module(TRIP_COUNT_FROM_INPUT, seed=0, timeout=120)
    assert row["kind"] == "match", row
    assert row["inputs"] == "integers shared by the devices"


SHARDED_BEFORE_PARTITIONING = """HloModule sharded, num_partitions=2
ENTRY e {
  a = f32[4,3] parameter(0), sharding={devices=[2,1]<=[2]}
  b = f32[3,2] parameter(1), sharding={replicated}
  ROOT d = f32[4,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,1]<=[2]}
}"""


def test_a_module_xla_partitions_is_compared_as_one_global_program() -> None:
    # XLA:CPU partitions it and returns each device's [2,2] shard; per-device random inputs
    # gave the "replicated" b other values per device and a the global shape XLA refuses.
    pytest.importorskip("hloscope.xla.client")
    from hloscope.interpret.run import input_shards

    m = hloscope.parse(SHARDED_BEFORE_PARTITIONING)
    a, b = np.arange(12, dtype=np.float32).reshape(4, 3), np.ones((3, 2), np.float32)
    shards = input_shards(m, [a, b], 2)
    np.testing.assert_array_equal(shards[1][0], a[2:])
    np.testing.assert_array_equal(shards[1][1], b)
    row = sweep.check_module(SHARDED_BEFORE_PARTITIONING, seed=0, timeout=120)
    assert row["kind"] == "match", row
    assert row["inputs"] == "global, cut into shards"


def test_a_partitioned_program_reading_partition_id_is_compared_device_by_device() -> None:
    # Already partitioned by hand (sharding={replicated} parameters, partition-id picks each
    # device's half): every device's result is its own, not device 0's cut in two (XLA's
    # hlo_expand_test module of this shape differed on all of device 1).
    pytest.importorskip("hloscope.xla.client")
    text = """HloModule spmd, num_partitions=2
ENTRY e {
  x = f32[4,8] parameter(0), sharding={replicated}
  starts = s32[2] constant({0, 4})
  pid = u32[] partition-id()
  s = s32[1] dynamic-slice(starts, pid), dynamic_slice_sizes={1}
  r = s32[] reshape(s)
  zero = s32[] constant(0)
  ROOT half = f32[4,4] dynamic-slice(x, zero, r), dynamic_slice_sizes={4,4}
}"""
    row = sweep.check_module(text, seed=0, timeout=120)
    assert row["kind"] == "match", row


def test_a_parameter_used_only_as_an_init_value_gets_the_identity() -> None:
    # Note [Identity init values]: XLA:CPU applies a reduce's init once per tree window; a
    # random init makes the module undefined.
    m = hloscope.parse("""HloModule inits
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
mx {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] maximum(a, b)
}
fused {
  x = f32[64] parameter(0)
  i = f32[] parameter(1)
  ROOT r = f32[] reduce(x, i), dimensions={0}, to_apply=add
}
ENTRY e {
  x = f32[64] parameter(0)
  i = f32[] parameter(1)
  f = f32[] fusion(x, i), kind=kInput, calls=fused
  y = s32[8] parameter(2)
  j = s32[] parameter(3)
  m = s32[] reduce(y, j), dimensions={0}, to_apply=mx
  k = f32[] parameter(4)
  s = f32[] reduce(x, k), dimensions={0}, to_apply=add
  u = f32[] add(s, k)
  ROOT t = (f32[], s32[], f32[]) tuple(f, m, u)
}""")
    assert sweep.identity_inits(m) == {1: "add", 3: "max"}  # k is also added: left random
    assert sweep._identity("max", np.int32) == np.iinfo(np.int32).min
    assert sweep._identity("add", np.float32) == 0.0


def test_a_reduce_whose_init_is_not_its_identity_is_named() -> None:
    # XLA:CPU adds a non-identity init once per window and again to their sum (XLA's
    # hlo_traversal_test module of this shape gave 2320.5 where one init gives 451.9): the
    # sweep names such reduces beside a difference instead of blaming hloscope.
    m = hloscope.parse("""HloModule inits
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
mx {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
fused {
  x = f32[64] parameter(0)
  i = f32[] parameter(1)
  ROOT inner = f32[] reduce(x, i), dimensions={0}, to_apply=add
}
ENTRY e {
  x = f32[64] parameter(0)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  ninf = f32[] constant(-inf)
  ok_add = f32[] reduce(x, zero), dimensions={0}, to_apply=add
  ok_max = f32[] reduce(x, ninf), dimensions={0}, to_apply=mx
  bad_const = f32[] reduce(x, one), dimensions={0}, to_apply=add
  through_zero = f32[] fusion(x, zero), kind=kInput, calls=fused
  computed = f32[] reduce(x, ok_add), dimensions={0}, to_apply=add
  i = f32[] parameter(1)
  given = f32[] reduce(x, i), dimensions={0}, to_apply=add
  ROOT t = (f32[], f32[], f32[], f32[], f32[], f32[]) tuple(ok_add, ok_max, bad_const, through_zero, computed, given)
}""")
    # The fused reduce is called with the identity; parameter 1 is given the identity as an input.
    assert sweep.non_identity_inits(m) == ["bad_const", "computed"]


def test_integer_bits_of_a_float_are_compared_as_that_float() -> None:
    m = hloscope.parse("""HloModule bits
ENTRY e {
  x = f32[4] parameter(0)
  b = s32[4] bitcast-convert(x)
  ROOT t = (s32[4], f32[4]) tuple(b, x)
}""")
    assert sweep._leaf_float_views(m) == [np.dtype(np.float32), None]


def test_a_leaf_of_small_values_is_compared_at_its_own_scale() -> None:
    # The absolute part of the tolerance follows the leaf's RMS down as well as up: with a floor
    # of 1 it was 1e-4 for every f32 leaf, so values around 1e-6 matched twice themselves.
    theirs = (RNG.standard_normal(64) * 1e-6).astype(np.float32)
    assert sweep.compare_leaf(theirs * np.float32(2), theirs) is not None
    assert sweep.compare_leaf(theirs * np.float32(1 + 1e-6), theirs) is None
    zeros = np.zeros(8, np.float32)
    assert sweep.compare_leaf(zeros + np.float32(1e-5), zeros) is not None


def test_a_dynamic_output_is_compared_on_its_defined_elements() -> None:
    # Past a dynamic output's elements XLA:CPU leaves its buffer as it was (Note [Dynamic outputs]).
    text = """HloModule m
ENTRY e {
  x = s32[2,3,2] parameter(0)
  one = s32[] constant(1)
  ROOT d = s32[2,<=3,2] set-dimension-size(x, one), dimensions={1}
}"""
    row = sweep.check_module(text, seed=0, timeout=120)
    assert row["kind"] == "match", row


def test_unstable_sorts_are_named_as_implementation_defined() -> None:
    # XLA leaves the order of equal keys to the backend unless is_stable=true.
    m = hloscope.parse("""HloModule s
gt {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=GT
}
ENTRY e {
  k = bf16[4,16] parameter(0)
  v = s32[4,16] parameter(1)
  any = (bf16[4,16], s32[4,16]) sort(k, v), dimensions={1}, to_apply=gt
  kept = (bf16[4,16], s32[4,16]) sort(k, v), dimensions={1}, is_stable=true, to_apply=gt
  ROOT t = ((bf16[4,16], s32[4,16]), (bf16[4,16], s32[4,16])) tuple(any, kept)
}""")
    assert sweep.unstable_sorts(m) == ["any"]

"""Lockstep execution (interpret/lockstep.py, Note [Lockstep]) gives exactly the per-device
path's results: on every multi-device oracle program, on seeds 000/001/004, and on small
modules whose control flow differs per device (where "auto" falls back)."""
from __future__ import annotations

import numpy as np
import pytest

try:
    from tests.conftest import SEED_FILES
    from tests.oracle.programs import PROGRAMS
except ImportError:  # tests/ is not a package
    from conftest import SEED_FILES  # type: ignore[no-redef]
    from oracle.programs import PROGRAMS  # type: ignore[no-redef]

import hloscope
from hloscope.errors import InterpretError
from hloscope.interpret import RunOptions, lockstep, run
from hloscope.interpret.inputs import random_inputs

MULTI_DEVICE = [p.name for p in PROGRAMS if p.num_devices > 1]
LOCKSTEP = RunOptions(mode="lockstep")
PER_DEVICE = RunOptions(mode="per-device")


def _leaves(v):
    if isinstance(v, (tuple, list)):
        return [leaf for e in v for leaf in _leaves(e)]
    return [np.asarray(v)]


def assert_identical(a, b) -> None:
    la, lb = _leaves(a), _leaves(b)
    assert len(la) == len(lb)
    for i, (x, y) in enumerate(zip(la, lb, strict=True)):
        assert x.shape == y.shape and x.dtype == y.dtype, f"leaf {i}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
        np.testing.assert_array_equal(x, y, err_msg=f"leaf {i}")


@pytest.mark.parametrize("stage", ["pre", "post"])
@pytest.mark.parametrize("name", MULTI_DEVICE)
def test_oracle_lockstep_equals_per_device(oracle_corpus, name: str, stage: str) -> None:
    case = oracle_corpus.case(name)
    meta = case.meta
    r, p = meta["num_replicas"], meta["num_partitions"]
    if r * p == 1:
        pytest.skip("one device")
    module = hloscope.parse(case.pre_text if stage == "pre" else case.post_text)
    if not lockstep.applies(module):
        pytest.skip("lockstep does not apply")
    try:
        per_device = run(module, case.inputs(), replicas=r, partitions=p, options=PER_DEVICE)
    except InterpretError:
        pytest.skip("the per-device path fails on this program (tested elsewhere)")
    try:
        got = run(module, case.inputs(), replicas=r, partitions=p, options=LOCKSTEP)
    except lockstep.Diverged:
        # Control flow that depends on the device (e.g. on axis_index) is what lockstep cannot
        # express; mode "auto" then starts over per device (test_run_oracle checks that path).
        pytest.skip("the devices' control flow differs")
    assert_identical(got, per_device)


@pytest.mark.parametrize("seed,grid", [("000", {"replicas": 8}), ("001", {"partitions": 4}),
                                       ("004", {"replicas": 4})])
def test_seed_lockstep_equals_per_device(seed: str, grid: dict) -> None:
    m = hloscope.load(SEED_FILES[seed])
    n = grid.get("replicas", 1) * grid.get("partitions", 1)
    inputs = [random_inputs(m, d, "positive") for d in range(n)]  # different data per device
    per_device = run(m, inputs, **grid, options=PER_DEVICE)
    got = run(m, inputs, **grid, options=LOCKSTEP)
    assert_identical(got, per_device)


_DIVERGING = """
HloModule diverge, replica_count=2

cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  r = u32[] replica-id()
  limit = s32[] convert(r)
  three = s32[] constant(3)
  lim = s32[] add(limit, three)
  ROOT lt = pred[] compare(i, lim), direction=LT
}

body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  two = f32[] constant(2)
  b = f32[4] broadcast(two), dimensions={}
  y = f32[4] multiply(x, b)
  ROOT t = (s32[], f32[4]) tuple(j, y)
}

ENTRY main {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  s = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(s), condition=cond, body=body
  ROOT out = f32[4] get-tuple-element(w), index=1
}
"""


def test_diverging_loop_falls_back_in_auto_mode() -> None:
    m = hloscope.parse(_DIVERGING)
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(lockstep.Diverged):
        run(m, [x], replicas=2, options=LOCKSTEP)
    out = run(m, [x], replicas=2)
    np.testing.assert_array_equal(out[0], x * 8)
    np.testing.assert_array_equal(out[1], x * 16)
    assert_identical(out, run(m, [x], replicas=2, options=PER_DEVICE))


_PER_DEVICE_SLICE = """
HloModule dslice, replica_count=4

ENTRY main {
  x = f32[4,3] parameter(0)
  r = u32[] replica-id()
  zero = u32[] constant(0)
  row = f32[1,3] dynamic-slice(x, r, zero), dynamic_slice_sizes={1,3}
  ten = f32[] constant(10)
  b = f32[1,3] broadcast(ten), dimensions={}
  upd = f32[1,3] multiply(row, b)
  y = f32[4,3] dynamic-update-slice(x, upd, r, zero)
  s = f32[] constant(0)
  total = f32[4] reduce(y, s), dimensions={1}, to_apply=add
  ROOT sum = f32[4] all-reduce(total), replica_groups={}, to_apply=add
}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""


def test_partition_dependent_slices_match() -> None:
    m = hloscope.parse(_PER_DEVICE_SLICE)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert_identical(run(m, [x], replicas=4, options=LOCKSTEP), run(m, [x], replicas=4, options=PER_DEVICE))


def test_lockstep_with_hooks_is_refused() -> None:
    class Hook:
        def on_instruction(self, inst, operands, result):
            pass

    m = hloscope.parse(_PER_DEVICE_SLICE)
    with pytest.raises(Exception, match="hooks"):
        run(m, [np.zeros((4, 3), np.float32)], replicas=4, options=RunOptions(mode="lockstep", hooks=[Hook()]))


_GEMMS = r"""
HloModule gemms, replica_count=4

ENTRY main {
  x = f32[3,8]{1,0} parameter(0)
  w = f32[5,8]{1,0} parameter(1)
  acc = f32[8,5]{1,0} parameter(2)
  y = f32[3,5]{1,0} custom-call(x, w), custom_call_target="__cublas$gemm", backend_config="{\"alpha_real\":1,\"alpha_imag\":0,\"beta\":0,\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"1\"],\"rhs_contracting_dimensions\":[\"1\"],\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]}}"
  g = f32[8,5]{1,0} custom-call(x, y, acc), custom_call_target="__cublas$gemm", backend_config="{\"alpha_real\":2,\"alpha_imag\":0,\"beta\":1,\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"0\"],\"rhs_contracting_dimensions\":[\"0\"],\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]}}"
  ww = f32[5,5]{1,0} custom-call(w, w), custom_call_target="__cublas$gemm", backend_config="{\"alpha_real\":1,\"alpha_imag\":0,\"beta\":0,\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"1\"],\"rhs_contracting_dimensions\":[\"1\"],\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]}}"
  ROOT t = (f32[3,5]{1,0}, f32[8,5]{1,0}, f32[5,5]{1,0}) tuple(y, g, ww)
}
"""


def test_gemms_with_a_shared_weight_match() -> None:
    """The weight ``w`` is the same array on every device, so lockstep folds the devices' rows
    into one matmul (and computes ``w @ w.T`` once); per-device data stays per device."""
    m = hloscope.parse(_GEMMS)
    rng = np.random.default_rng(3)
    w = rng.standard_normal((5, 8)).astype(np.float32)
    inputs = [[rng.standard_normal((3, 8)).astype(np.float32), w, rng.standard_normal((8, 5)).astype(np.float32)]
              for _ in range(4)]
    got = run(m, inputs, replicas=4, options=LOCKSTEP)
    assert_identical(got, run(m, inputs, replicas=4, options=PER_DEVICE))
    assert not np.shares_memory(got[0][0], got[1][0])


def test_uniform_values_stay_shared() -> None:
    """Values computed from inputs every device shares are computed once (a broadcast view)."""
    m = hloscope.parse(_GEMMS)
    rng = np.random.default_rng(4)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((3, 8), (5, 8), (8, 5))]
    got = run(m, args, replicas=4, options=LOCKSTEP)
    assert np.shares_memory(got[0][2], got[3][2])
    assert_identical(got, run(m, args, replicas=4, options=PER_DEVICE))


def test_seed_000_shared_weights_match() -> None:
    """Seed 000 as pmap runs it: the same parameter arrays on every replica, a batch per
    replica. Lockstep folds the replicas' rows into one matmul per weight."""
    m = hloscope.load(SEED_FILES["000"])
    shared = random_inputs(m, 0, "positive")
    inputs = [shared[:6] + random_inputs(m, d + 1, "positive")[6:] for d in range(8)]
    assert_identical(run(m, inputs, replicas=8, options=LOCKSTEP), run(m, inputs, replicas=8, options=PER_DEVICE))


_GEMM_ACCUMULATE = r"""
HloModule gemm_accumulate, replica_count=4

body {
  s = (s32[], f32[3,8]{1,0}, f32[5,8]{1,0}, f32[8,5]{1,0}, f32[8,8]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[3,8]{1,0} get-tuple-element(s), index=1
  w = f32[5,8]{1,0} get-tuple-element(s), index=2
  acc = f32[8,5]{1,0} get-tuple-element(s), index=3
  sq = f32[8,8]{1,0} get-tuple-element(s), index=4
  y = f32[3,5]{1,0} custom-call(x, w), custom_call_target="__cublas$gemm", backend_config="{\"alpha_real\":1,\"alpha_imag\":0,\"beta\":0,\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"1\"],\"rhs_contracting_dimensions\":[\"1\"],\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]}}"
  g = f32[8,5]{1,0} custom-call(x, y, acc), custom_call_target="__cublas$gemm", backend_config="{\"alpha_real\":2,\"alpha_imag\":0,\"beta\":1,\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"0\"],\"rhs_contracting_dimensions\":[\"0\"],\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]}}"
  h = f32[8,8]{1,0} custom-call(w, w, sq), custom_call_target="__cublas$gemm", backend_config="{\"alpha_real\":1,\"alpha_imag\":0,\"beta\":1,\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"0\"],\"rhs_contracting_dimensions\":[\"0\"],\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]}}"
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[3,8]{1,0}, f32[5,8]{1,0}, f32[8,5]{1,0}, f32[8,8]{1,0}) tuple(j, x, w, g, h)
}

cond {
  s = (s32[], f32[3,8]{1,0}, f32[5,8]{1,0}, f32[8,5]{1,0}, f32[8,8]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY main {
  x = f32[3,8]{1,0} parameter(0)
  w = f32[5,8]{1,0} parameter(1)
  acc0 = f32[8,5]{1,0} parameter(2)
  acc = f32[8,5]{1,0} add(acc0, acc0)
  zero = f32[] constant(0)
  sq = f32[8,8]{1,0} broadcast(zero), dimensions={}
  i = s32[] constant(0)
  s = (s32[], f32[3,8]{1,0}, f32[5,8]{1,0}, f32[8,5]{1,0}, f32[8,8]{1,0}) tuple(i, x, w, acc, sq)
  ROOT l = (s32[], f32[3,8]{1,0}, f32[5,8]{1,0}, f32[8,5]{1,0}, f32[8,8]{1,0}) while(s), condition=cond, body=body
}
"""


@pytest.mark.parametrize("blas", [True, False], ids=["blas", "numpy"])
def test_gemm_accumulating_into_a_loop_carried_buffer(blas, monkeypatch) -> None:
    """beta = 1 gemms whose accumulator is carried by a loop (a weight gradient summed over
    time steps) add into it in place, with scipy's BLAS when it is there: the values are those
    of the plain product plus the accumulator, on every path, and the inputs are not written."""
    from hloscope.interpret import linalg

    if not blas:
        monkeypatch.setattr(linalg, "_blas_gemm", lambda dtype: None)
    m = hloscope.parse(_GEMM_ACCUMULATE)
    rng = np.random.default_rng(5)
    w = rng.standard_normal((5, 8)).astype(np.float32)
    inputs = [[rng.standard_normal((3, 8)).astype(np.float32), w, rng.standard_normal((8, 5)).astype(np.float32)]
              for _ in range(4)]
    before = [[a.copy() for a in d] for d in inputs]
    got = run(m, inputs, replicas=4, options=LOCKSTEP)
    per_device = run(m, inputs, replicas=4, options=PER_DEVICE)
    for d, (x, w_, acc0) in enumerate(before):
        x64, w64 = x.astype(np.float64), w_.astype(np.float64)
        want_g = 2 * acc0 + 3 * 2 * (x64.T @ (x64 @ w64.T))
        want_h = 3 * (w64.T @ w64)
        for out in (got[d], per_device[d]):
            np.testing.assert_allclose(out[3], want_g, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(out[4], want_h, rtol=1e-5, atol=1e-5)
        for a, b in zip(inputs[d], before[d], strict=True):
            np.testing.assert_array_equal(a, b)

"""The evaluator core: registry coverage, the loop (plans, freeing, hooks, errors, interrupts),
control flow, custom calls, the multi-device driver, and the seed modules end to end."""
from __future__ import annotations

import numpy as np
import pytest

import hloscope
from hloscope.errors import InterpretError, UnsupportedCustomCallError
from hloscope.interpret import (
    UNSUPPORTED,
    EvaluationInterrupted,
    RunOptions,
    default_grid,
    implemented_opcodes,
    register_custom_call,
    run,
)
from hloscope.interpret.evaluator import build_plan
from hloscope.interpret.values import random_of
from hloscope.ir import Opcode
from tests.conftest import SEED_FILES


def test_every_opcode_has_a_handler_or_a_reason() -> None:
    missing = [op for op in Opcode if op not in implemented_opcodes() and op not in UNSUPPORTED]
    assert missing == []
    assert all(UNSUPPORTED[op] for op in UNSUPPORTED)


ADD_MUL = """HloModule m
ENTRY e {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  s = f32[3] add(a, b)
  ROOT m = f32[3] multiply(s, a)
}"""


def test_single_device_arithmetic() -> None:
    a, b = np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)
    out = run(hloscope.parse(ADD_MUL), [a, b])
    np.testing.assert_array_equal(out, (a + b) * a)
    assert out.dtype == np.float32


def test_plan_frees_values_after_last_use() -> None:
    comp = hloscope.parse(ADD_MUL).entry
    plan = build_plan(comp)
    slot = {inst.name: i for i, inst in enumerate(comp.instructions)}
    add_step, mul_step = plan.steps
    assert slot["b"] in add_step.dead  # b's last use is the add
    assert set(mul_step.dead) == {slot["a"], slot["s"]}
    assert plan.root_slot not in {s for step in plan.steps for s in step.dead}


CHAIN = """HloModule chain
ENTRY e {
  p = f32[1048576] parameter(0)
  q = f32[1048576] parameter(1)
  a = f32[1048576] add(p, q)
  b = f32[1048576] multiply(a, q)
  c = f32[1048576] subtract(q, b)
  d = f32[1048576] multiply(c, c)
  e = f32[1048576] divide(d, q)
  ROOT f = f32[1048576] add(e, p)
}"""


@pytest.mark.parametrize("replicas", [1, 2])
def test_elementwise_chain_writes_into_dying_operands(replicas: int) -> None:
    """Note [In-place elementwise]: each op after the first reuses the array of the operand that
    dies there, so the chain's peak is the first result alone, not two arrays at once (and the
    inputs the caller holds are never written)."""
    import tracemalloc

    p = np.linspace(-1, 1, 1 << 20, dtype=np.float32)
    q = np.full(1 << 20, 0.5, np.float32)
    p0, q0 = p.copy(), q.copy()
    module = hloscope.parse(CHAIN)
    args = [p, q] if replicas == 1 else [[p, q], [q, p]]
    tracemalloc.start()
    try:
        out = run(module, args, replicas=replicas)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    expected = (q - (p + q) * q) ** 2 / q + p
    got = out if replicas == 1 else out[0]  # device 0 has (p, q)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(p, p0)
    np.testing.assert_array_equal(q, q0)
    one = p.nbytes * replicas
    stacked_inputs = 0 if replicas == 1 else 2 * one
    assert peak < stacked_inputs + 1.5 * one, (peak, one)


def test_tuple_results_go_straight_to_their_readers() -> None:
    """Note [Unpacked tuple parameters]: a while loop's final state read only by
    get-tuple-element is not kept whole; element 0 goes to its reader's slot and element 1,
    which nobody reads, is dropped at once instead of living until the last GTE."""
    m = hloscope.parse(WHILE.replace("ROOT w = (s32[], f32[]) while(init), condition=cond, body=body",
                                     "w = (s32[], f32[]) while(init), condition=cond, body=body\n"
                                     "  i = s32[] get-tuple-element(w), index=0\n"
                                     "  ROOT j = s32[] add(i, i)"))
    comp = m.entry
    plan = build_plan(comp)
    slot = {inst.name: k for k, inst in enumerate(comp.instructions)}
    (step,) = [st for st in plan.steps if st.inst.name == "w"]
    assert step.unpack == ((slot["i"], 0),) and not step.keep
    assert "i" not in {st.inst.name for st in plan.steps}  # the GTE step is skipped
    assert run(m, [np.float32(1.5)]) == 10
    kept = build_plan(comp, unpack_tuples=False)  # runs with hooks see every instruction
    assert "i" in {st.inst.name for st in kept.steps}


WHILE = """HloModule w
cond {
  p = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  two = f32[] constant(2)
  x1 = f32[] multiply(x, two)
  ROOT t = (s32[], f32[]) tuple(i1, x1)
}
ENTRY e {
  x = f32[] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[]) tuple(zero, x)
  ROOT w = (s32[], f32[]) while(init), condition=cond, body=body
}"""


class Recorder:
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_instruction(self, inst, operands, result) -> None:
        self.names.append(inst.name)


def test_while_hooks_and_progress() -> None:
    rec = Recorder()
    seen = []
    opts = RunOptions(hooks=[rec], progress=seen.append, progress_every=1)
    i, x = run(hloscope.parse(WHILE), [np.float32(1.5)], options=opts)
    assert int(i) == 5 and float(x) == 48.0
    assert rec.names.count("x1") == 5 and rec.names[-1] == "w"
    assert seen[-1].loop_iterations == 5 and seen[-1].instructions == len(rec.names)


COND = """HloModule c
b0 {
  p = f32[] parameter(0)
  ROOT r = f32[] negate(p)
}
b1 {
  p = f32[] parameter(0)
  ROOT r = f32[] exponential(p)
}
b2 {
  p = f32[] parameter(0)
  ROOT r = f32[] sqrt(p)
}
ENTRY e {
  i = s32[] parameter(0)
  x = f32[] parameter(1)
  ROOT c = f32[] conditional(i, x, x, x), branch_computations={b0, b1, b2}
}"""


@pytest.mark.parametrize(("index", "expected"), [(0, -4.0), (1, np.exp(4.0)), (2, 2.0), (7, 2.0), (-1, 2.0)])
def test_conditional_index_out_of_range_runs_last_branch(index: int, expected: float) -> None:
    out = run(hloscope.parse(COND), [np.int32(index), np.float32(4)])
    np.testing.assert_allclose(out, expected, rtol=1e-6)


PRED_COND = """HloModule c
t {
  p = f32[] parameter(0)
  ROOT r = f32[] negate(p)
}
f {
  p = s32[] parameter(0)
  ROOT r = f32[] convert(p)
}
ENTRY e {
  c = pred[] parameter(0)
  x = f32[] parameter(1)
  y = s32[] parameter(2)
  ROOT r = f32[] conditional(c, x, y), true_computation=t, false_computation=f
}"""


def test_conditional_pred_form() -> None:
    m = hloscope.parse(PRED_COND)
    assert float(run(m, [True, np.float32(3), np.int32(9)])) == -3.0
    assert float(run(m, [False, np.float32(3), np.int32(9)])) == 9.0


ELIDED = """HloModule el
ENTRY e {
  ROOT c = f32[2,3] constant({...})
}"""


def test_elided_constant_is_an_error_unless_filled() -> None:
    m = hloscope.parse(ELIDED)
    with pytest.raises(InterpretError, match="fill_elided"):
        run(m, [])
    np.testing.assert_array_equal(run(m, [], options=RunOptions(fill_elided="zeros")), np.zeros((2, 3)))
    assert run(m, [], options=RunOptions(fill_elided="random")).shape == (2, 3)


def test_errors_name_computation_and_instruction_with_caret() -> None:
    text = WHILE.replace("x1 = f32[] multiply(x, two)", 'x1 = f32[] custom-call(x, two), custom_call_target="mystery"')
    with pytest.raises(UnsupportedCustomCallError) as info:
        run(hloscope.parse(text), [np.float32(1)])
    msg = str(info.value)
    assert "'mystery'" in msg and "x1" in msg and "computation body" in msg
    assert "^" in msg and "called from w in computation e" in msg


def test_failure_of_a_pure_function_is_wrapped() -> None:
    text = ADD_MUL.replace("s = f32[3] add(a, b)", "s = f32[3] dynamic-slice(a, b), dynamic_slice_sizes={3}")
    with pytest.raises(InterpretError, match=r"evaluating s \(dynamic-slice\) in computation e"):
        run(hloscope.parse(text), [np.ones(3, np.float32), np.ones(3, np.float32)])


def test_keyboard_interrupt_names_the_instruction() -> None:
    class Interrupt:
        def on_instruction(self, inst, operands, result) -> None:
            if inst.name == "x1":
                raise KeyboardInterrupt

    with pytest.raises(EvaluationInterrupted, match="interrupted at instruction x1 in computation body"):
        run(hloscope.parse(WHILE), [np.float32(1)], options=RunOptions(hooks=[Interrupt()]))


def test_wrong_inputs_are_input_errors() -> None:
    with pytest.raises(hloscope.HloscopeError, match="takes 2 parameters"):
        run(hloscope.parse(ADD_MUL), [np.ones(3)])
    with pytest.raises(hloscope.HloscopeError, match=r"expects f32\[3\]"):
        run(hloscope.parse(ADD_MUL), [np.ones(3), np.ones(4)])


# --- custom calls --------------------------------------------------------------------------------

GEMM = r"""HloModule g
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  b = f32[4,3]{1,0} parameter(1)
  c = f32[2,4]{1,0} parameter(2)
  ROOT g = (f32[2,4]{1,0}, s8[16]{0}) custom-call(a, b, c), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"alpha_real":2,"alpha_imag":0,"beta":0.5,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["1"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}}
}"""


def test_cublas_gemm_alpha_beta_and_workspace() -> None:
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in [(2, 3), (4, 3), (2, 4)])
    out, workspace = run(hloscope.parse(GEMM), [a, b, c])
    np.testing.assert_allclose(out, 2 * a @ b.T + 0.5 * c, rtol=1e-5)
    assert workspace.dtype == np.int8 and not workspace.any()


THREEFRY = """HloModule t
ENTRY e {
  k0 = u32[4] parameter(0)
  k1 = u32[4] parameter(1)
  x0 = u32[4] parameter(2)
  x1 = u32[4] parameter(3)
  ROOT r = (u32[4], u32[4]) custom-call(k0, k1, x0, x1), custom_call_target="cuda_threefry2x32"
}"""


def test_cuda_threefry_matches_jax() -> None:
    from jax.extend.random import threefry_2x32

    rng = np.random.default_rng(1)
    k0, k1, x0, x1 = (rng.integers(0, 2**32, 4, dtype=np.uint32) for _ in range(4))
    got = run(hloscope.parse(THREEFRY), [k0, k1, x0, x1])
    want = threefry_2x32(np.stack([k0[0], k1[0]]), np.concatenate([x0, x1]))
    # jax's threefry_2x32 takes one key; compare the first lane's key across all counters.
    got_same_key = run(hloscope.parse(THREEFRY), [np.full(4, k0[0]), np.full(4, k1[0]), x0, x1])
    np.testing.assert_array_equal(np.concatenate(got_same_key), np.asarray(want))
    assert got[0].dtype == np.uint32


TOPK = """HloModule k
ENTRY e {
  x = f32[2,5] parameter(0)
  ROOT r = (f32[2,2], s32[2,2]) custom-call(x), custom_call_target="TopK"
}"""


def test_topk_custom_call() -> None:
    x = np.array([[1, 5, 3, 5, 0], [9, -1, 2, 8, 7]], np.float32)
    values, indices = run(hloscope.parse(TOPK), [x])
    np.testing.assert_array_equal(values, [[5, 5], [9, 8]])
    np.testing.assert_array_equal(indices, [[1, 3], [0, 3]])


def test_user_registered_custom_call() -> None:
    register_custom_call("test.double")(lambda ctx, inst, ops: ops[0] * 2)
    text = THREEFRY.replace('custom_call_target="cuda_threefry2x32"', 'custom_call_target="test.double"')
    text = text.replace("ROOT r = (u32[4], u32[4]) custom-call(k0, k1, x0, x1)", "ROOT r = u32[4] custom-call(k0)")
    out = run(hloscope.parse(text), [np.arange(4, dtype=np.uint32)] * 4)
    np.testing.assert_array_equal(out, [0, 2, 4, 6])


def test_lapack_ffi_kernels_match_jax() -> None:
    import jax
    import jax.numpy as jnp

    a = np.random.default_rng(2).standard_normal((2, 4, 4)).astype(np.float32)
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4, dtype=np.float32)

    def f(m, s):
        lu, piv = jax.scipy.linalg.lu_factor(m)
        w, v = jnp.linalg.eigh(s)
        return lu, piv, jnp.linalg.cholesky(s), jnp.linalg.qr(m)[1], w, jnp.linalg.svd(m, compute_uv=False)

    text = jax.jit(f).lower(a, spd).compile().as_text()
    assert "lapack_sgetrf_ffi" in text and "lapack_ssyevd_ffi" in text
    got = run(hloscope.parse(text), [a, spd])
    for g, w in zip(got, f(a, spd), strict=True):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-4, atol=1e-5)


def test_lapack_eig_schur_svd_qr_tridiagonal_match_jax() -> None:
    # geev packs a conjugate pair's eigenvectors into two real columns (re, im), which jaxlib
    # unpacks; a matrix with a NaN is not decomposed (info = -4, jax masks it with NaN).
    import jax
    import jax.numpy as jnp

    rot = np.array([[0, -2, 1], [1, 0, 0], [0, 0, 3]], np.float32)  # eigenvalues ±i√2, 3
    a = np.stack([rot, np.random.default_rng(3).standard_normal((3, 3)).astype(np.float32),
                  np.full((3, 3), np.nan, np.float32)])
    z = (a[:2] + 1j * np.swapaxes(a[:2], 1, 2)).astype(np.complex64)

    def f(m, c):
        w, v = jnp.linalg.eig(m)
        wc, vc = jnp.linalg.eig(c)
        t, q = jax.scipy.linalg.schur(m[0])
        u, s, vt = jax.lax.linalg.svd(m[1], algorithm=jax.lax.linalg.SvdAlgorithm.QR)
        r, piv = jax.scipy.linalg.qr(m[1], mode="r", pivoting=True)
        x = jax.lax.linalg.tridiagonal_solve(jnp.array([0.0, 1, 2]), jnp.array([4.0, 5, 6]),
                                             jnp.array([1.0, -1, 0]), m[1])
        return w, v, wc, vc, t, q, u, s, vt, r, piv, x

    text = jax.jit(f).lower(a, z).compile().as_text()
    assert "lapack_sgeev_ffi" in text and "lapack_sgees_ffi" in text and "lapack_sgtsv_ffi" in text
    got = run(hloscope.parse(text), [a, z])
    for g, w in zip(got, f(a, z), strict=True):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-5, atol=1e-6, equal_nan=True)


# --- devices -------------------------------------------------------------------------------------

DIVERGENT = """HloModule d, replica_count=2
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
yes {
  p = f32[] parameter(0)
  ROOT r = f32[] all-reduce(p), replica_groups={}, to_apply=sum
}
no {
  ROOT p = f32[] parameter(0)
}
ENTRY e {
  x = f32[] parameter(0)
  id = u32[] replica-id()
  zero = u32[] constant(0)
  first = pred[] compare(id, zero), direction=EQ
  ROOT c = f32[] conditional(first, x, x), true_computation=yes, false_computation=no
}"""


def test_collective_deadlock_is_reported() -> None:
    with pytest.raises(InterpretError, match="collective deadlock: device 0 at r; devices \\[1\\] finished"):
        run(hloscope.parse(DIVERGENT), [np.float32(1)])


def test_per_device_inputs_and_replica_id() -> None:
    text = DIVERGENT.replace("true_computation=yes", "true_computation=no").replace(
        "ROOT c = f32[] conditional", "c = f32[] conditional") .replace(
        "first, x, x), true_computation=no, false_computation=no\n}",
        "first, x, x), true_computation=no, false_computation=no\n  ROOT r = f32[] all-reduce(c), replica_groups={{0,1}}, to_apply=sum\n}")
    out = run(hloscope.parse(text), [[np.float32(1)], [np.float32(10)]])
    assert [float(v) for v in out] == [11.0, 11.0]


def _random_inputs(module, seed: int):
    rng = np.random.default_rng(seed)
    return [random_of(p.shape, rng) for p in module.entry.parameters]


def test_seed_000_eight_replicas() -> None:
    m = hloscope.load(SEED_FILES["000"])
    assert default_grid(m) == (8, 1)  # from replica_groups: the header has no replica_count
    per_device = [_random_inputs(m, d) for d in range(8)]
    for args in per_device:  # parameters replicated across devices (the SGD state) must agree
        args[:] = [a if i >= 8 else per_device[0][i] for i, a in enumerate(args)]
    out = run(m, per_device)
    assert len(out) == 8
    leaves0 = [np.asarray(v) for v in out[0]]
    assert all(np.isfinite(v).all() for v in leaves0 if v.dtype.kind == "f")


@pytest.mark.xla_execute
def test_seed_001_four_partitions() -> None:
    """Seed 001's four partitions (partition-id, an all-gather, two all-reduces, cuBLAS gemms)
    compute what XLA:CPU computes for them, on every device."""
    pytest.importorskip("jax")
    from hloscope.xla.worker import run_on_xla

    m = hloscope.load(SEED_FILES["001"])
    inputs = _random_inputs(m, 0)
    out = run(m, inputs, partitions=4)
    assert len(out) == 4
    theirs = run_on_xla(SEED_FILES["001"].read_text(), inputs, replicas=1, partitions=4, per_device=False)
    for d in range(4):
        ours_d, theirs_d = out[d], theirs.outputs[d]
        assert len(ours_d) == len(theirs_d) == 3
        for i, (a, b) in enumerate(zip(ours_d, theirs_d, strict=True)):
            assert a.dtype == b.dtype and a.shape == b.shape, (d, i)
            # f32 gemm chains: numpy's BLAS and XLA:CPU sum in different orders.
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=f"device {d} output {i}")
    assert all(np.isfinite(a).all() and np.abs(a).max() > 0 for a in out[0])  # not a vacuous match


def test_seed_004_four_replicas() -> None:
    m = hloscope.load(SEED_FILES["004"])
    assert default_grid(m) == (4, 1)
    out = run(m, _random_inputs(m, 0))
    assert len(out) == 4
    # Same inputs on every replica and an all-reduce: every replica ends with the same values.
    for d in range(1, 4):
        for a, b in zip(out[0], out[d], strict=True):
            np.testing.assert_array_equal(a, b)


# --- new elementwise rows, one op each, against jax.lax ------------------------------------------

_UNARY_NEW = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh"]


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("op", _UNARY_NEW)
def test_new_unary_rows_match_jax(op: str, dtype: str) -> None:
    jax = pytest.importorskip("jax")
    import ml_dtypes

    np_dtype = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}[dtype]
    # In and out of each function's domain, the domain edges, zeros and infinities.
    x = np.array([-3.0, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 1.5, 3.0, 10.0, np.inf, -np.inf, np.nan],
                 np.float32).astype(np_dtype)
    text = f"HloModule m\nENTRY e {{\n  p = {dtype}[{x.size}] parameter(0)\n  ROOT r = {dtype}[{x.size}] {op}(p)\n}}"
    got = run(hloscope.parse(text), [x])
    expected = np.asarray(getattr(jax.lax, op)(x))
    assert got.dtype == expected.dtype
    tol = {"f32": 2e-6, "bf16": 1e-2, "f16": 1e-3}[dtype]
    np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32), rtol=tol, atol=tol,
                               equal_nan=True)


@pytest.mark.parametrize("dtype", ["s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"])
def test_mulhi_is_the_high_half_of_the_double_width_product(dtype: str) -> None:
    from hloscope.ir.dtypes import dtype_of  # noqa: PLC0415

    np_dtype = np.dtype(dtype_of(dtype))
    info = np.iinfo(np_dtype)
    bits = np_dtype.itemsize * 8
    vals = [info.min, info.min + 1, 0, 1, 3, 12345 % (info.max + 1), info.max - 1, info.max]
    if info.min < 0:
        vals += [-1, -7]
    a = np.array(vals, np_dtype)
    b = np.array(vals[::-1], np_dtype)
    text = (f"HloModule m\nENTRY e {{\n  a = {dtype}[{a.size}] parameter(0)\n  b = {dtype}[{a.size}] parameter(1)\n"
            f"  ROOT r = {dtype}[{a.size}] mulhi(a, b)\n}}")
    got = run(hloscope.parse(text), [a, b])
    expected = [(int(x) * int(y)) >> bits for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert [int(v) for v in got.tolist()] == [
        (e % (1 << bits)) - ((1 << bits) if info.min < 0 and e % (1 << bits) > info.max else 0) for e in expected]


# --- donation: in-place dynamic-update-slice is never observable ---------------------------------

DUS_SHARED = """HloModule d
ENTRY e {
  x = f32[4] parameter(0)
  one = f32[] constant(1)
  b = f32[4] broadcast(one), dimensions={}
  y = f32[4] add(x, b)
  u = f32[1] constant({9})
  i = s32[] constant(2)
  d1 = f32[4] dynamic-update-slice(y, u, i)
  k = s32[] constant(0)
  d2 = f32[4] dynamic-update-slice(d1, u, k)
  ROOT t = (f32[4], f32[4], f32[4]) tuple(y, d1, d2)
}"""


def test_dynamic_update_slice_in_place_only_when_unshared() -> None:
    x = np.arange(4, dtype=np.float32)
    y, d1, d2 = run(hloscope.parse(DUS_SHARED), [x])
    # y is still live after d1 (the root reads it), so d1 must copy; d1 is live too.
    np.testing.assert_array_equal(y, [1, 2, 3, 4])
    np.testing.assert_array_equal(d1, [1, 2, 9, 4])
    np.testing.assert_array_equal(d2, [9, 2, 9, 4])
    np.testing.assert_array_equal(x, [0, 1, 2, 3])  # the caller's input is never written


def test_while_loop_with_in_place_updates_matches_hooked_run() -> None:
    # A scan-like loop: buf[i] = x * i; runs with hooks never donate, so both must agree.
    text = """HloModule s
cond {
  p = (s32[], f32[8], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[8], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  buf = f32[8] get-tuple-element(p), index=1
  x = f32[] get-tuple-element(p), index=2
  fi = f32[] convert(i)
  v = f32[] multiply(x, fi)
  v1 = f32[1] reshape(v)
  nb = f32[8] dynamic-update-slice(buf, v1, i)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[8], f32[]) tuple(i1, nb, x)
}
ENTRY e {
  x = f32[] parameter(0)
  z = s32[] constant(0)
  zero = f32[] constant(0)
  buf = f32[8] broadcast(zero), dimensions={}
  init = (s32[], f32[8], f32[]) tuple(z, buf, x)
  w = (s32[], f32[8], f32[]) while(init), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(w), index=1
}"""
    m = hloscope.parse(text)
    plain = run(m, [np.float32(2)])
    hooked = run(m, [np.float32(2)], options=RunOptions(hooks=[Recorder()]))
    np.testing.assert_array_equal(plain, np.arange(8, dtype=np.float32) * 2)
    np.testing.assert_array_equal(plain, hooked)


def test_buffers_pin_dus_unpin_and_tuple_copy() -> None:
    """XLA's buffer custom calls move no values; a copy of a tuple copies each leaf."""
    m = hloscope.parse("""HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  u = f32[1] parameter(1)
  i = s32[] parameter(2)
  b = b(f32[4]) custom-call(p), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  w = b(f32[4]) dynamic-update-slice(b, u, i)
  a = f32[4] custom-call(w), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
  z = b(f32[2]) custom-call(), custom_call_target="CreateBuffer"
  zz = f32[2] custom-call(z), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
  t = (f32[4], f32[2]) tuple(a, zz)
  ROOT c = (f32[4], f32[2]) copy(t)
}""")
    p = np.arange(4, dtype=np.float32)
    for replicas in (1, 2):
        out = run(m, [p, np.array([9], np.float32), np.int32(2)], replicas=replicas)
        got = out if replicas == 1 else out[1]
        np.testing.assert_array_equal(got[0], [0, 1, 9, 3])
        np.testing.assert_array_equal(got[1], [0, 0])
    np.testing.assert_array_equal(p, [0, 1, 2, 3])  # the input was not written


ASYNC_SUGAR = """HloModule async_sugar, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

double {
  x = f32[4] parameter(0)
  ROOT y = f32[4] add(x, x)
}

ENTRY e {
  p = f32[4] parameter(0)
  s = ((f32[4]), f32[2], u32[]) reduce-scatter-start(p), replica_groups={{0,1}}, dimensions={0}, to_apply=add
  rs = f32[2] reduce-scatter-done(s)
  c = ((f32[4]), f32[4], u32[]) call-start(p), to_apply=double
  d = f32[4] call-done(c)
  k = ((f32[4]), (f32[2], s32[2]), u32[]) custom-call-start(d), custom_call_target="TopK"
  top = (f32[2], s32[2]) custom-call-done(k)
  v = f32[2] get-tuple-element(top), index=0
  ROOT t = (f32[2], f32[2]) tuple(rs, v)
}"""


@pytest.mark.parametrize("mode", ["auto", "per-device"])
def test_async_sugar_runs_the_wrapped_instruction(mode: str) -> None:
    """``<op>-start`` wraps one instruction of that opcode: a collective meets the other
    devices, a custom call runs its target, a call runs its computation."""
    m = hloscope.parse(ASYNC_SUGAR)
    xs = [np.array([1, 5, 2, 7], np.float32), np.array([10, 20, 30, 40], np.float32)]
    out = run(m, [[x] for x in xs], replicas=2, options=RunOptions(mode=mode))
    total = xs[0] + xs[1]
    for d in range(2):
        np.testing.assert_array_equal(out[d][0], total[2 * d:2 * d + 2])
        np.testing.assert_array_equal(out[d][1], np.sort(2 * xs[d])[::-1][:2])

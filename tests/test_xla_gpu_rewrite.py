"""GPU dumps on XLA:CPU: cuBLAS gemms and jax's threefry kernel rewritten as standard HLO
(Note [GPU custom calls on XLA:CPU] in hloscope/xla/rewrite.py; hloscope/xla/gpu.py).

The rewrite itself is checked without executing on XLA: XLA's parser accepts the rewritten
seeds and no GPU custom call is left; the expansions, run by hloscope's interpreter, equal jax's
threefry bit for bit, and the gemms (and the interpreter's gemm handler) equal numpy written from
the backend config's meaning (alpha, beta, bias, relu, batch dimensions, bf16 rounded once). The
``xla_execute`` tests run the gemms and seeds 000 and 001 on XLA:CPU (in a child process).
"""
from __future__ import annotations

import json

import numpy as np
import pytest

try:
    from tests.conftest import SEED_FILES
except ImportError:  # tests/ is not a package
    from conftest import SEED_FILES  # type: ignore[no-redef]

import hloscope
from hloscope.interpret.inputs import random_inputs

jax = pytest.importorskip("jax")
try:
    from jax._src.random import threefry2x32 as jax_threefry  # noqa: E402
except ImportError:  # jax before 0.8 keeps threefry2x32_p and threefry_2x32 in prng
    from jax._src import prng as jax_threefry  # type: ignore[no-redef]  # noqa: E402

from hloscope.xla import client as xla  # noqa: E402

GPU_TARGETS = ("__cublas$gemm", "__cublas$lt$matmul", "cuda_threefry2x32")
# f32 matmul chains: numpy's BLAS and XLA:CPU sum in different orders.
F32 = {"rtol": 2e-4, "atol": 2e-5}


def _leaves(value):
    if isinstance(value, tuple | list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [np.asarray(value)]


# --- the rewrite of the seeds, parsed by XLA ------------------------------------------------

SEED_REWRITES = {
    # seed: (partitions that become replicas, custom calls rewritten)
    "000": (0, {"__cublas$gemm": 8}),
    "001": (4, {"__cublas$gemm": 5}),
    "003": (0, {"__cublas$gemm": 48, "cuda_threefry2x32": 8}),
}


@pytest.mark.parametrize("seed", sorted(SEED_REWRITES))
def test_rewritten_seed_parses_and_has_no_gpu_custom_call(seed: str) -> None:
    partitions, expected = SEED_REWRITES[seed]
    rewrite = xla.rewrite_for_xla_cpu(SEED_FILES[seed].read_text(), partitions_as_replicas=partitions)
    assert rewrite is not None
    assert rewrite.custom_calls == expected
    assert not [t for t in GPU_TARGETS if f'custom_call_target="{t}"' in rewrite.text]
    xla.parse_hlo_text(rewrite.text)  # raises ParseError when XLA's parser rejects it
    how = {"__cublas$gemm": "as dot", "cuda_threefry2x32": "as HLO"}
    assert all(f"{n} {t} calls {how[t]}" in rewrite.describe() for t, n in expected.items())


def test_partitioned_seed_collectives_keep_their_groups() -> None:
    """Seed 001's all-reduces (channel_id, no global ids: cross_replica_and_partition over the
    one replica) span all 4 partitions; as replicas they must span all 4 replicas, and its
    all-gather (flattened ids, with one replica the partitions' numbers) keeps its ids as
    replica ids, without channel_id (Note [Collectives XLA:CPU compiles])."""
    rewrite = xla.rewrite_for_xla_cpu(SEED_FILES["001"].read_text(), partitions_as_replicas=4)
    assert rewrite is not None and rewrite.partitions_as_replicas == 4
    lines = rewrite.text.splitlines()
    assert "replica_count=4" in lines[0]
    reduces = [line for line in lines if " all-reduce(" in line]
    assert len(reduces) == 2
    assert all("replica_groups={{0,1,2,3}}" in line and "channel_id" not in line for line in reduces)
    (gather,) = [line for line in lines if " all-gather(" in line]
    assert "replica_groups={{0,1,2,3}}" in gather
    assert "channel_id" not in gather and "use_global_device_ids" not in gather
    assert not [line for line in lines if " partition-id(" in line]


# --- threefry ---------------------------------------------------------------------------------


def _threefry_module(key_shape: tuple[int, ...], dims: tuple[int, ...]) -> str:
    k = f"u32[{','.join(map(str, key_shape))}]"
    x = f"u32[{','.join(map(str, dims))}]"
    return (f"HloModule threefry\n\nENTRY e {{\n  k0 = {k} parameter(0)\n  k1 = {k} parameter(1)\n"
            f"  x0 = {x} parameter(2)\n  x1 = {x} parameter(3)\n"
            f"  ROOT r = ({x}, {x}) custom-call(k0, k1, x0, x1), custom_call_target=\"cuda_threefry2x32\", "
            f"backend_config=\"\\002\\000\\000\\000\\000\\000\\000\\000\"\n}}\n")


# (key shape, counter shape): equal shapes as in seed 003, scalar keys, a key along the last
# dimension (jax aligns trailing dimensions) and one with a size-1 dimension to stretch.
THREEFRY_CASES = [((5,), (5,)), ((), (7,)), ((3,), (2, 3)), ((1, 3), (2, 3))]


def _threefry_words(key_shape, dims, seed: int = 0):
    rng = np.random.default_rng(seed)
    words = [rng.integers(0, 2**32, size=s, dtype=np.uint32) for s in (key_shape, key_shape, dims, dims)]
    words[2].flat[0] = 0xFFFFFFFF  # wrap-around of the first addition
    return words


@pytest.mark.parametrize(("key_shape", "dims"), THREEFRY_CASES)
def test_threefry_expansion_is_bit_exact(key_shape, dims) -> None:
    text = _threefry_module(key_shape, dims)
    rewrite = xla.rewrite_for_xla_cpu(text)
    assert rewrite is not None and rewrite.custom_calls == {"cuda_threefry2x32": 1}
    assert "custom-call" not in rewrite.text
    xla.parse_hlo_text(rewrite.text)
    words = _threefry_words(key_shape, dims)
    expanded = hloscope.run(hloscope.parse(rewrite.text), words)
    handler = hloscope.run(hloscope.parse(text), words)  # the interpreter's custom-call handler
    reference = jax_threefry.threefry2x32_p.bind(*(jax.numpy.asarray(np.broadcast_to(w, dims)) for w in words))
    for got, by_handler, ref in zip(expanded, handler, reference, strict=True):
        assert got.dtype == np.uint32 and got.shape == dims
        np.testing.assert_array_equal(got, by_handler)
        np.testing.assert_array_equal(got, np.asarray(ref))


def test_threefry_expansion_matches_jax_random_bits() -> None:
    """jax's threefry_2x32(key, count) hashes the two halves of ``count`` as (x0, x1)."""
    key = np.array([0x12345678, 0x9ABCDEF0], np.uint32)
    count = np.arange(16, dtype=np.uint32)
    rewrite = xla.rewrite_for_xla_cpu(_threefry_module((), (8,)))
    assert rewrite is not None
    y0, y1 = hloscope.run(hloscope.parse(rewrite.text), [key[0], key[1], count[:8], count[8:]])
    expected = jax_threefry.threefry_2x32((jax.numpy.uint32(key[0]), jax.numpy.uint32(key[1])), count)
    np.testing.assert_array_equal(np.concatenate([y0, y1]), np.asarray(expected))


# --- gemm -------------------------------------------------------------------------------------


def _gemm_module(target: str, operands: list[str], result: str, config: dict) -> str:
    params = "\n".join(f"  p{i} = {s} parameter({i})" for i, s in enumerate(operands))
    backend = json.dumps(config).replace('"', '\\"')
    names = ", ".join(f"p{i}" for i in range(len(operands)))
    return (f"HloModule gemm\n\nENTRY e {{\n{params}\n  ROOT g = {result} custom-call({names}), "
            f"custom_call_target=\"{target}\", backend_config=\"{backend}\"\n}}\n")


def _dims(lc, rc, lb=(), rb=()) -> dict:
    return {"lhs_contracting_dimensions": [str(d) for d in lc], "rhs_contracting_dimensions": [str(d) for d in rc],
            "lhs_batch_dimensions": [str(d) for d in lb], "rhs_batch_dimensions": [str(d) for d in rb]}


GEMM_CASES = {
    # as in seed 000: beta=1 adds the broadcast bias operand
    "beta1": ("__cublas$gemm", ["f32[4,6]", "f32[6,5]", "f32[4,5]"], "f32[4,5]",
              {"alpha_real": 1, "alpha_imag": 0, "beta": 1, "dot_dimension_numbers": _dims([1], [0])}),
    # as in seed 003's attention: batched, alpha scales, rhs contracted on its last dimension
    "batched_alpha": ("__cublas$gemm", ["f32[2,3,8]", "f32[2,5,8]"], "f32[2,3,5]",
                      {"alpha_real": 0.03125, "alpha_imag": 0, "beta": 0,
                       "dot_dimension_numbers": _dims([2], [2], [0], [0])}),
    # a transposed lhs, beta not 1, and newer XLA's (result, workspace) tuple
    "workspace": ("__cublas$gemm", ["f32[6,4]", "f32[6,5]", "f32[4,5]"], "(f32[4,5], s8[64])",
                  {"gemm_backend_config": {"alpha_real": 2, "alpha_imag": 0, "beta": -0.5,
                                           "dot_dimension_numbers": _dims([0], [0])}}),
    # bf16 in and out, computed in f32 and rounded once
    "bf16": ("__cublas$gemm", ["bf16[4,16]", "bf16[16,3]"], "bf16[4,3]",
             {"alpha_real": 1, "alpha_imag": 0, "beta": 0, "dot_dimension_numbers": _dims([1], [0])}),
    # cublasLt with a bias vector and relu
    "lt_bias_relu": ("__cublas$lt$matmul", ["f32[4,6]", "f32[6,5]", "f32[5]"], "(f32[4,5], s8[32])",
                     {"alpha_real": 1, "alpha_imag": 0, "beta": 0, "epilogue": "BIAS_RELU",
                      "dot_dimension_numbers": _dims([1], [0])}),
}


def _gemm_reference(case: str, inputs: list[np.ndarray]) -> np.ndarray:
    """GEMM_CASES[case] computed in numpy (float64) from what its backend config says, apart
    from hloscope: result = epilogue(alpha * dot(a, b) + beta * c [+ bias]); XLA's dot puts the
    batch dimensions first, then a's free dimensions, then b's. Rounded once to the result type."""
    target, _, result, config = GEMM_CASES[case]
    cfg = config.get("gemm_backend_config", config)
    dims = {k: [int(d) for d in v] for k, v in cfg["dot_dimension_numbers"].items()}
    a, b = (np.asarray(x, np.float64) for x in inputs[:2])
    lb, rb = dims["lhs_batch_dimensions"], dims["rhs_batch_dimensions"]
    lc, rc = dims["lhs_contracting_dimensions"], dims["rhs_contracting_dimensions"]
    la = [d for d in range(a.ndim) if d not in lb + lc]
    ra = [d for d in range(b.ndim) if d not in rb + rc]
    a = a.transpose(lb + la + lc)
    b = b.transpose(rb + rc + ra)
    batch = a.shape[:len(lb)]
    m, k = int(np.prod(a.shape[len(lb):len(lb) + len(la)])), int(np.prod(a.shape[len(lb) + len(la):]))
    n = int(np.prod(b.shape[len(rb) + len(rc):]))
    out = a.reshape(*batch, m, k) @ b.reshape(*batch, k, n)
    out = cfg["alpha_real"] * out.reshape(*batch, *a.shape[len(lb):len(lb) + len(la)], *b.shape[len(rb) + len(rc):])
    epilogue = cfg.get("epilogue", "DEFAULT")
    if target == "__cublas$gemm" and cfg["beta"] and len(inputs) > 2:
        out = out + cfg["beta"] * np.asarray(inputs[2], np.float64)
    if "BIAS" in epilogue:
        out = out + np.asarray(inputs[2], np.float64)  # a vector along the last dimension
    if "RELU" in epilogue:
        out = np.maximum(out, 0.0)
    dtype = np.asarray(inputs[0]).dtype
    return out.astype(dtype)


def _gemm_tolerance(case: str) -> dict[str, float]:
    # bf16 results rounded once from the exact product: within one bf16 ulp (2^-8 relative).
    return {"rtol": 2**-8, "atol": 1e-6} if case == "bf16" else {"rtol": 1e-5, "atol": 1e-6}


@pytest.mark.parametrize("case", sorted(GEMM_CASES))
def test_gemm_expansion_and_handler_compute_what_the_backend_config_says(case: str) -> None:
    # Both the interpreter's gemm handler and the rewrite (as run by hloscope) against numpy
    # written from the config's meaning; the rewrite was compared with the handler only, which
    # could not catch a shared misreading of the config.
    target, operands, result, config = GEMM_CASES[case]
    text = _gemm_module(target, operands, result, config)
    rewrite = xla.rewrite_for_xla_cpu(text)
    assert rewrite is not None and rewrite.custom_calls == {target: 1}
    assert "custom-call" not in rewrite.text
    (dot,) = [line for line in rewrite.text.splitlines() if " dot(" in line]
    assert " f32[" in dot and "precision" not in dot  # f32 at default precision, narrow types too
    xla.parse_hlo_text(rewrite.text)
    module = hloscope.parse(text)
    inputs = random_inputs(module, 3, "normal")
    reference = _gemm_reference(case, inputs)
    for how, got in (("handler", hloscope.run(module, inputs)),
                     ("rewrite", hloscope.run(hloscope.parse(rewrite.text), inputs))):
        value = _leaves(got)[0]
        assert value.dtype == reference.dtype and value.shape == reference.shape, how
        np.testing.assert_allclose(value.astype(np.float64), reference.astype(np.float64), err_msg=how,
                                   **_gemm_tolerance(case))
    if "relu" in case:
        assert (reference == 0).any() and (reference > 0).any()  # the inputs exercise both sides


@pytest.mark.xla_execute
@pytest.mark.parametrize("case", sorted(GEMM_CASES))
def test_gemm_rewrite_on_xla_cpu_computes_what_the_backend_config_says(case: str) -> None:
    from hloscope.xla.worker import run_on_xla

    target, operands, result, config = GEMM_CASES[case]
    text = _gemm_module(target, operands, result, config)
    inputs = random_inputs(hloscope.parse(text), 3, "normal")
    got = run_on_xla(text, inputs, replicas=1, partitions=1, per_device=False)
    assert got.custom_calls == {target: 1}
    value, reference = _leaves(got.outputs)[0], _gemm_reference(case, inputs)
    assert value.dtype == reference.dtype and value.shape == reference.shape
    np.testing.assert_allclose(value.astype(np.float64), reference.astype(np.float64), **_gemm_tolerance(case))


def test_check_xla_on_an_unknown_gpu_custom_call_fails_cleanly(tmp_path, capsys, monkeypatch) -> None:
    """A backend custom call the rewrite does not know still reaches XLA:CPU, which refuses it
    with its target named, and ``run --check-xla`` says so without a traceback, after printing
    (and writing) hloscope's own results; its JSON twin carries the same."""
    from hloscope.cli.main import main
    from hloscope.interpret import custom_calls

    mod = tmp_path / "conv.hlo"
    mod.write_text('HloModule c\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n'
                   '  ROOT c = f32[4]{0} custom-call(p), custom_call_target="__cudnn$convForward"\n}\n')
    # hloscope's side must run, so the test gives the interpreter the target (for this test only).
    monkeypatch.setitem(custom_calls._TARGETS, "__cudnn$convForward", lambda ctx, inst, ops: ops[0])
    out_npz = tmp_path / "out.npz"
    assert main(["run", str(mod), "--check-xla", "--out", str(out_npz)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("XLA:CPU could not run the module") and "__cudnn$convForward" in captured.err
    assert "ran on 1 replica(s)" in captured.out and "(4,)" in captured.out and out_npz.exists()
    assert main(["run", str(mod), "--check-xla", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert "__cudnn$convForward" in report["xla"]["error"] and report["xla"]["worst"] is None
    assert report["outputs"]["out"]["shape"] == [4]


# --- seeds 000 and 001 on XLA:CPU -------------------------------------------------------------

SEED_RUNS = {"000": (8, 1), "001": (1, 4)}


@pytest.mark.xla_execute
@pytest.mark.parametrize("seed", sorted(SEED_RUNS))
def test_gpu_seed_on_xla_cpu_matches_hloscope(seed: str) -> None:
    from hloscope.xla.worker import run_on_xla

    replicas, partitions = SEED_RUNS[seed]
    text = SEED_FILES[seed].read_text()
    module = hloscope.parse(text)
    n = replicas * partitions
    inputs = [random_inputs(module, d, "positive") for d in range(n)]  # nothing shared by devices
    ours = hloscope.run(module, inputs, replicas=replicas, partitions=partitions)
    theirs = run_on_xla(text, inputs, replicas=replicas, partitions=partitions, per_device=True)
    assert theirs.custom_calls == SEED_REWRITES[seed][1]
    assert theirs.rewrite is not None and "calls as dot" in theirs.rewrite
    for k in range(n):
        got, expected = _leaves(ours[k]), _leaves(theirs.outputs[k])
        assert len(got) == len(expected)
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert g.dtype == e.dtype and g.shape == e.shape, f"device {k} leaf {i}"
            np.testing.assert_allclose(g, e, err_msg=f"device {k} leaf {i}", **F32)


@pytest.mark.xla_execute
def test_check_xla_runs_a_gpu_dump_and_says_how(capsys) -> None:
    from hloscope.cli.main import main

    assert main(["run", str(SEED_FILES["000"]), "--check-xla", "--per-device-inputs", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["xla"]["custom_calls"] == {"__cublas$gemm": 8}
    assert "8 __cublas$gemm calls as dot" in report["xla"]["rewrite"]
    diffs = [o["max_abs_difference_vs_xla"] for o in report["outputs"].values()]
    assert len(diffs) == 48 and max(diffs) < 1e-4
    assert main(["run", str(SEED_FILES["001"]), "--check-xla"]) == 0
    out = capsys.readouterr().out
    assert "XLA:CPU ran the module rewritten for it:" in out and "5 __cublas$gemm calls as dot" in out


@pytest.mark.xla_execute
@pytest.mark.parametrize(("key_shape", "dims"), THREEFRY_CASES)
def test_threefry_expansion_on_xla_cpu_is_bit_exact(key_shape, dims) -> None:
    from hloscope.xla.worker import run_on_xla

    words = _threefry_words(key_shape, dims, seed=1)
    got = run_on_xla(_threefry_module(key_shape, dims), words, replicas=1, partitions=1, per_device=False)
    reference = jax_threefry.threefry2x32_p.bind(*(jax.numpy.asarray(np.broadcast_to(w, dims)) for w in words))
    for g, ref in zip(got.outputs, reference, strict=True):
        np.testing.assert_array_equal(g, np.asarray(ref))

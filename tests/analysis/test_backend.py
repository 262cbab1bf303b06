"""Which backend a module was compiled for (Note [Inferring the backend] in analysis/backend.py)."""
from __future__ import annotations

import pytest

import hloscope
from hloscope.analysis.backend import infer_backend
from hloscope.analysis.hardware import load_hardware
from hloscope.analysis.timing import estimate_time
from tests.conftest import SEED_FILES


def _calling(target: str) -> hloscope.Module:
    return hloscope.parse(f"""HloModule m
ENTRY e {{
  p = f32[8,8]{{1,0}} parameter(0)
  ROOT c = f32[8,8]{{1,0}} custom-call(p), custom_call_target="{target}"
}}
""")


# Targets that real GPU/TPU/CPU stacks emit (XLA's cublas_cudnn.h and ir_emission_utils.h,
# jaxlib's GPU and CPU kernels, Transformer Engine, Pallas).
@pytest.mark.parametrize(("target", "backend", "stack"), [
    ("__cublas$gemm", "gpu", "cuBLAS"),
    ("__cublas$lt$matmul$f8", "gpu", "cuBLAS"),
    ("__cudnn$convForward", "gpu", "cuDNN"),
    ("__cudnn$fmhaSoftmaxBackward", "gpu", "cuDNN"),
    ("__triton", "gpu", "Triton"),
    ("triton_kernel_call", "gpu", "Triton"),
    ("te_fused_attn_forward_ffi", "gpu", "Transformer Engine"),
    ("te_gemm_ffi", "gpu", "Transformer Engine"),
    ("mosaic_gpu_v2", "gpu", "Mosaic GPU"),
    ("nvshmem_all_reduce", "gpu", "NCCL-style collectives"),
    ("cu_threefry2x32_ffi", "gpu", "CUDA/ROCm kernels"),
    ("cusolver_getrf_ffi", "gpu", "CUDA/ROCm kernels"),
    ("hipsolver_syevd_ffi", "gpu", "CUDA/ROCm kernels"),
    ("xla.gpu.ext.cub_sort_keys", "gpu", "CUDA/ROCm kernels"),
    ("__gpu$TopK", "gpu", "CUDA/ROCm kernels"),
    ("tpu_custom_call", "tpu", "Mosaic TPU"),
    ("lapack_sgetrf_ffi", "cpu", "CPU libraries"),
    ("ducc_fft", "cpu", "CPU libraries"),
    ("__onednn$matmul", "cpu", "CPU libraries"),
])
def test_library_custom_calls_name_their_backend(target: str, backend: str, stack: str) -> None:
    got = infer_backend(_calling(target))
    assert got.backend == backend
    assert [(e.what, e.examples) for e in got.evidence] == [(f"{stack} custom calls", (target,))]
    assert target in got.reason()


@pytest.mark.parametrize("target", ["TopK", "Sharding", "SPMDFullToShardShape", "MoveToHost",
                                    "xla.sdy.FuncResultSharding", "annotate_device_placement", "my_op"])
def test_backend_neutral_custom_calls_name_none(target: str) -> None:
    got = infer_backend(_calling(target))
    assert got.backend == "unknown" and got.evidence == () and got.profile == "cpu"
    assert "guess" in got.reason()


def test_seeds() -> None:
    """Seeds 000, 001 and 003 are GPU dumps (cuBLAS gemms, jax's CUDA threefry), 004 a TPU one
    (tiled layouts, scoped-memory configs); 001 has no fusion at all."""
    got = {s: infer_backend(hloscope.load(SEED_FILES[s])) for s in ("000", "001", "003", "004")}
    assert {s: g.backend for s, g in got.items()} == {"000": "gpu", "001": "gpu", "003": "gpu", "004": "tpu"}
    assert "__cublas$gemm" in got["000"].reason() and "cuda_threefry2x32" in got["003"].reason()
    assert "T(8,128)" in got["004"].reason() and "scoped_memory_configs" in got["004"].reason()
    assert [s for s, g in got.items() if g.unoptimized] == ["001"]
    assert got["003"].fusions > 300


def test_xla_cpu_configs_name_the_cpu() -> None:
    module = hloscope.parse("""HloModule m
fused {
  p = f32[64]{0} parameter(0)
  ROOT n = f32[64]{0} negate(p)
}
ENTRY e {
  p = f32[64]{0} parameter(0)
  ROOT f = f32[64]{0} fusion(p), kind=kLoop, calls=fused, backend_config={"outer_dimension_partitions":["2"]}
}
""")
    got = infer_backend(module)
    assert (got.backend, got.fusions, got.unoptimized) == ("cpu", 1, False)
    assert "outer_dimension_partitions" in got.reason()


def test_an_unoptimized_module_is_flagged_and_a_single_op_is_not() -> None:
    chain = hloscope.parse("HloModule m\nENTRY e {\n  p = f32[64]{0} parameter(0)\n  a = f32[64]{0} negate(p)\n"
                           "  ROOT b = f32[64]{0} exponential(a)\n}\n")
    assert infer_backend(chain).unoptimized
    one = hloscope.parse("HloModule m\nENTRY e {\n  p = f32[64,64]{1,0} parameter(0)\n"
                         "  ROOT d = f32[64,64]{1,0} dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    assert not infer_backend(one).unoptimized


def test_the_estimate_says_what_it_assumed() -> None:
    """An unoptimized module and a module of another backend get notes; a GPU module on a GPU
    profile, none."""
    seed000 = hloscope.load(SEED_FILES["000"])
    assert estimate_time(seed000, load_hardware("h100-sxm")).notes == ()
    on_cpu = estimate_time(seed000, load_hardware("cpu"))
    assert on_cpu.backend is not None and on_cpu.backend.backend == "gpu"
    [note] = on_cpu.notes
    assert "compiled for a GPU" in note and "__cublas$gemm" in note and "cpu" in note
    notes = estimate_time(hloscope.load(SEED_FILES["001"]), load_hardware("h100-sxm")).notes
    assert len(notes) == 1 and "no fusions" in notes[0]
    data = on_cpu.to_json()
    assert data["backend"]["backend"] == "gpu" and data["notes"] == [note] and data["hardware_kind"] == "cpu"

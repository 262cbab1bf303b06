"""Which backend a module was compiled for, and whether XLA optimized it, from what it holds.

Note [Inferring the backend]
    A time estimate needs a hardware profile, and a module says which backend it was compiled
    for in what only that backend's compiler or libraries write into it:

    * custom-call targets of backend libraries: cuBLAS and cuDNN calls that XLA:GPU's passes
      insert (``__cublas$gemm``, ``__cublas$lt$matmul``, ``__cudnn$convForward``,
      ``__cudnn$fmhaSoftmax``: ``service/gpu/cublas_cudnn.h``), Triton (``__triton``,
      ``__gpu$xla.gpu.triton``, jax's ``triton_kernel_call``), Transformer Engine's FFI calls
      (``te_fused_attn_forward_ffi``, ``te_gemm_ffi``), jax's CUDA and ROCm kernels
      (``cu_threefry2x32``, ``cusolver_getrf_ffi``, ``hipsolver_syevd_ffi``), Mosaic GPU
      (``mosaic_gpu_v2``), CUB sorts (``xla.gpu.ext.cub_sort_keys``), NCCL/NVSHMEM-style
      collective kernels; Mosaic TPU and Pallas on TPU (``tpu_custom_call``); on the CPU,
      LAPACK (``lapack_sgetrf_ffi``), DUCC's FFT (``ducc_fft``), oneDNN (``__onednn$matmul``)
      and the CPU host callbacks;
    * backend configurations only one backend writes: XLA:GPU's ``GpuBackendConfig``
      (``operation_queue_id``, ``fusion_backend_config`` with kinds such as ``__triton_gemm``
      or ``__cudnn$fusion``: ``service/gpu/backend_configs.proto``), XLA:CPU's
      ``BackendConfig`` (``outer_dimension_partitions``, ``fusion_config`` with kinds
      ``__ynn_fusion``/``__onednn_fusion``: ``service/cpu/backend_config.proto``) and TPU's
      (``scoped_memory_configs``);
    * TPU's tiled layouts (``{1,0:T(8,128)}``).

    Backend-neutral targets (``Sharding``, ``SPMDFullToShardShape``, ``MoveToHost``, ``TopK``,
    Shardy's ``xla.sdy.*``) say nothing. A module showing none of the above (an unoptimized
    one, or a jax program lowered but not compiled) names no backend: the CPU profile is
    assumed, and said to be a guess.

    Whether XLA optimized the module shows in its fusions: every backend's pipeline fuses
    elementwise work into its producers and consumers, so a module with elementwise
    instructions and not one fusion was dumped before XLA's passes (``*before_optimizations*``,
    ``jax.jit(f).lower(...).as_text()``). Timing such a module charges every instruction as a
    kernel of its own, and its memory holds every intermediate: neither is what XLA runs.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from hloscope.ir import ArrayShape, Module, Opcode
from hloscope.ir.opcode import Family

__all__ = ["BACKEND_PROFILES", "Evidence", "ModuleBackend", "infer_backend"]

# The bundled profile assumed for each backend (Note [Inferring the backend]).
BACKEND_PROFILES = {"gpu": "h100-sxm", "tpu": "tpu-v5p", "cpu": "cpu", "unknown": "cpu"}
_NAMES = {"gpu": "a GPU", "tpu": "a TPU", "cpu": "XLA:CPU", "unknown": "no backend in particular"}

# Custom-call targets by the stack that provides them: (backend, stack, prefixes). Matched by
# prefix, first row first; see Note [Inferring the backend] for where each comes from.
_TARGETS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("gpu", "cuBLAS", ("__cublas$", "__cublaslt", "cublas_", "hipblas", "__rocblas")),
    ("gpu", "cuDNN", ("__cudnn$", "cudnn_", "__miopen")),
    ("gpu", "Triton", ("__triton", "__gpu$xla.gpu.triton", "triton_kernel_call")),
    ("gpu", "Transformer Engine", ("te_",)),
    ("gpu", "Mosaic GPU", ("mosaic_gpu",)),
    ("gpu", "NCCL-style collectives", ("nccl", "__nccl", "rccl", "nvshmem", "__nvshmem")),
    ("gpu", "CUDA/ROCm kernels", ("cu_", "cuda_", "cusolver", "cusparse", "__cusolver$", "__cub$",
                                  "xla.gpu.", "__gpu$", "hip_", "hipsolver", "hipsparse",
                                  "CuteDSLRT_", "xla_python_gpu_callback",
                                  "xla_ffi_python_gpu_callback")),
    ("tpu", "Mosaic TPU", ("tpu_custom_call",)),
    ("tpu", "TPU runtime", ("xla_python_tpu_callback", "xla_ffi_python_tpu_callback", "tpu_")),
    ("cpu", "CPU libraries", ("lapack_", "ducc_fft", "dynamic_ducc_fft", "__onednn$",
                              "xla_python_cpu_callback", "xla_ffi_python_cpu_callback")),
)
# Keys of a backend_config JSON object that one backend's proto has (checked as text, so that
# a module of millions of instructions is not parsed as JSON).
_CONFIG_KEYS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("gpu", "XLA:GPU backend configs", ('"operation_queue_id"', '"fusion_backend_config"',
                                        '"gemm_backend_config"', '"cudnn_conv_backend_config"',
                                        '"force_earliest_schedule"', '"collective_backend_config"')),
    ("cpu", "XLA:CPU backend configs", ('"outer_dimension_partitions"', '"fusion_config"')),
    ("tpu", "TPU backend configs", ('"scoped_memory_configs"', '"used_scoped_memory_configs"')),
)
_KIND = re.compile(r'"kind"\s*:\s*"([^"]+)"')
_ELEMENTWISE = frozenset((Family.UNARY, Family.BINARY, Family.TERNARY, Family.COMPARE, Family.CONVERT))


@dataclass(frozen=True, slots=True)
class Evidence:
    """``count`` instructions (or layouts) that only ``backend`` writes: ``what``, e.g.
    "Transformer Engine custom calls", with up to three ``examples`` (targets or kinds)."""

    backend: str
    what: str
    count: int
    examples: tuple[str, ...]

    def text(self) -> str:
        return f"{self.what} ({', '.join(self.examples)})" if self.examples else self.what

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "what": self.what, "count": self.count, "examples": list(self.examples)}


@dataclass(frozen=True)
class ModuleBackend:
    """What a module says about the backend it was compiled for (Note [Inferring the backend]).

    ``backend`` is "gpu", "tpu", "cpu" or "unknown"; ``evidence`` is what says so, strongest
    first (evidence of other backends too, when a module mixes them); ``fusions`` counts fusion
    instructions and ``unoptimized`` says the module has elementwise work but no fusion.
    """

    backend: str
    evidence: tuple[Evidence, ...]
    fusions: int
    unoptimized: bool

    @property
    def profile(self) -> str:
        """The bundled hardware profile assumed for this backend."""
        return BACKEND_PROFILES[self.backend]

    def reason(self) -> str:
        """Why ``backend``: the evidence in words."""
        mine = [e for e in self.evidence if e.backend == self.backend]
        if not mine:
            return ("nothing in it names a backend (no library custom calls, backend configs or "
                    "TPU layouts), so the backend is a guess")
        return "; ".join(e.text() for e in mine)

    def assumed(self) -> str:
        """The sentence a page or command prints when it picked ``profile`` for the user."""
        name = _NAMES[self.backend]
        if self.backend == "unknown":
            return f"no --hardware given: the {self.profile} profile assumed; {self.reason()}"
        return f"no --hardware given: {self.profile} assumed, as the module was compiled for {name}: {self.reason()}"

    def notes(self, hardware_kind: str, hardware_name: str) -> list[str]:
        """What a reader of an estimate on ``hardware_kind`` must know about this module: that it
        is unoptimized, or compiled for another backend than the profile's."""
        out = []
        if self.unoptimized:
            out.append("the module has no fusions: XLA's fusion passes have not run on it (a module before "
                       "optimizations, or dumped before fusion), so each instruction is timed as a kernel of "
                       "its own and each intermediate is held in memory, which is not what XLA runs; estimate "
                       "the module after optimizations (XLA_FLAGS=--xla_dump_to=DIR writes "
                       "*after_optimizations.txt)")
        if self.backend not in ("unknown", hardware_kind):
            name = _NAMES[self.backend]
            out.append(f"the module was compiled for {name} ({self.reason()}) and is estimated on "
                       f"{hardware_name}, a {hardware_kind.upper()} profile: its fusions, layouts and library "
                       f"calls were chosen for {name}, not for this hardware")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "profile": self.profile, "reason": self.reason(),
                "evidence": [e.to_json() for e in self.evidence], "fusions": self.fusions,
                "unoptimized": self.unoptimized}


def infer_backend(module: Module) -> ModuleBackend:
    """The backend ``module`` was compiled for, and whether it was optimized (one pass over its
    instructions; Note [Inferring the backend])."""
    found: dict[tuple[str, str], Counter[str]] = {}

    def note(backend: str, what: str, example: str) -> None:
        found.setdefault((backend, what), Counter())[example] += 1

    fusions = elementwise = 0
    tiled = Counter[str]()
    # One pass over every instruction, fusion bodies included: kept to identity tests and one
    # dict lookup each (the report asks three times; a 319,000-instruction module took 0.3 s).
    fusion, custom_call = Opcode.FUSION, Opcode.CUSTOM_CALL
    for inst in module.instructions():
        op = inst.opcode
        if op is fusion:
            fusions += 1
        elif op is custom_call:
            target = inst.custom_call_target or ""
            for backend, stack, prefixes in _TARGETS:
                if target.startswith(prefixes):
                    note(backend, f"{stack} custom calls", target)
                    break
        elif op.family in _ELEMENTWISE:
            elementwise += 1
        bc = inst.attrs.get("backend_config")
        if bc is not None:
            raw = bc.raw
            for backend, what, keys in _CONFIG_KEYS:
                if any(k in raw for k in keys):
                    kind = _KIND.search(raw) if op is Opcode.FUSION else None
                    note(backend, what if kind is None else f"{what.split(' ')[0]} fusion kinds",
                         kind.group(1) if kind else next(k.strip('"') for k in keys if k in raw))
                    break
    for inst in module.entry.instructions:
        if inst.opcode is Opcode.PARAMETER:
            for _, leaf in inst.shape.leaves():
                if isinstance(leaf, ArrayShape) and leaf.layout is not None and any(
                        len(t.dimensions) >= 2 for t in leaf.layout.tiles):
                    tiled["T" + "".join(str(t) for t in leaf.layout.tiles)] += 1
    for tile, n in tiled.items():
        found.setdefault(("tpu", "TPU tiled layouts"), Counter())[tile] += n
    evidence = sorted(
        (Evidence(backend, what, sum(c.values()), tuple(sorted(c, key=lambda k: (-c[k], k))[:3]))
         for (backend, what), c in found.items()),
        key=lambda e: (-e.count, e.backend, e.what))
    votes = Counter[str]()
    for e in evidence:
        votes[e.backend] += e.count
    backend = max(votes, key=lambda b: (votes[b], b)) if votes else "unknown"
    return ModuleBackend(backend, tuple(evidence), fusions, fusions == 0 and elementwise >= 2)

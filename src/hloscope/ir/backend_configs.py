"""Readers of backend configs: the JSON a backend attaches to an instruction, decoded once.

The interpreter and the rewrite for XLA:CPU read a cuBLAS gemm through the same ``gemm_spec``,
so both run the same math.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from hloscope.errors import UnsupportedCustomCallError
from hloscope.ir.instruction import Instruction
from hloscope.ir.shape import ArrayShape, TupleShape

__all__ = ["GemmSpec", "gemm_spec", "gemm_result_shape"]


def _ints(xs: Any) -> list[int]:
    return [int(x) for x in xs or ()]


def _gemm_config(inst: Instruction) -> dict[str, Any]:
    bc = inst.backend_config
    cfg = bc.json() if bc is not None else None
    if not isinstance(cfg, dict):
        raise UnsupportedCustomCallError(f"{inst.custom_call_target} needs a JSON backend_config")
    # Newer XLA wraps it: {"gemm_backend_config": {...}, "operation_queue_id": ...}.
    return cfg.get("gemm_backend_config", cfg)


def gemm_result_shape(inst: Instruction) -> ArrayShape:
    """The gemm's result: its shape, or the first element of a (result, workspace) tuple."""
    shape = inst.shape
    result = shape.elements[0] if isinstance(shape, TupleShape) else shape
    if not isinstance(result, ArrayShape):
        raise UnsupportedCustomCallError(f"{inst.custom_call_target}: its result {result} is not an array")
    return result


_EPILOGUES = {"DEFAULT": (False, False), "BIAS": (True, False), "RELU": (False, True),
              "BIAS_RELU": (True, True)}


class GemmSpec(NamedTuple):
    """A gemm's backend_config, decoded once per instruction (``EvalContext.attrs``)."""

    lb: list[int]
    rb: list[int]
    lc: list[int]
    rc: list[int]
    compute: np.dtype
    out: ArrayShape
    alpha: complex | float
    beta: float
    bias: bool
    relu: bool


def gemm_spec(inst: Instruction) -> GemmSpec:
    """Decode ``inst``'s gemm configuration (its dimension numbers, types and epilogue)."""
    cfg = _gemm_config(inst)
    dims = cfg.get("dot_dimension_numbers", {})
    out = gemm_result_shape(inst)
    compute = np.dtype(np.float32) if out.primitive_type.is_floating and out.dtype.itemsize < 4 else out.dtype
    alpha = complex(float(cfg.get("alpha_real", 1)), float(cfg.get("alpha_imag", 0)))
    epilogue = str(cfg.get("epilogue", "DEFAULT"))
    if epilogue not in _EPILOGUES:
        raise UnsupportedCustomCallError(f"{inst.custom_call_target} epilogue {epilogue} is not supported")
    return GemmSpec(_ints(dims.get("lhs_batch_dimensions")), _ints(dims.get("rhs_batch_dimensions")),
                    _ints(dims.get("lhs_contracting_dimensions")), _ints(dims.get("rhs_contracting_dimensions")),
                    compute, out, alpha if compute.kind == "c" else alpha.real, float(cfg.get("beta", 0)),
                    *_EPILOGUES[epilogue])

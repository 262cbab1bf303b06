"""Oracle programs from the breadth sweep (tools/oracle_sweep.py): one small program per class of
difference the sweep found between hloscope and XLA:CPU, kept so the regular oracle test guards
the fix.

Imported by ``programs.py`` after ``programs_more.py``; the corpus hashes this file, so editing
it rebuilds only its cases. Same rules: tiny shapes, deterministic inputs, ``families`` lists
XLA opcodes the pre- or post-optimization HLO holds.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from .registry import f32, mesh8, program


def _narrow(seed: int, *shape: int, dtype=ml_dtypes.bfloat16) -> np.ndarray:
    return f32(*shape, seed=seed, scale=3.0).astype(dtype)


# --------------------------------------------------------------------------------------------
# Reductions in bf16/f16 follow XLA:CPU's order (Note [XLA:CPU's reduction order]): sequential
# up to 32 elements, windows of 32 (SAME padding, split low/high) beyond, to a fixed point.


@program("sweep_narrow_reduce_order", lambda: (_narrow(300, 6, 40), _narrow(301, 3, 1100),
                                               _narrow(302, 5, 12, dtype=np.float16),
                                               _narrow(303, 40, 7, 3, dtype=np.float16)),
         "reduce", rtol=0, atol=0)
def _narrow_reduce_order(a, b, c, d):
    add = lambda x, dims: lax.reduce(x, np.array(0, x.dtype), lax.add, dims)  # noqa: E731
    return (add(a, (1,)), add(a, (0,)), add(a, (0, 1)), add(b, (1,)), add(c, (1,)), add(d, (0,)),
            add(d, (0, 2)), lax.reduce(c, np.array(1, c.dtype), lax.mul, (0,)))


# --------------------------------------------------------------------------------------------
# Cumulative reduce-windows longer than 16 as XLA:CPU's ReduceWindowRewriter computes them
# (Note [XLA:CPU's cumulative reduce-window]): blocks of 16, then the blocks' prefixes, again
# as a tree when there are more than 16 blocks (300 elements).


@program("sweep_narrow_scans", lambda: (_narrow(310, 3, 40), _narrow(311, 2, 300),
                                        _narrow(312, 37, 2, dtype=np.float16)),
         "reduce-window", rtol=0, atol=0)
def _narrow_scans(a, b, c):
    return (jnp.cumsum(a, 1), lax.cumsum(a, 1, reverse=True), lax.cummax(a, 1), jnp.cumsum(b, 1),
            lax.cumprod(c * 0.1 + 1, 0), jnp.cumsum(c, 0))


# --------------------------------------------------------------------------------------------
# A manual region that takes no operands: nothing per-device enters it, yet its code runs on
# every device (axis_index differs). pmap of a function without array inputs to the region
# lowers this way too.


def _no_input_region(a):
    z = jax.shard_map(lambda: jnp.ones((1, 3)) * lax.axis_index("x"), mesh=mesh8(), in_specs=(),
                      out_specs=P("x"))()
    return z + a


def _no_input_region_kwargs():
    s = NamedSharding(mesh8(), P("x"))
    return {"in_shardings": (s,), "out_shardings": s}


for _mode in ("jit_sharded8_shardy", "jit_sharded8_gspmd"):
    program(f"manual_region_without_operands_{_mode.rsplit('_', 1)[1]}", lambda: (f32(8, 3, seed=320),),
            "call custom-call partition-id", mode=_mode, jit_kwargs=_no_input_region_kwargs)(_no_input_region)


# --------------------------------------------------------------------------------------------
# Devices that take different branches meet at the branches' own all-reduces: XLA:CPU matches
# collectives by kind and channel_id, not by instruction.


@program("sweep_collectives_in_branches", lambda: (f32(8, 2, 3, seed=330),), "all-reduce conditional",
         mode="pmap8", jit_kwargs=lambda: {"axis_name": "i"})
def _collectives_in_branches(v):
    return lax.cond(lax.axis_index("i") % 2 == 0, lambda a: lax.psum(a, "i"),
                    lambda a: lax.psum(-a, "i") * 2, v)


@program("sweep_bf16_collectives", lambda: (f32(8, 4, 16, seed=331).astype(jnp.bfloat16),),
         "all-reduce reduce-scatter", mode="pmap8", jit_kwargs=lambda: {"axis_name": "i"}, rtol=0, atol=0)
def _bf16_collectives(v):
    # XLA:CPU's AllReducePromotion sums bf16 collectives in f32 and rounds once; summing in
    # bf16 step by step differs in the last bits (collectives.py, _PROMOTED).
    return lax.psum(v, "i"), lax.pmean(v, "i"), lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True)

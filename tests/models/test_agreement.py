"""The models tier against jax's own figures: XLA's cost and memory analyses of the compiled
step, and the step's outputs for the same inputs, before and after XLA's optimizations."""
from __future__ import annotations

import numpy as np

import hloscope as hs
from hloscope.interpret import run
from tests.oracle_fixtures import assert_values_close


def _module(model, stage: str) -> hs.Module:
    return hs.parse(model.pre_text if stage == "pre" else model.post_text)


def test_cost_matches_xla(model) -> None:
    """FLOPs and transcendentals as XLA counts them (XLA sums them in float32, so the total
    may differ by that rounding), bytes accessed exactly."""
    total = hs.cost(hs.parse(model.post_text)).total
    xla = model.json("cost_post.json")["compiled"]
    # XLA accumulates each figure in a float: one rounding per instruction at most.
    rounding = 2.0 ** -24 * hs.parse(model.post_text).instruction_count
    assert abs(total.flops - xla["flops"]) <= rounding * xla["flops"] + 1
    assert abs(total.transcendentals - xla["transcendentals"]) <= rounding * xla["transcendentals"] + 1
    assert total.bytes_accessed == xla["bytes accessed"]


def test_memory_sizes_match_xla(model) -> None:
    mem = hs.memory(hs.parse(model.post_text))
    xla = model.json("memory.json")
    assert (mem.argument_bytes, mem.output_bytes, mem.alias_bytes, mem.temp_bytes) == (
        xla["argument_size_in_bytes"], xla["output_size_in_bytes"], xla["alias_size_in_bytes"],
        xla["temp_size_in_bytes"])


def _as_stored(got, expected):
    """jax stores a replicated scalar's shard as shape (1,) where the module returns f32[]."""
    if isinstance(got, tuple | list):
        return type(got)(_as_stored(g, e) for g, e in zip(got, expected, strict=True))
    g = np.asarray(got)
    return g.reshape(1) if g.shape == () and np.shape(expected) == (1,) else got


def test_optimized_step_computes_what_jax_computed(model) -> None:
    """Each device's outputs of the optimized (partitioned) module equal jax's shards."""
    meta = model.meta
    out = run(hs.parse(model.post_text), model.inputs(), replicas=meta["num_replicas"],
              partitions=meta["num_partitions"])
    expected = model.outputs()
    assert_values_close(_as_stored(out, expected), expected, meta["rtol"], meta["atol"])

"""The models tier against jax's own figures: XLA's cost and memory analyses of the compiled
step, and the step's outputs for the same inputs, before and after XLA's optimizations."""
from __future__ import annotations

import numpy as np

import hloscope as hs
from hloscope.analysis.cost_float32 import float32_total
from hloscope.interpret import run
from hloscope.text.buffer_assignment_dump import load_buffer_assignment
from tests.oracle_fixtures import assert_values_close


def _module(model, stage: str) -> hs.Module:
    return hs.parse(model.pre_text if stage == "pre" else model.post_text)


def test_cost_matches_xla(model) -> None:
    """FLOPs, transcendentals and bytes accessed as XLA counts them: hloscope's per-instruction
    counts, summed in float32 in the order XLA sums them (Note [XLA sums costs in float32]),
    are XLA's figures to the bit; summed exactly they differ only past 2**24."""
    module = hs.parse(model.post_text)
    report = hs.cost(module)
    xla = model.json("cost_post.json")["compiled"]
    rounded = float32_total(module, report)
    assert (rounded.flops, rounded.transcendentals, rounded.bytes_accessed) == (
        xla["flops"], xla["transcendentals"], xla["bytes accessed"])
    exact = report.total
    for ours, theirs in ((exact.flops, xla["flops"]), (exact.transcendentals, xla["transcendentals"]),
                         (exact.bytes_accessed, xla["bytes accessed"])):
        assert ours == theirs or ours > 2 ** 24


def test_memory_sizes_match_xla(model) -> None:
    mem = hs.memory(hs.parse(model.post_text))
    xla = model.json("memory.json")
    assert (mem.argument_bytes, mem.output_bytes, mem.alias_bytes, mem.temp_bytes) == (
        xla["argument_size_in_bytes"], xla["output_size_in_bytes"], xla["alias_size_in_bytes"],
        xla["temp_size_in_bytes"])
    # peak_memory_in_bytes as XLA:CPU computes it (Note [peak_memory_in_bytes]): jax's figure.
    assert mem.xla_peak_memory.backend == "cpu"
    assert mem.xla_peak_memory.bytes == xla["peak_memory_in_bytes"]
    # hloscope's own live-range peak is another quantity, and larger on every model here.
    assert mem.peak_bytes > xla["peak_memory_in_bytes"]


def test_live_range_peaks_match_xla_dump(model) -> None:
    """XLA's HloLiveRange peak as hloscope computes it, against the peak in XLA's own dump
    (``Live ranges at N (peak)``): step and bytes."""
    mem = hs.memory(hs.parse(model.post_text))
    dump = model.dump_files()["cpu_after_optimizations-buffer-assignment.txt"]
    ba = load_buffer_assignment(str(dump))
    assert (mem.xla_peak_bytes, mem.xla_peak_time) == (ba.peak_bytes, ba.peak_time)
    assert mem.total_bytes == ba.total_bytes


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

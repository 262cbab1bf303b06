"""One peak (Note [One peak]): the curve, the peak and its buffers agree, per memory space."""
from __future__ import annotations

import pytest

from tests.conftest import MODULE_SEEDS, SEED_FILES


@pytest.mark.parametrize("seed", MODULE_SEEDS)
def test_peak_is_the_curves_maximum(seed):
    import hloscope
    from hloscope.analysis.memory.report import PEAK_DEFINITION, analyze_memory

    r = analyze_memory(hloscope.load(SEED_FILES[seed]))
    curve = [p.bytes for p in r.timeline]
    assert max(curve) == r.peak_bytes == curve[r.peak_time]
    assert curve.index(r.peak_bytes) == r.peak_time  # the earliest step of the maximum
    assert sum(b.bytes for b in r.peak_buffers) == r.peak_bytes
    assert all(b.memory_space == 0 for b in r.peak_buffers)
    assert 0 in r.memory_spaces and r.memory_spaces[0].peak_bytes == r.peak_bytes
    for space, s in r.memory_spaces.items():
        assert len(s.timeline) == r.schedule_end_time
        assert max(s.timeline) == s.peak_bytes == s.timeline[s.peak_time]
        assert sum(b.bytes for b in s.peak_buffers) == s.peak_bytes
        assert {b.memory_space for b in s.peak_buffers} <= {space}
    j = r.to_json()
    assert j["peak_definition"] == PEAK_DEFINITION
    assert max(p["bytes"] for p in j["timeline"]) == j["peak_bytes"] == j["timeline"][j["peak_time"]]["bytes"]
    assert j["memory_spaces"]["0"]["peak_bytes"] == j["peak_bytes"]


def test_alternate_memory_is_its_own_space():
    # Seed 004 (TPU) keeps 90,177,536 bytes in S(1): they made the headline peak exceed XLA's
    # peak_memory_in_bytes until each memory space got its own curve.
    import hloscope
    from hloscope.analysis.memory.report import analyze_memory

    r = analyze_memory(hloscope.load(SEED_FILES["004"]))
    assert r.peak_bytes <= r.argument_bytes + r.output_bytes - r.alias_bytes + r.temp_bytes
    assert r.memory_spaces[1].peak_bytes == r.memory_spaces[1].temp_bytes == 90177536
    assert "copy-start" not in {b.instruction for b in r.peak_buffers}
    assert {b.instruction for b in r.memory_spaces[1].peak_buffers} >= {"copy-start", "fusion.12"}

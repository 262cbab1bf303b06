"""Collective analysis on the seeds: group sizes, modes and byte volumes worked out by hand."""
from __future__ import annotations

import json

import pytest

import hloscope
from hloscope.analysis.collectives import analyze_collectives, wire_bytes
from tests.analysis.async_sugar import ASYNC_SUGAR
from tests.conftest import SEED_FILES

EXPECTED_GROUP_SIZE = {"000": 8, "001": 4, "003": 8, "004": 4}


@pytest.fixture(scope="module")
def reports():
    return {s: analyze_collectives(hloscope.load(SEED_FILES[s])) for s in EXPECTED_GROUP_SIZE}


@pytest.mark.parametrize("seed", sorted(EXPECTED_GROUP_SIZE))
def test_group_sizes(reports, seed: str) -> None:
    report = reports[seed]
    assert report.collectives
    assert {c.group_size for c in report.collectives} == {EXPECTED_GROUP_SIZE[seed]}
    json.dumps(report.to_json())


def test_seed_000_tuple_all_reduce(reports) -> None:
    # f32[784,1024] + f32[1024] + f32[1024] + f32[1024,10] + f32[10] + f32[1024,1024], 8 replicas.
    b = 4 * (784 * 1024 + 1024 + 1024 + 1024 * 10 + 10 + 1024 * 1024)
    assert b == 7_454_760
    (op,) = reports["000"].collectives
    assert (op.group_mode, op.group_size, op.num_groups) == ("cross_replica", 8, 1)
    assert op.payload_bytes == b
    assert op.ring_bytes == 2 * 7 / 8 * b == 13_045_830
    assert op.tree_bytes == 2 * b
    assert reports["000"].num_replicas == 8  # inferred: the pmap header has no replica_count


def test_seed_004_all_reduce(reports) -> None:
    # (f32[8,128,4096], f32[]) over replica_groups={} with replica_count=4; logical bytes, not tiles.
    b = 4 * 8 * 128 * 4096 + 4
    (op,) = reports["004"].collectives
    assert (op.group_size, op.num_groups, op.payload_bytes) == (4, 1, b)
    assert op.ring_bytes == 2 * 3 / 4 * b == 25_165_830
    assert op.ring_steps == 6 and op.tree_steps == 4


def test_seed_001_spmd(reports) -> None:
    r = reports["001"]
    assert (r.num_replicas, r.num_partitions) == (1, 4)
    ag = r.by_name("all-gather")
    assert (ag.group_mode, ag.payload_bytes, ag.ring_bytes) == ("flattened_id", 64, 48)
    ar = r.by_name("all-reduce")
    assert (ar.group_mode, ar.payload_bytes, ar.ring_bytes) == ("cross_replica_and_partition", 4096, 6144)


def test_seed_003_twelve_all_reduces(reports) -> None:
    r = reports["003"]
    assert len(r.collectives) == 12
    assert all(c.kind == "all-reduce" and c.count == 1 for c in r.collectives)
    assert r.payload_bytes == sum(c.payload_bytes for c in r.collectives)


def test_all_reduce_in_loop_counts_trips() -> None:
    text = """HloModule m, replica_count=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
cond {
  p = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[256] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[256] all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=add
  ROOT r = (s32[], f32[256]) tuple(j, y)
}
ENTRY e {
  a = f32[256] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[256]) tuple(z, a)
  w = (s32[], f32[256]) while(t), condition=cond, body=body
  ROOT g = f32[256] get-tuple-element(w), index=1
}
"""
    r = analyze_collectives(hloscope.parse(text))
    (op,) = r.collectives
    assert (op.group_size, op.num_groups, op.count) == (2, 2, 10)
    assert r.ring_bytes == 10 * 1024  # 2 (n-1)/n B = B per step for n=2
    assert r.payload_bytes == 10 * 1024


def test_formulas() -> None:
    assert wire_bytes("all-gather", 4, 400) == 300
    assert wire_bytes("reduce-scatter", 4, 400) == 300
    assert wire_bytes("all-to-all", 8, 800) == 700
    assert wire_bytes("collective-permute", 2, 123) == 123
    assert wire_bytes("all-reduce", 1, 100) == 0


# --- compiled shard_map and pmap programs (jax_programs.py) on 8 devices --------------------------
# Each row: opcode -> (group mode, group size, payload bytes, ring bytes per device), worked out
# from the per-device shapes: x is f32[16,8] split 8 ways, so each device holds f32[2,8] (64 B).
SHARD_MAP_EXPECTED = {
    "all-gather": ("flattened_id", 8, 512, 7 / 8 * 512),  # the gathered f32[16,8]
    "all-reduce": ("flattened_id", 8, 64, 2 * 7 / 8 * 64),  # psum of h = x @ w, f32[2,8]
    "collective-permute": ("cross_partition", 8, 64, 64.0),  # ring shift i -> i+1
    "reduce-scatter": ("flattened_id", 8, 64, 7 / 8 * 64),  # psum_scatter of f32[2,8]
    "all-to-all": ("cross_partition", 8, 64, 7 / 8 * 64),  # eight f32[2,1] pieces
}


def _compiled_collectives(xla_cpu_compiled, name: str):
    pytest.importorskip("jax")
    from tests.analysis import jax_programs

    text = xla_cpu_compiled(name, lambda: jax_programs.lower(name)).text
    return analyze_collectives(hloscope.parse(text))


def test_shard_map_collectives_compiled(xla_cpu_compiled) -> None:
    r = _compiled_collectives(xla_cpu_compiled, "shard_map_collectives")
    assert (r.num_replicas, r.num_partitions) == (1, 8)
    got = {c.opcode: (c.group_mode, c.group_size, c.payload_bytes, c.ring_bytes) for c in r.collectives}
    assert got == SHARD_MAP_EXPECTED
    assert all(c.count == 1 and c.num_groups == 1 for c in r.collectives)


def test_psum_in_scan_counts_trips(xla_cpu_compiled) -> None:
    # scan over 5 rows of f32[5,16] split 8 ways on the columns: each step sums an f32[2] (8 B).
    r = _compiled_collectives(xla_cpu_compiled, "scan_psum")
    (op,) = r.collectives
    assert (op.opcode, op.group_size, op.payload_bytes, op.count) == ("all-reduce", 8, 8, 5)
    assert r.payload_bytes == 5 * 8 and r.ring_bytes == 5 * 2 * 7 / 8 * 8


def test_pmap_psum_compiled(xla_cpu_compiled) -> None:
    # pmap over 8 devices lowers to a partitioned module: one all-reduce of f32[32] (128 B).
    r = _compiled_collectives(xla_cpu_compiled, "pmap_psum")
    (op,) = r.collectives
    assert (r.num_partitions, op.opcode, op.group_mode, op.group_size, op.payload_bytes) == (
        8, "all-reduce", "flattened_id", 8, 128)
    assert op.tree_bytes == 2 * 128 and op.ring_steps == 14 and op.tree_steps == 6


def test_mesh_replica_groups_expand_for_the_analysis() -> None:
    """The mesh spelling of replica groups (with and without device_ids; the interpreter
    matches XLA with the same expansion on the sharded_reshard programs) expands to explicit
    groups, so the analysis sizes its groups rather than assuming one group of everyone."""
    from hloscope.ir.attributes import ReplicaGroups

    assert ReplicaGroups(text="mesh['x'=2,'y'=4] {'y'}").expanded() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert ReplicaGroups(text="mesh['x'=2,'y'=4] {'x'}").expanded() == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert ReplicaGroups(text="mesh['x'=2,'y'=4]").expanded("([2,4]T(1,0)) {'y'}") == [[0, 4, 1, 5], [2, 6, 3, 7]]


def test_async_sugar_collectives_match_their_synchronous_form() -> None:
    """GPU dumps write reduce-scatter and all-to-all as async sugar (`reduce-scatter-start`, an
    async-start wrapping the collective): each counts as the collective it wraps, with the
    groups and bytes of its synchronous spelling."""
    sugar = ASYNC_SUGAR["collectives"]
    plain = (sugar.replace("((f32[16,8]{1,0}), f32[4,8]{1,0}) reduce-scatter-start", "f32[4,8]{1,0} reduce-scatter")
             .replace("reduce-scatter-done(s)", "copy(s)")
             .replace("((f32[16,8]{1,0}), f32[16,8]{1,0}) all-to-all-start", "f32[16,8]{1,0} all-to-all")
             .replace("all-to-all-done(t)", "copy(t)"))
    ours, theirs = (analyze_collectives(hloscope.parse(t)).collectives for t in (sugar, plain))
    assert [(c.kind, c.opcode) for c in ours] == [("reduce-scatter", "reduce-scatter-start"),
                                                  ("all-to-all", "all-to-all-start")]
    fields = ("kind", "group_mode", "group_size", "num_groups", "payload_bytes", "output_bytes", "ring_bytes")
    assert [[getattr(c, f) for f in fields] for c in ours] == [[getattr(c, f) for f in fields] for c in theirs]
    # f32[16,8] among 4: each device sends 3/4 of 512 bytes in both.
    assert [c.ring_bytes for c in ours] == [384.0, 384.0] and ours[0].output_bytes == 128

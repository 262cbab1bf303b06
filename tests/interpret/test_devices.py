"""The device grid: group modes, the spec's four strategies, iota groups, permute pairs.

Orders inside groups are checked against XLA:CPU in test_collectives.py (test_grid_*).
"""
from __future__ import annotations

import pytest

from hloscope.errors import InterpretError
from hloscope.ir import replica_groups as D
from hloscope.ir.replica_groups import CollectiveOpGroupMode as M
from hloscope.ir.replica_groups import ProcessId as P


@pytest.mark.parametrize(
    "has_channel_id, use_global_device_ids, expected",
    [  # XLA's collective_op_group_mode_test.cc table
        (False, None, M.CROSS_REPLICA),
        (False, False, M.CROSS_REPLICA),
        (True, None, M.CROSS_PARTITION),
        (True, False, M.CROSS_REPLICA_AND_PARTITION),
        (True, True, M.FLATTENED_ID),
    ],
)
def test_group_mode(has_channel_id, use_global_device_ids, expected):
    assert D.group_mode(has_channel_id, use_global_device_ids) is expected


def test_group_mode_invalid_combination():
    with pytest.raises(InterpretError, match="needs a channel_id"):
        D.group_mode(False, True)


def test_mode_spellings_match_xla():
    assert [m.value for m in M] == ["cross_replica", "cross_partition", "cross_replica_and_partition", "flattened_id"]


def test_process_id():
    assert P(0, 3) < P(1, 0) < P(1, 1)
    assert sorted([P(1, 0), P(0, 2), P(0, 1)]) == [P(0, 1), P(0, 2), P(1, 0)]
    assert P(1, 2).device_index(4) == 6 == D.device_index(P(1, 2), 4)
    assert [D.process_id(k, 4) for k in (0, 3, 4, 7)] == [P(0, 0), P(0, 3), P(1, 0), P(1, 3)]
    assert all(D.process_id(k, 3).device_index(3) == k for k in range(12))
    assert D.num_devices(2, 4) == 8
    with pytest.raises(AttributeError):
        P(0, 0).replica = 1  # type: ignore[misc]
    assert len({P(0, 1), P(0, 1)}) == 1


# The spec's examples ("Collective ops" in docs/spec.md).


def test_spec_cross_replica():
    assert D.cross_replica([[0, 1], [2, 3]], num_partitions=2) == [
        [P(0, 0), P(1, 0)], [P(0, 1), P(1, 1)], [P(2, 0), P(3, 0)], [P(2, 1), P(3, 1)]]


def test_spec_cross_partition():
    assert D.cross_partition([[0, 1]], num_replicas=4) == [
        [P(0, 0), P(0, 1)], [P(1, 0), P(1, 1)], [P(2, 0), P(2, 1)], [P(3, 0), P(3, 1)]]


def test_spec_cross_replica_and_partition():
    assert D.cross_replica_and_partition([[0, 1], [2, 3]], num_partitions=2, spec_order=True) == [
        [P(0, 0), P(1, 0), P(0, 1), P(1, 1)], [P(2, 0), P(3, 0), P(2, 1), P(3, 1)]]
    # Same members, XLA's (replica-major) rank order; see Note [Order inside a
    # cross_replica_and_partition group].
    assert D.cross_replica_and_partition([[0, 1], [2, 3]], num_partitions=2) == [
        [P(0, 0), P(0, 1), P(1, 0), P(1, 1)], [P(2, 0), P(2, 1), P(3, 0), P(3, 1)]]


def test_spec_flattened_ids():
    assert D.flattened_ids([[0, 1, 2, 3], [4, 5, 6, 7]], num_partitions=2) == [
        [P(0, 0), P(0, 1), P(1, 0), P(1, 1)], [P(2, 0), P(2, 1), P(3, 0), P(3, 1)]]


# participant_groups: mode dispatch, empty groups, validation.


def test_participant_groups_dispatch():
    assert D.participant_groups(M.CROSS_REPLICA, [[0, 1], [2, 3]], 4, 2) == D.cross_replica([[0, 1], [2, 3]], 2)
    assert D.participant_groups(M.CROSS_PARTITION, [[1, 0]], 4, 2) == D.cross_partition([[1, 0]], 4)
    assert D.participant_groups(M.CROSS_REPLICA_AND_PARTITION, [[0, 1], [2, 3]], 4, 2) == (
        D.cross_replica_and_partition([[0, 1], [2, 3]], 2))
    assert D.participant_groups(M.FLATTENED_ID, [[0, 5], [1, 4], [2, 7], [3, 6]], 2, 4)[0] == [P(0, 0), P(1, 1)]


def test_empty_replica_groups_mean_all():
    assert D.participant_groups(M.CROSS_REPLICA, [], 2, 2) == [[P(0, 0), P(1, 0)], [P(0, 1), P(1, 1)]]
    assert D.participant_groups(M.CROSS_PARTITION, [], 2, 2) == [[P(0, 0), P(0, 1)], [P(1, 0), P(1, 1)]]
    assert D.participant_groups(M.CROSS_REPLICA_AND_PARTITION, [], 2, 2) == [
        [P(0, 0), P(0, 1), P(1, 0), P(1, 1)]]
    with pytest.raises(InterpretError, match="cannot be empty"):
        D.participant_groups(M.FLATTENED_ID, [], 2, 2)


def test_participant_groups_validation():
    with pytest.raises(InterpretError, match="replica id 4 .* out of range"):
        D.participant_groups(M.CROSS_REPLICA, [[0, 4]], 4, 2)
    with pytest.raises(InterpretError, match="partition id 2 .* out of range"):
        D.participant_groups(M.CROSS_PARTITION, [[0, 2]], 4, 2)
    with pytest.raises(InterpretError, match="appears twice"):
        D.participant_groups(M.FLATTENED_ID, [[0, 1], [1, 2]], 1, 3)
    with pytest.raises(InterpretError, match=r"leave replica ids \[3\] out"):
        D.participant_groups(M.CROSS_REPLICA, [[0, 1], [2]], 4, 1)
    # collective-broadcast lets processes sit out
    assert D.participant_groups(M.CROSS_REPLICA, [[2, 1]], 4, 1, must_cover=False) == [[P(2, 0), P(1, 0)]]


def test_device_groups():
    groups = D.participant_groups(M.CROSS_REPLICA, [[0, 1]], 2, 4)
    assert D.device_groups(groups, 4) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    groups = D.participant_groups(M.CROSS_PARTITION, [[0, 1], [2, 3]], 2, 4)
    assert D.device_groups(groups, 4) == [[0, 1], [4, 5], [2, 3], [6, 7]]


# Iota replica groups (XLA's IotaReplicaGroupList, printed as [G,S]<=[dims]T(perm)).


def test_iota_plain():
    assert D.expand_iota_replica_groups([2, 4]) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert D.expand_iota_replica_groups([2, 4], [8]) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert D.expand_iota_replica_groups([1, 8], [8], [0]) == [list(range(8))]


def test_iota_transposed():
    # A 2x4 mesh, groups along the size-2 axis (what psum over "x" needs).
    assert D.expand_iota_replica_groups([4, 2], [2, 4], [1, 0]) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert D.expand_iota_replica_groups([2, 4], [4, 2], [1, 0]) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    # XLA's replica_group_test.cc: [2,10]<=[4,5]T(1,0)
    assert D.expand_iota_replica_groups([2, 10], [4, 5], [1, 0]) == [
        [0, 5, 10, 15, 1, 6, 11, 16, 2, 7], [12, 17, 3, 8, 13, 18, 4, 9, 14, 19]]
    # three reshape dims: [2,2,2] with T(2,1,0)
    assert D.expand_iota_replica_groups([4, 2], [2, 2, 2], [2, 1, 0]) == [[0, 4], [2, 6], [1, 5], [3, 7]]


def test_iota_errors():
    with pytest.raises(InterpretError, match="holds 6 ids"):
        D.expand_iota_replica_groups([2, 4], [2, 3])
    with pytest.raises(InterpretError, match="not a permutation"):
        D.expand_iota_replica_groups([2, 4], [2, 4], [0, 0])
    with pytest.raises(InterpretError, match="2-d"):
        D.expand_iota_replica_groups([8])


# group_of / rank_in_group


def test_group_of_and_rank():
    groups = [[3, 1], [0, 2]]
    assert D.group_of(1, groups) == [3, 1]
    assert D.rank_in_group(1, groups) == 1
    assert D.rank_in_group(0, groups) == 0
    pgroups = D.cross_replica([[1, 0]], 2)
    assert D.group_of(P(0, 1), pgroups) == [P(1, 1), P(0, 1)]
    assert D.rank_in_group(P(0, 1), pgroups) == 1
    with pytest.raises(InterpretError, match="no group"):
        D.group_of(5, groups)
    with pytest.raises(InterpretError, match="2 groups"):
        D.group_of(1, [[1], [1]])


# collective-permute pairs


def test_source_target_pairs_cross_replica():
    pairs = D.resolve_source_target_pairs([(0, 1), (1, 0)], False, num_replicas=2, num_partitions=2)
    assert pairs == [(P(0, 0), P(1, 0)), (P(1, 0), P(0, 0)), (P(0, 1), P(1, 1)), (P(1, 1), P(0, 1))]
    assert D.device_pairs(pairs, 2) == [(0, 2), (2, 0), (1, 3), (3, 1)]


def test_source_target_pairs_cross_partition():
    pairs = D.resolve_source_target_pairs([[0, 1], [1, 2], [2, 3], [3, 0]], True, num_replicas=2, num_partitions=4)
    assert D.device_pairs(pairs, 4) == [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4)]


def test_source_target_pairs_validation():
    with pytest.raises(InterpretError, match="out of range"):
        D.resolve_source_target_pairs([(0, 2)], False, 2, 4)  # only 2 replicas
    with pytest.raises(InterpretError, match="repeat target ids"):
        D.resolve_source_target_pairs([(0, 1), (2, 1)], True, 1, 4)
    with pytest.raises(InterpretError, match="repeat source ids"):
        D.resolve_source_target_pairs([(0, 1), (0, 2)], True, 1, 4)


def test_both_executors_sit_behind_one_interface() -> None:
    """Note [Executors]: run() picks an executor; each runs the same module to the same values."""
    import numpy as np

    import hloscope
    from hloscope.interpret.evaluator import RunOptions
    from hloscope.interpret.executor import LOCKSTEP, PER_DEVICE, Executor, choose_executor

    executors: list[Executor] = [PER_DEVICE, LOCKSTEP]

    text = """HloModule m, replica_count=4
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[3] parameter(0)
  r = f32[3] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=sum
  ROOT m = f32[3] multiply(r, p)
}"""
    module = hloscope.parse(text)
    assert choose_executor(module, RunOptions(), 4) is LOCKSTEP
    assert choose_executor(module, RunOptions(mode="per-device"), 4) is PER_DEVICE
    outs = []
    for executor in executors:
        args = [[np.full(3, k + 1, np.float32)] for k in range(4)]
        outs.append(executor.run(module, args, 4, 1, RunOptions()))
    for a, b in zip(*outs, strict=True):
        assert np.array_equal(a, b)
    assert [float(o[0]) for o in outs[0]] == [3, 6, 21, 28]

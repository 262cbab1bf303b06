"""The device grid: which processes take part in a collective, and in what order.

A multi-device HLO module runs on a grid of ``num_replicas x num_partitions`` processes. Each
process is a ``ProcessId(replica, partition)``; its *device index* (XLA's "flattened id") is
``replica * num_partitions + partition``, and every per-device list in ``interpret.collectives``
is indexed by it.

This module holds pure functions only: the four grouping strategies of the StableHLO spec
(``cross_replica``, ``cross_partition``, ``cross_replica_and_partition``, ``flattened_ids``),
the choice between them (``group_mode``, as XLA's ``GetCollectiveOpGroupMode`` decides it),
iota replica groups (``[2,4]<=[4,2]T(1,0)``) and collective-permute pairs. The evaluator's
rendezvous builds on them; nothing here knows about instructions.

Note [Order inside a cross_replica_and_partition group]
    The StableHLO spec lists a group partition-major (``for partition: for replica in group``),
    XLA lists it replica-major (``for replica in group: for partition``; see
    ``GetParticipatingDevices`` in ``xla/service/collective_ops_utils.cc``). The order is the
    rank order, so it decides where each device's block lands in an all-gather. We interpret
    HLO, so we follow XLA; tests/interpret/test_devices.py pins it against XLA:CPU on a 2x4
    grid, and ``cross_replica_and_partition(..., spec_order=True)`` gives the spec's order.
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from hloscope.errors import InterpretError

__all__ = [
    "ProcessId",
    "CollectiveOpGroupMode",
    "num_devices",
    "process_id",
    "device_index",
    "group_mode",
    "expand_iota_replica_groups",
    "cross_replica",
    "cross_partition",
    "cross_replica_and_partition",
    "flattened_ids",
    "participant_groups",
    "device_groups",
    "group_of",
    "rank_in_group",
    "resolve_source_target_pairs",
    "device_pairs",
]

T = TypeVar("T")


@dataclass(frozen=True, order=True, slots=True)
class ProcessId:
    """One process of the grid. Ordered by ``(replica, partition)``, the rendezvous order."""

    replica: int
    partition: int

    def device_index(self, num_partitions: int) -> int:
        """The flattened id ``replica * num_partitions + partition``."""
        return self.replica * num_partitions + self.partition

    def __repr__(self) -> str:
        return f"({self.replica}, {self.partition})"


def num_devices(num_replicas: int, num_partitions: int) -> int:
    """How many processes a ``num_replicas x num_partitions`` grid holds."""
    return num_replicas * num_partitions


def process_id(device: int, num_partitions: int) -> ProcessId:
    """The process at flattened device index ``device``."""
    return ProcessId(device // num_partitions, device % num_partitions)


def device_index(process: ProcessId, num_partitions: int) -> int:
    """The flattened device index of ``process``."""
    return process.replica * num_partitions + process.partition


class CollectiveOpGroupMode(enum.Enum):
    """How a collective's ``replica_groups`` name processes (XLA's ``CollectiveOpGroupMode``).

    The value is the spelling XLA's ``CollectiveOpGroupModeToString`` uses.
    """

    CROSS_REPLICA = "cross_replica"
    CROSS_PARTITION = "cross_partition"
    CROSS_REPLICA_AND_PARTITION = "cross_replica_and_partition"
    FLATTENED_ID = "flattened_id"


def group_mode(has_channel_id: bool, use_global_device_ids: bool | None) -> CollectiveOpGroupMode:
    """Choose the grouping strategy as XLA's ``GetCollectiveOpGroupMode`` does.

    ``use_global_device_ids`` is ``None`` for ops that have no such attribute (all-to-all,
    collective-permute, collective-broadcast), and ``True``/``False`` for all-reduce,
    all-gather and reduce-scatter, whose attribute defaults to false:

    ============== ====================== ===========================
    channel_id     use_global_device_ids  mode
    ============== ====================== ===========================
    absent         None or False          CROSS_REPLICA
    absent         True                   error
    present        None                   CROSS_PARTITION
    present        False                  CROSS_REPLICA_AND_PARTITION
    present        True                   FLATTENED_ID
    ============== ====================== ===========================
    """
    if not has_channel_id:
        if use_global_device_ids:
            raise InterpretError(
                "use_global_device_ids=true needs a channel_id: the combination of no channel_id "
                "and use_global_device_ids=true is invalid"
            )
        return CollectiveOpGroupMode.CROSS_REPLICA
    if use_global_device_ids is None:
        return CollectiveOpGroupMode.CROSS_PARTITION
    if use_global_device_ids:
        return CollectiveOpGroupMode.FLATTENED_ID
    return CollectiveOpGroupMode.CROSS_REPLICA_AND_PARTITION


def expand_iota_replica_groups(
    group_shape: Sequence[int],
    reshape_dims: Sequence[int] | None = None,
    transpose_perm: Sequence[int] | None = None,
) -> list[list[int]]:
    """Expand an iota replica-group list such as ``[2,4]<=[4,2]T(1,0)`` into explicit groups.

    ``group_shape`` is ``[num_groups, group_size]``; the ids are
    ``iota(prod(reshape_dims)).reshape(reshape_dims).transpose(transpose_perm)`` read row-major
    into that shape. ``reshape_dims`` defaults to ``[num_groups * group_size]`` and
    ``transpose_perm`` to the identity (XLA's ``IotaReplicaGroupList``).
    """
    if len(group_shape) != 2:
        raise InterpretError(f"iota replica groups need a 2-d shape [groups,size], got {list(group_shape)}")
    total = int(np.prod(group_shape))
    dims = list(reshape_dims) if reshape_dims is not None else [total]
    perm = list(transpose_perm) if transpose_perm is not None else list(range(len(dims)))
    if int(np.prod(dims)) != total:
        raise InterpretError(
            f"iota replica groups {list(group_shape)}<={dims}: the reshape holds "
            f"{int(np.prod(dims))} ids but the groups hold {total}"
        )
    if sorted(perm) != list(range(len(dims))):
        raise InterpretError(f"iota replica groups: T{tuple(perm)} is not a permutation of {len(dims)} dims")
    ids = np.arange(total, dtype=np.int64).reshape(dims).transpose(perm).reshape(group_shape)
    return ids.tolist()


# The four strategies, transcribed from the spec's Python ("Collective ops" in docs/spec.md).


def cross_replica(replica_groups: Sequence[Sequence[int]], num_partitions: int) -> list[list[ProcessId]]:
    """Each replica group, once per partition: only replicas talk to each other."""
    return [
        [ProcessId(replica, partition) for replica in group]
        for group in replica_groups
        for partition in range(num_partitions)
    ]


def cross_partition(partition_groups: Sequence[Sequence[int]], num_replicas: int) -> list[list[ProcessId]]:
    """Each partition group, once per replica: only partitions talk to each other."""
    return [
        [ProcessId(replica, partition) for partition in group]
        for group in partition_groups
        for replica in range(num_replicas)
    ]


def cross_replica_and_partition(
    replica_groups: Sequence[Sequence[int]], num_partitions: int, *, spec_order: bool = False
) -> list[list[ProcessId]]:
    """Each replica group together with every partition of its replicas.

    Ranks are replica-major as XLA orders them; ``spec_order=True`` gives the StableHLO spec's
    partition-major order instead. See Note [Order inside a cross_replica_and_partition group].
    """
    if spec_order:
        return [
            [ProcessId(r, p) for p in range(num_partitions) for r in group] for group in replica_groups
        ]
    return [[ProcessId(r, p) for r in group for p in range(num_partitions)] for group in replica_groups]


def flattened_ids(flattened_id_groups: Sequence[Sequence[int]], num_partitions: int) -> list[list[ProcessId]]:
    """Groups given directly as flattened ids ``replica * num_partitions + partition``."""
    return [[process_id(k, num_partitions) for k in group] for group in flattened_id_groups]


def participant_groups(
    mode: CollectiveOpGroupMode,
    replica_groups: Sequence[Sequence[int]],
    num_replicas: int,
    num_partitions: int,
    *,
    must_cover: bool = True,
) -> list[list[ProcessId]]:
    """The process groups of a collective, each in rank order, as XLA forms them.

    Empty ``replica_groups`` means one group of every id: every partition in CROSS_PARTITION
    mode, every replica otherwise; FLATTENED_ID mode does not allow it. Ids must be in range
    and appear at most once; with ``must_cover`` (all ops except collective-broadcast and
    collective-permute) every process must be in some group, as XLA's ``GetParticipatingIDs``
    requires.
    """
    if num_replicas < 1 or num_partitions < 1:
        raise InterpretError(f"a device grid needs at least 1x1 processes, got {num_replicas}x{num_partitions}")
    id_count = {
        CollectiveOpGroupMode.CROSS_REPLICA: num_replicas,
        CollectiveOpGroupMode.CROSS_PARTITION: num_partitions,
        CollectiveOpGroupMode.CROSS_REPLICA_AND_PARTITION: num_replicas,
        CollectiveOpGroupMode.FLATTENED_ID: num_replicas * num_partitions,
    }[mode]
    id_kind = {
        CollectiveOpGroupMode.CROSS_PARTITION: "partition",
        CollectiveOpGroupMode.FLATTENED_ID: "flattened device",
    }.get(mode, "replica")
    groups = [[int(i) for i in g] for g in replica_groups]
    if not groups:
        if mode is CollectiveOpGroupMode.FLATTENED_ID:
            raise InterpretError("replica_groups cannot be empty when use_global_device_ids=true")
        groups = [list(range(id_count))]
    seen: set[int] = set()
    for group in groups:
        for i in group:
            if not 0 <= i < id_count:
                raise InterpretError(
                    f"{id_kind} id {i} in replica_groups={_groups_text(groups)} is out of range "
                    f"[0, {id_count}) for a grid of {num_replicas} replicas x {num_partitions} partitions "
                    f"in {mode.value} mode"
                )
            if i in seen:
                raise InterpretError(f"{id_kind} id {i} appears twice in replica_groups={_groups_text(groups)}")
            seen.add(i)
    if must_cover and len(seen) != id_count:
        missing = sorted(set(range(id_count)) - seen)
        raise InterpretError(
            f"replica_groups={_groups_text(groups)} leave {id_kind} ids {missing} out; in {mode.value} "
            f"mode every one of the {id_count} ids must be in a group"
        )
    if mode is CollectiveOpGroupMode.CROSS_REPLICA:
        return cross_replica(groups, num_partitions)
    if mode is CollectiveOpGroupMode.CROSS_PARTITION:
        return cross_partition(groups, num_replicas)
    if mode is CollectiveOpGroupMode.CROSS_REPLICA_AND_PARTITION:
        return cross_replica_and_partition(groups, num_partitions)
    return flattened_ids(groups, num_partitions)


def device_groups(groups: Sequence[Sequence[ProcessId]], num_partitions: int) -> list[list[int]]:
    """``participant_groups`` output as flattened device indices (what collectives.py takes)."""
    return [[p.replica * num_partitions + p.partition for p in g] for g in groups]


def group_of(member: T, groups: Sequence[Sequence[T]]) -> Sequence[T]:
    """The one group that holds ``member`` (a ProcessId or a device index)."""
    found = [g for g in groups if member in g]
    if len(found) != 1:
        where = "no group" if not found else f"{len(found)} groups"
        raise InterpretError(f"{member!r} is in {where} of {_groups_text(groups)}")
    return found[0]


def rank_in_group(member: T, groups: Sequence[Sequence[T]]) -> int:
    """The position of ``member`` within its group: its rank in the collective."""
    return list(group_of(member, groups)).index(member)


def resolve_source_target_pairs(
    pairs: Sequence[tuple[int, int]] | Sequence[Sequence[int]],
    has_channel_id: bool,
    num_replicas: int,
    num_partitions: int,
) -> list[tuple[ProcessId, ProcessId]]:
    """Turn collective-permute ``source_target_pairs`` into (source, target) process pairs.

    Without a channel_id (CROSS_REPLICA) the ids are replica ids and the permutation runs
    within every partition; with one (CROSS_PARTITION) they are partition ids and it runs
    within every replica. Sources must be unique and so must targets. The result is ordered
    by grid position then by pair, as ``cross_replica``/``cross_partition`` order groups.
    """
    mode = group_mode(has_channel_id, None)
    id_count = num_partitions if has_channel_id else num_replicas
    norm = [(int(s), int(t)) for s, t in pairs]
    kind = "partition" if has_channel_id else "replica"
    for s, t in norm:
        if not (0 <= s < id_count and 0 <= t < id_count):
            raise InterpretError(
                f"source_target_pairs entry {{{s},{t}}} is out of range [0, {id_count}) of {kind} ids "
                f"({mode.value} mode, grid {num_replicas}x{num_partitions})"
            )
    for side, name in ((0, "source"), (1, "target")):
        ids = [p[side] for p in norm]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            raise InterpretError(f"source_target_pairs repeat {name} ids {dup}; each may appear once")
    if mode is CollectiveOpGroupMode.CROSS_REPLICA:
        return [
            (ProcessId(s, p), ProcessId(t, p)) for p in range(num_partitions) for s, t in norm
        ]
    return [(ProcessId(r, s), ProcessId(r, t)) for r in range(num_replicas) for s, t in norm]


def device_pairs(pairs: Sequence[tuple[ProcessId, ProcessId]], num_partitions: int) -> list[tuple[int, int]]:
    """``resolve_source_target_pairs`` output as flattened (source, target) device indices."""
    return [(s.device_index(num_partitions), t.device_index(num_partitions)) for s, t in pairs]


def _groups_text(groups: Sequence[Sequence[object]]) -> str:
    return "{" + ",".join("{" + ",".join(str(i) for i in g) + "}" for g in groups) + "}"

"""Rewriting XLA's canonical text of a module so that XLA:CPU compiles it and computes the same
values: optimized modules become unoptimized ones, GPU custom calls become standard HLO, and
partitioned modules become replicated ones. ``hloscope.xla.client.rewrite_for_xla_cpu`` and
``compile_hlo`` apply it; it needs no jax (it only reads and writes text).

Note [Recompiling optimized HLO]
    jaxlib 0.10 compiles only MLIR, so HLO text goes HloModule -> HloModuleProto ->
    XlaComputation -> StableHLO/MHLO -> compile. That import keeps logical shapes but drops the
    layouts of fusion parameters, and XLA:CPU then aborts the process (a CHECK failure, not an
    exception) on modules that were already optimized. So before compiling, a module that holds
    fusions, bitcasts or non-default layouts is rewritten into an equivalent unoptimized module
    (``recompilable_text``): every ``fusion`` becomes a ``call`` of its fused computation,
    layouts are dropped (they never change values, except through ``bitcast`` and custom calls),
    each ``bitcast`` becomes transpose-to-physical-order, reshape, transpose-to-logical-order,
    each ``copy-done`` of a ``copy-start`` becomes a ``copy`` (XLA:CPU has no asynchronous
    copies; TPU dumps prefetch with them), and custom calls keep their layouts because library
    calls (LAPACK) depend on them.
    The rewrite is a pass over hloscope's IR of XLA's own canonical printing of the module
    (``rewrite_module``, built on the editing API of Note [Editing the IR]), printed back by
    hloscope's printer in the style it was read in. It returns a ``Rewrite`` saying what it
    changed, which ``hloscope.xla.client.CompiledHlo.rewrite`` keeps so callers can tell people.

Note [GPU custom calls on XLA:CPU]
    GPU dumps call backend kernels XLA:CPU does not have: cuBLAS gemms (``__cublas$gemm``,
    ``__cublas$lt$matmul``) and jax's threefry kernel (``cuda_threefry2x32`` and its ffi
    names). The rewrite replaces each such custom call by standard HLO computing the same
    value (``hloscope.xla.gpu``): a gemm becomes ``dot`` with the backend_config's dimension
    numbers, in f32 for narrow floats, times ``alpha``, plus ``beta`` times the third operand,
    plus the epilogue's bias and relu, and a tuple result gets zero workspace buffers; threefry
    becomes its 20 rounds of u32 add/xor/shift/or, bit for bit. The rest of a GPU dump (fusion
    kinds, layouts, bitcasts) is what the rewrite above already handles. The gemm's JSON is
    read by the interpreter's reader (``backend_configs.gemm_spec``): one reader, so the
    interpreter and XLA:CPU run the same math.

Note [Partitioned modules as replicated modules]
    XLA:CPU compiles ``num_partitions > 1`` only through its SPMD partitioner, which would split
    an already partitioned module again (and rejects its ``partition-id``). Such a module with
    one replica is the same program as a module of ``n`` replicas: ``partition-id`` becomes
    ``replica-id``, ``sharding=`` attributes are dropped, and each collective keeps its groups
    of devices, rewritten by its mode (XLA's ``GetCollectiveOpGroupMode``, ``GROUPS_AS_REPLICAS``):
    cross_partition groups (``channel_id``, no ``use_global_device_ids`` attribute) lose the
    channel_id so the same ids name replicas; cross_replica_and_partition groups (``channel_id``
    with ``use_global_device_ids=false``, as in seed 001) hold the one replica with all its
    partitions, so they become one group of all ``n`` replicas; cross_replica groups (no
    channel_id) hold one device each; flattened ids stay (with one replica a global id is the
    partition number). The partition count comes from the caller, since GPU dumps (seed 001)
    do not print ``num_partitions``.

Note [Collectives XLA:CPU compiles]
    Two spellings XLA accepts in a module it partitioned itself fail when the module is
    compiled again, so the rewrite changes them into equivalent ones:
    - A variadic (tuple-shaped) all-reduce with a ``channel_id``. XLA's layout assignment
      constrains the layout of every cross-module all-reduce (one with a channel_id) by
      ``InferArrayLayout(instruction, {})`` (``LayoutAssignment::ConstrainChannelLayouts``,
      xla/service/layout_assignment.cc), which assumes an array: on a tuple it fails with
      "LogicalBuffer all-reduce.97[] does not have a layout". jax never hands XLA:CPU one,
      since XLA combines all-reduces into tuples only after layout assignment; the optimized
      module of any data-parallel step holds them. With one partition a channel_id changes
      nothing (cross_replica_and_partition over one partition is cross_replica, and a
      flattened id is the replica id), so every module compiled with one partition (partitions
      run as replicas included) has the channel_id and ``use_global_device_ids`` of its
      all-reduces, all-gathers and reduce-scatters dropped, groups unchanged.
    - Replica groups in the mesh form (``mesh['axis_0'=4,'axis_1'=2] {'axis_0'}``, with
      ``device_ids=``) or the iota form (``[4,2]<=[8]``): the MLIR import rejects mesh groups
      whose axes it cannot find ("Unknown axis axis_2"), so every collective gets its groups as
      explicit lists (``ReplicaGroups.expanded``), which every importer accepts.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from hloscope.errors import HloscopeError, XlaCompileError
from hloscope.ir import (
    ArrayShape,
    Computation,
    Instruction,
    Literal,
    Module,
    Opcode,
    ReplicaGroups,
)
from hloscope.ir.shape import without_layouts

__all__ = ["GROUPS_AS_REPLICAS", "Rewrite", "collectives_need_rewrite", "is_optimized", "needs_rewrite",
           "recompilable_text", "rewrite_module"]


def _error(message: str) -> HloscopeError:
    return XlaCompileError(message)


_TARGET = re.compile(r'custom_call_target="([^"]*)"')
_OPTIMIZED = re.compile(r" (fusion|bitcast|copy-start)\(")


def is_optimized(canonical: str) -> bool:
    """True when ``canonical`` (XLA's printing) is an optimized module: scheduled, or holding
    fusions, bitcasts or asynchronous copies (so already partitioned, if it ever was sharded).
    A scan of the text."""
    header = canonical.split("\n", 1)[0]
    return "is_scheduled=true" in header or bool(_OPTIMIZED.search(canonical))


def needs_rewrite(canonical: str) -> bool:
    """True when XLA:CPU cannot compile ``canonical`` (XLA's printing) as it is: an optimized
    module (``is_optimized``) or one calling GPU kernels or Python callbacks. A scan of the
    text, so that modules XLA:CPU compiles as they are are never parsed twice."""
    from hloscope.xla.gpu import expandable_target

    # Only already-optimized modules trip the MLIR import (fusion parameters lose layouts);
    # non-default layouts alone survive it as result_layout attributes.
    return is_optimized(canonical) or any(expandable_target(t) for t in _TARGET.findall(canonical))


_CHANNEL_ALL_REDUCE = re.compile(r" (?:all-reduce|all-gather|reduce-scatter)(?:-start)?\([^\n]*channel_id=")
_IMPLICIT_GROUPS = re.compile(r"replica_groups=(?:mesh\[|\[)")


def collectives_need_rewrite(canonical: str, *, single_partition: bool) -> bool:
    """True when ``canonical`` holds collectives XLA:CPU cannot compile again as they are
    (Note [Collectives XLA:CPU compiles]): replica groups not written as lists, or, when the
    module will run with one partition, all-reduces (gathers, scatters) with a channel_id."""
    return bool(_IMPLICIT_GROUPS.search(canonical)
                or (single_partition and _CHANNEL_ALL_REDUCE.search(canonical)))


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """What ``recompilable_text`` changed (Note [Recompiling optimized HLO]): the rewritten
    text, how many fusions became calls and bitcasts became transpose/reshape/transpose,
    per custom-call target how many calls became standard HLO (Note [GPU custom calls on
    XLA:CPU]), and whether partitions became replicas."""

    text: str
    fusions: int = 0
    bitcasts: int = 0
    custom_calls: dict[str, int] = dataclasses.field(default_factory=dict)
    partitions_as_replicas: int = 0
    copies: int = 0
    collectives: int = 0  # Note [Collectives XLA:CPU compiles]

    def describe(self) -> str:
        """One line for people, e.g. "8 fusions as calls, 3 bitcasts as transpose/reshape,
        layouts dropped, 8 __cublas$gemm calls as dot"."""
        from hloscope.xla.gpu import EXPANSIONS

        parts = [f"{self.fusions} fusions as calls"] if self.fusions else []
        parts += [f"{self.bitcasts} bitcasts as transpose/reshape"] if self.bitcasts else []
        parts += [f"{self.copies} copy-start/copy-done pairs as copies"] if self.copies else []
        parts.append("layouts dropped")
        parts += [f"{n} {t} calls {EXPANSIONS[t].how}" for t, n in sorted(self.custom_calls.items())]
        if self.partitions_as_replicas:
            parts.append(f"{self.partitions_as_replicas} partitions run as replicas")
        if self.collectives:
            parts.append(f"{self.collectives} collectives with their groups as lists and no channel_id "
                         "where one partition runs")
        return ", ".join(parts)


# --- bitcasts by value -------------------------------------------------------------------------


def _bitcast_by_value(comp: Computation, inst: Instruction) -> None:
    """Replace ``bitcast`` ``inst`` by instructions computing it by value: [bitcast-convert,]
    transpose to the operand's physical order, reshape, transpose to the result's logical
    order (Note [Recompiling optimized HLO]); the layouts are read before they are dropped."""
    operand = inst.operands[0]
    src, dst = operand.shape, inst.shape
    if not (isinstance(src, ArrayShape) and isinstance(dst, ArrayShape)) or src.dynamic or dst.dynamic:
        raise _error(f"cannot rewrite bitcast %{inst.name} from {src} to {dst}")

    def minor_to_major(shape: ArrayShape) -> list[int]:
        if shape.layout is not None and shape.layout.minor_to_major:
            return list(shape.layout.minor_to_major)
        return list(range(shape.rank - 1, -1, -1))

    major_i = list(reversed(minor_to_major(src)))  # physical (major-to-minor) order
    major_o = list(reversed(minor_to_major(dst)))
    to = dst.element_type
    cur = operand
    if src.element_type != to:  # same width only; bitcast-convert does it by value
        cur = comp.add_instruction(Instruction(f"{inst.name}.hloscope_bc", Opcode.BITCAST_CONVERT,
                                               ArrayShape(to, src.dimensions), [cur]), before=inst)
    t0 = comp.add_instruction(Instruction(
        f"{inst.name}.hloscope_t0", Opcode.TRANSPOSE,
        ArrayShape(to, tuple(src.dimensions[d] for d in major_i)), [cur],
        {"dimensions": tuple(major_i)}), before=inst)
    r = comp.add_instruction(Instruction(
        f"{inst.name}.hloscope_r", Opcode.RESHAPE,
        ArrayShape(to, tuple(dst.dimensions[d] for d in major_o)), [t0]), before=inst)
    inverse = tuple(major_o.index(d) for d in range(dst.rank))
    # The replacement keeps the declared shape (layout included) until layouts are dropped, so
    # a bitcast of this value still reads the layout it was written with.
    comp.replace_instruction(inst, Instruction(inst.name, Opcode.TRANSPOSE, dst, [r],
                                               {"dimensions": inverse}))


# --- partitions as replicas --------------------------------------------------------------------

_COLLECTIVES = frozenset((
    Opcode.ALL_REDUCE, Opcode.ALL_GATHER, Opcode.REDUCE_SCATTER, Opcode.ALL_TO_ALL,
    Opcode.COLLECTIVE_PERMUTE, Opcode.ALL_REDUCE_START, Opcode.ALL_GATHER_START,
    Opcode.COLLECTIVE_PERMUTE_START, Opcode.COLLECTIVE_BROADCAST, Opcode.RAGGED_ALL_TO_ALL))

# Collectives whose use_global_device_ids attribute exists (false unless printed); the others
# have none, so that with a channel_id they name partitions (XLA's GetCollectiveOpGroupMode).
_HAVE_GLOBAL_IDS = frozenset((Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START, Opcode.ALL_GATHER,
                              Opcode.ALL_GATHER_START, Opcode.REDUCE_SCATTER))

Groups = tuple[str, object]  # (attribute name, value)


def _all_partitions(opcode: Opcode, n: int) -> Groups:
    """Groups of replicas meaning "the one replica with all its partitions"."""
    return "replica_groups", ReplicaGroups(groups=(tuple(range(n)),))


def _each_partition(opcode: Opcode, n: int) -> Groups:
    """Groups (or pairs) of replicas meaning "every device alone" (cross_replica, one replica)."""
    if opcode in (Opcode.COLLECTIVE_PERMUTE, Opcode.COLLECTIVE_PERMUTE_START):
        return "source_target_pairs", tuple((k, k) for k in range(n))
    return "replica_groups", ReplicaGroups(groups=tuple((k,) for k in range(n)))


GROUPS_AS_REPLICAS: dict[str, tuple[bool, Callable[[Opcode, int], Groups] | None]] = {
    "cross_replica": (False, _each_partition),
    "cross_partition": (True, None),
    "cross_replica_and_partition": (True, _all_partitions),
    # With one replica a flattened id is the partition's number, now the replica's: the same
    # groups without channel_id (Note [Collectives XLA:CPU compiles]).
    "flattened_id": (True, None),
}
"""Note [Partitioned modules as replicated modules]: per group mode, (drop channel_id and
use_global_device_ids, the groups the rewritten collective carries, or None to keep its own)."""


def _group_mode(inst: Instruction) -> str:
    if "channel_id" not in inst.attrs:
        return "cross_replica"
    if inst.opcode not in _HAVE_GLOBAL_IDS:
        return "cross_partition"
    return "flattened_id" if inst.attrs.get("use_global_device_ids") is True else "cross_replica_and_partition"


def _partition_to_replica(comp: Computation, inst: Instruction, n: int) -> Instruction:
    """One instruction of Note [Partitioned modules as replicated modules] (``n`` partitions);
    returns the instruction now in its place."""
    if inst.opcode is Opcode.PARTITION_ID:
        return comp.replace_instruction(
            inst, Instruction(inst.name, Opcode.REPLICA_ID, inst.shape, [], dict(inst.attrs)))
    if inst.opcode is Opcode.REPLICA_ID:
        return comp.replace_instruction(inst, Instruction(
            inst.name, Opcode.CONSTANT, inst.shape, [], {"literal": Literal("0"), **inst.attrs}))
    if inst.opcode in _COLLECTIVES:
        drop_channel, groups = GROUPS_AS_REPLICAS[_group_mode(inst)]
        if drop_channel:
            del inst.attrs["channel_id"]
            inst.attrs.pop("use_global_device_ids", None)
        if groups is not None:
            for key in ("replica_groups", "source_target_pairs"):
                inst.attrs.pop(key, None)
            key, value = groups(inst.opcode, n)
            inst.attrs[key] = value
    return inst


def _explicit_groups(inst: Instruction) -> bool:
    """Replica groups of ``inst`` as explicit lists (Note [Collectives XLA:CPU compiles]);
    whether they were not."""
    groups = inst.attrs.get("replica_groups")
    if not isinstance(groups, ReplicaGroups) or groups.groups is not None:
        return False
    try:
        expanded = groups.expanded(inst.attrs.get("device_ids"))
    except ValueError as e:
        raise _error(f"cannot rewrite the replica groups of %{inst.name} for XLA:CPU: {e}") from None
    inst.attrs["replica_groups"] = ReplicaGroups(groups=tuple(tuple(g) for g in expanded))
    inst.attrs.pop("device_ids", None)
    return True


def _single_partition_collective(inst: Instruction) -> bool:
    """Drop the channel_id, which means nothing with one partition (Note [Collectives XLA:CPU
    compiles]): cross_replica_and_partition and flattened-id groups become cross_replica ones
    naming the same devices. Whether there was one."""
    if inst.opcode not in _HAVE_GLOBAL_IDS or "channel_id" not in inst.attrs:
        return False
    del inst.attrs["channel_id"]
    inst.attrs.pop("use_global_device_ids", None)
    return True


# --- the pass -------------------------------------------------------------------------------------


def _fusion_as_call(comp: Computation, inst: Instruction) -> None:
    attrs = {("to_apply" if k == "calls" else k): v for k, v in inst.attrs.items()
             if k not in ("kind", "output_to_operand_aliasing")}
    comp.replace_instruction(inst, Instruction(inst.name, Opcode.CALL, inst.shape,
                                               list(inst.operands), attrs))


def _expand_custom_call(comp: Computation, inst: Instruction) -> str:
    from hloscope.xla.gpu import expand_custom_call

    try:
        new = expand_custom_call(inst)
    except HloscopeError as e:
        raise _error(f"cannot rewrite %{inst.name} for XLA:CPU: {e}") from None
    for helper in new[:-1]:
        comp.add_instruction(helper, before=inst)
    final = new[-1]
    final.shape = inst.shape  # the declared layout, read by bitcasts until layouts are dropped
    comp.replace_instruction(inst, final)
    return inst.custom_call_target or ""


def _copy_done_as_copy(comp: Computation, done: Instruction) -> bool:
    """Replace ``copy-done(copy-start(x))`` by ``copy(x)`` (the start goes once unused): XLA:CPU
    has no asynchronous copies (TPU dumps prefetch with them), and the value is ``x``'s."""
    start = done.operands[0]
    if start.opcode is not Opcode.COPY_START:
        return False
    comp.replace_instruction(done, Instruction(done.name, Opcode.COPY, done.shape, [start.operands[0]]))
    if not start.users and start is not comp.root:
        comp.remove_instruction(start)
    return True


@dataclasses.dataclass
class _Counts:
    fusions: int = 0
    bitcasts: int = 0
    copies: int = 0
    collectives: int = 0
    custom_calls: dict[str, int] = dataclasses.field(default_factory=dict)


def rewrite_module(module: Module, *, partitions_as_replicas: int = 0,
                   single_partition: bool = False, keep_shardings: bool = False) -> Rewrite:
    """Rewrite ``module`` in place into an equivalent module XLA:CPU compiles (Note
    [Recompiling optimized HLO], Note [GPU custom calls on XLA:CPU], Note [Collectives XLA:CPU
    compiles], and with ``partitions_as_replicas`` = n > 0 Note [Partitioned modules as
    replicated modules]); ``single_partition`` says the module runs with one partition (implied
    by n > 0); ``keep_shardings`` that XLA's partitioner will split it (a global program), so
    its ``sharding=`` attributes stay. Returns what changed, with the module's text."""
    from hloscope.xla.gpu import expandable_target

    for attr in ("entry_computation_layout", "input_output_alias", "buffer_donor", "is_scheduled"):
        module.attrs.pop(attr, None)
    n = partitions_as_replicas
    single_partition = single_partition or n > 0
    if n:
        module.attrs.pop("replica_count", None)
        module.attrs.pop("num_partitions", None)
        module.attrs["replica_count"] = n
    counts = _Counts()
    keep_layouts: set[Instruction] = set()
    for comp in module.computations:
        for inst in list(comp.instructions):
            # The module is already partitioned: shardings describe global values that no
            # longer exist, and would make the SPMD partitioner (required for
            # num_partitions > 1) re-split.
            if not keep_shardings:
                inst.attrs.pop("sharding", None)
            if n:
                inst = _partition_to_replica(comp, inst, n)
            if inst.opcode in _COLLECTIVES:
                changed = _explicit_groups(inst)
                if single_partition and not n:  # (partitions as replicas drop them above)
                    changed |= _single_partition_collective(inst)
                counts.collectives += changed
            op = inst.opcode
            if op is Opcode.CUSTOM_CALL:
                if expandable_target(inst.custom_call_target or ""):
                    target = _expand_custom_call(comp, inst)
                    counts.custom_calls[target] = counts.custom_calls.get(target, 0) + 1
                else:
                    keep_layouts.add(inst)  # library calls depend on their layouts
            elif op is Opcode.BITCAST:
                counts.bitcasts += 1
                _bitcast_by_value(comp, inst)
            elif op is Opcode.FUSION:
                counts.fusions += 1
                _fusion_as_call(comp, inst)
            elif op is Opcode.COPY_DONE and _copy_done_as_copy(comp, inst):
                counts.copies += 1
    # Layouts go last: bitcasts above read their operands' layouts.
    for comp in module.computations:
        for inst in comp.instructions:
            if inst not in keep_layouts:
                inst.shape = without_layouts(inst.shape)
    return Rewrite(module.to_text(), counts.fusions, counts.bitcasts, counts.custom_calls,
                   partitions_as_replicas, counts.copies, counts.collectives)


def recompilable_text(canonical: str, *, partitions_as_replicas: int = 0,
                      single_partition: bool = False, keep_shardings: bool = False) -> Rewrite:
    """Rewrite XLA's canonical text of an optimized module into an equivalent unoptimized one.

    See Note [Recompiling optimized HLO]. ``canonical`` must be XLA's printing without metadata.
    ``partitions_as_replicas`` is the module's partition count when its partitions are to run
    as replicas (Note [Partitioned modules as replicated modules]), else 0; ``single_partition``
    that it runs with one partition (Note [Collectives XLA:CPU compiles]); ``keep_shardings``
    that XLA's partitioner will split it.
    """
    from hloscope.text import parse_module

    module = parse_module(canonical, "<XLA's canonical text>")
    return rewrite_module(module, partitions_as_replicas=partitions_as_replicas,
                          single_partition=single_partition, keep_shardings=keep_shardings)

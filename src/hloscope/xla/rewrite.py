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
    and custom-call lines keep their layouts because library calls (LAPACK) depend on them.
    The rewrite works line by line on XLA's own canonical printing of the module (one
    instruction a line, known spelling), never on user text. It returns a ``Rewrite`` saying
    what it changed, which ``hloscope.xla.client.CompiledHlo.rewrite`` keeps so callers can tell people.

Note [GPU custom calls on XLA:CPU]
    GPU dumps call backend kernels XLA:CPU does not have: cuBLAS gemms (``__cublas$gemm``,
    ``__cublas$lt$matmul``) and jax's threefry kernel (``cuda_threefry2x32`` and its ffi
    names). The rewrite replaces each such custom call by standard HLO computing the same
    value (``hloscope.xla.gpu``): a gemm becomes ``dot`` with the backend_config's dimension
    numbers, in f32 for narrow floats, times ``alpha``, plus ``beta`` times the third operand,
    plus the epilogue's bias and relu, and a tuple result gets zero workspace buffers; threefry
    becomes its 20 rounds of u32 add/xor/shift/or, bit for bit. The rest of a GPU dump (fusion
    kinds, layouts, bitcasts) is what the rewrite above already handles. These lines are
    written from hloscope's IR of the same canonical text (parsed only when such a call is
    present), because the gemm's JSON must be read by the interpreter's reader
    (``custom_calls.gemm_spec``): one reader, so the interpreter and XLA:CPU run the same
    math. The IR is used for reading only; the output stays the line rewrite's text, so the
    other rules of the rewrite need no second implementation on the IR.

Note [Partitioned modules as replicated modules]
    XLA:CPU compiles ``num_partitions > 1`` only through its SPMD partitioner, which would split
    an already partitioned module again (and rejects its ``partition-id``). Such a module with
    one replica is the same program as a module of ``n`` replicas: ``partition-id`` becomes
    ``replica-id``, ``sharding=`` attributes are dropped, and each collective keeps its groups
    of devices, rewritten by its mode (XLA's ``GetCollectiveOpGroupMode``, ``_GROUPS_AS_REPLICAS``):
    cross_partition groups (``channel_id``, no ``use_global_device_ids`` attribute) lose the
    channel_id so the same ids name replicas; cross_replica_and_partition groups (``channel_id``
    with ``use_global_device_ids=false``, as in seed 001) hold the one replica with all its
    partitions, so they become one group of all ``n`` replicas; cross_replica groups (no
    channel_id) hold one device each; flattened ids stay (with one replica a global id is the
    partition number). The partition count comes from the caller, since GPU dumps (seed 001)
    do not print ``num_partitions``.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from hloscope.errors import HloscopeError, XlaCompileError

__all__ = ["Rewrite", "needs_rewrite", "recompilable_text"]


def _error(message: str) -> HloscopeError:
    return XlaCompileError(message)


_DTYPE_ALT = r"(?:pred|token|s\d+|u\d+|f\d+(?:e\d+m\d+\w*)?|bf16|c64|c128)"
_LAYOUT = re.compile(r"(" + _DTYPE_ALT + r"\[[0-9,<=?]*\])\{[^{}]*\}")
_DEF = re.compile(r"^(\s*)(ROOT )?%(\S+) = (.*?) ([a-z][a-z0-9-]*)\((.*)$")
_ARRAY_SHAPE = re.compile(r"^(" + _DTYPE_ALT + r")\[([0-9,]*)\](?:\{([0-9,]*)[^}]*\})?$")
_OPERAND = re.compile(r"%([^\s,()]+)")
_TARGET = re.compile(r'custom_call_target="([^"]*)"')


def _gpu_targets(canonical: str) -> set[str]:
    """The custom-call targets of ``canonical`` that Note [GPU custom calls on XLA:CPU] expands."""
    from hloscope.xla.gpu import expandable_target

    return {t for t in _TARGET.findall(canonical) if expandable_target(t)}


def needs_rewrite(canonical: str) -> bool:
    """True when XLA:CPU cannot compile ``canonical`` (XLA's printing) as it is: an optimized
    module (scheduled, or holding fusions or bitcasts) or one calling GPU kernels."""
    # Only already-optimized modules trip the MLIR import (fusion parameters lose layouts);
    # non-default layouts alone survive it as result_layout attributes.
    header = canonical.split("\n", 1)[0]
    return ("is_scheduled=true" in header or bool(re.search(r" (fusion|bitcast)\(", canonical))
            or bool(_gpu_targets(canonical)))


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

    def describe(self) -> str:
        """One line for people, e.g. "8 fusions as calls, 3 bitcasts as transpose/reshape,
        layouts dropped, 8 __cublas$gemm calls as dot"."""
        from hloscope.xla.gpu import EXPANSIONS

        parts = [f"{self.fusions} fusions as calls"] if self.fusions else []
        parts += [f"{self.bitcasts} bitcasts as transpose/reshape"] if self.bitcasts else []
        parts.append("layouts dropped")
        parts += [f"{n} {t} calls {EXPANSIONS[t].how}" for t, n in sorted(self.custom_calls.items())]
        if self.partitions_as_replicas:
            parts.append(f"{self.partitions_as_replicas} partitions run as replicas")
        return ", ".join(parts)


def _brace_end(text: str, i: int) -> int:
    """Index just past the ``{...}`` group that opens at ``text[i]`` (braces balanced)."""
    depth = 0
    while i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
        if depth == 0:
            break
    return i


def _drop_attr(line: str, attr: str) -> str:
    """``line`` without ``, attr={...}`` (balanced braces)."""
    start = line.find(", " + attr + "={")
    if start < 0:
        return line
    return line[:start] + line[_brace_end(line, start + len(attr) + 3):]


def _drop_header_attr(header: str, attr: str) -> str:
    start = header.find(attr + "={")
    if start < 0:
        return header
    end = _brace_end(header, start + len(attr) + 1)
    return (header[:start].rstrip(", ") + header[end:]).replace(", ,", ",")


def _bitcast_lines(indent: str, root: str, name: str, out: str, operand: str, in_shape: str) -> list[str]:
    """Lines computing ``bitcast`` of ``operand`` (shape ``in_shape``) to ``out`` by value."""
    mi, mo = _ARRAY_SHAPE.match(in_shape), _ARRAY_SHAPE.match(out)
    if mi is None or mo is None:
        raise _error(f"cannot rewrite bitcast %{name} from {in_shape} to {out}")

    def dims_layout(m: re.Match[str]) -> tuple[str, list[int], list[int]]:
        dims = [int(d) for d in m.group(2).split(",") if d]
        layout = [int(d) for d in (m.group(3) or "").split(",") if d] or list(
            range(len(dims) - 1, -1, -1)
        )
        return m.group(1), dims, layout

    ti, di, li = dims_layout(mi)
    to, do, lo = dims_layout(mo)
    fmt = lambda t, ds: f"{t}[{','.join(map(str, ds))}]"  # noqa: E731
    major_i = list(reversed(li))  # physical (major-to-minor) order of the operand's dimensions
    major_o = list(reversed(lo))
    lines = []
    cur = f"%{operand}"
    if ti != to:  # element type changes only with same width; bitcast-convert does it by value
        cur_name = f"{name}.hloscope_bc"
        lines.append(f"{indent}%{cur_name} = {fmt(to, di)} bitcast-convert({cur})")
        cur = f"%{cur_name}"
    phys_i = [di[d] for d in major_i]
    lines.append(f"{indent}%{name}.hloscope_t0 = {fmt(to, phys_i)} transpose({cur}), "
                 f"dimensions={{{','.join(map(str, major_i))}}}")
    phys_o = [do[d] for d in major_o]
    lines.append(f"{indent}%{name}.hloscope_r = {fmt(to, phys_o)} reshape(%{name}.hloscope_t0)")
    inverse = [major_o.index(d) for d in range(len(do))]
    lines.append(f"{indent}{root}%{name} = {fmt(to, do)} transpose(%{name}.hloscope_r), "
                 f"dimensions={{{','.join(map(str, inverse))}}}")
    return lines


_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                "collective-permute", "all-reduce-start", "all-gather-start",
                "collective-permute-start", "collective-broadcast", "ragged-all-to-all")


# Collectives whose use_global_device_ids attribute exists (false unless printed); the others
# have none, so that with a channel_id they name partitions (XLA's GetCollectiveOpGroupMode).
_HAVE_GLOBAL_IDS = frozenset(("all-reduce", "all-reduce-start", "all-gather", "all-gather-start",
                              "reduce-scatter"))
_GROUPS_ATTR = re.compile(r", (replica_groups|source_target_pairs)=(\{(?:\{[0-9,]*\},?)*\}|"
                          r"\[[0-9,]*\]<=\[[0-9,]*\](?:T\([0-9,]*\))?)")
_CHANNEL_ID = re.compile(r", channel_id=\d+")


def _groups_text(groups: list[list[int]]) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"


def _all_partitions(opcode: str, n: int) -> str:
    """Groups of replicas meaning "the one replica with all its partitions"."""
    return f"replica_groups={_groups_text([list(range(n))])}"


def _each_partition(opcode: str, n: int) -> str:
    """Groups (or pairs) of replicas meaning "every device alone" (cross_replica, one replica)."""
    if opcode.startswith("collective-permute"):
        return f"source_target_pairs={_groups_text([[k, k] for k in range(n)])}"
    return f"replica_groups={_groups_text([[k] for k in range(n)])}"


# Note [Partitioned modules as replicated modules]: per group mode, (drop channel_id, the
# groups attribute the rewritten line carries, or None to keep the line's own).
_GROUPS_AS_REPLICAS: dict[str, tuple[bool, Callable[[str, int], str] | None]] = {
    "cross_replica": (False, _each_partition),
    "cross_partition": (True, None),
    "cross_replica_and_partition": (True, _all_partitions),
    "flattened_id": (False, None),
}


def _group_mode(line: str, opcode: str) -> str:
    if not _CHANNEL_ID.search(line):
        return "cross_replica"
    if opcode not in _HAVE_GLOBAL_IDS:
        return "cross_partition"
    return "flattened_id" if "use_global_device_ids=true" in line else "cross_replica_and_partition"


def _partition_to_replica(line: str, opcode: str, n: int) -> tuple[str, str]:
    """One line of Note [Partitioned modules as replicated modules] (``n`` partitions)."""
    if opcode == "partition-id":
        return line.replace(" partition-id()", " replica-id()"), "replica-id"
    if opcode == "replica-id":
        return line.replace(" replica-id()", " constant(0)"), "constant"
    if opcode not in _COLLECTIVES:
        return line, opcode
    drop_channel, groups = _GROUPS_AS_REPLICAS[_group_mode(line, opcode)]
    if drop_channel:
        line = _CHANNEL_ID.sub("", line)
    if groups is not None:
        line = _GROUPS_ATTR.sub("", line) + ", " + groups(opcode, n)
    return line, opcode


def _strip_layouts(line: str) -> str:
    return _LAYOUT.sub(r"\1", line)


def _custom_calls_to_expand(canonical: str) -> dict[str, Any]:
    """hloscope's IR of each custom call in ``canonical`` whose target has a standard-HLO form,
    by instruction name (XLA's names are unique in a module); empty when there is none, so
    modules without GPU custom calls are not parsed twice."""
    if not _gpu_targets(canonical):
        return {}
    from hloscope.text import parse_module
    from hloscope.xla.gpu import expandable_target

    module = parse_module(canonical, "<XLA's canonical text>")
    return {inst.name: inst for comp in module.computations for inst in comp.instructions
            if inst.opcode.text == "custom-call" and expandable_target(inst.custom_call_target or "")}


def recompilable_text(canonical: str, *, partitions_as_replicas: int = 0) -> Rewrite:
    """Rewrite XLA's canonical text of an optimized module into an equivalent unoptimized one.

    See Note [Recompiling optimized HLO]. ``canonical`` must be XLA's printing without metadata.
    ``partitions_as_replicas`` is the module's partition count when its partitions are to run
    as replicas (Note [Partitioned modules as replicated modules]), else 0.
    """
    from hloscope.xla.gpu import expand_custom_call

    expand = _custom_calls_to_expand(canonical)
    counts = {"fusion": 0, "bitcast": 0}
    custom_calls: dict[str, int] = {}
    lines = canonical.split("\n")
    header = lines[0]
    for attr in ("entry_computation_layout", "input_output_alias", "buffer_donor"):
        header = _drop_header_attr(header, attr)
    header = header.replace(", is_scheduled=true", "")
    n = partitions_as_replicas
    if n:
        header = re.sub(r", (replica_count|num_partitions)=\d+", "", header)
        header += f", replica_count={n}"
    out = [_LAYOUT.sub(r"\1", header)]
    shapes: dict[str, str] = {}
    for line in lines[1:]:
        m = _DEF.match(line)
        if m is None:
            # Computation headers `%name (p: f32[2]{0}) -> f32[2]{0} {` and closing braces.
            if line.endswith("{"):
                shapes.clear()
            out.append(_strip_layouts(line))
            continue
        # The module is already partitioned: shardings describe global values that no longer
        # exist, and would make the SPMD partitioner (required for num_partitions > 1) re-split.
        line = _drop_attr(line, "sharding")
        m = _DEF.match(line)
        assert m is not None
        indent, root, name, shape, opcode, rest = m.groups()
        root = root or ""
        shapes[name] = shape
        if partitions_as_replicas:
            line, opcode = _partition_to_replica(line, opcode, n)
            m = _DEF.match(line)
            assert m is not None
            indent, root, name, shape, opcode, rest = m.groups()
            root = root or ""
        if opcode == "custom-call" and name in expand:
            # Note [GPU custom calls on XLA:CPU]
            inst = expand[name]
            try:
                out.extend(expand_custom_call(inst, indent=indent, root=bool(root)))
            except HloscopeError as e:
                raise _error(f"cannot rewrite %{name} for XLA:CPU: {e}") from None
            target = inst.custom_call_target
            custom_calls[target] = custom_calls.get(target, 0) + 1
            continue
        if opcode == "custom-call":
            out.append(line)  # library calls depend on their layouts
            continue
        counts[opcode] = counts.get(opcode, 0) + 1
        if opcode == "bitcast":
            operand = _OPERAND.match(rest)
            if operand is None or operand.group(1) not in shapes:
                raise _error(f"cannot rewrite line: {line.strip()}")
            out.extend(_bitcast_lines(indent, root, name, shape, operand.group(1),
                                      shapes[operand.group(1)]))
            continue
        if opcode == "fusion":
            rest = re.sub(r", kind=k\w+", "", rest)
            rest = re.sub(r", output_to_operand_aliasing=\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}", "", rest)
            rest = rest.replace(", calls=", ", to_apply=")
            line = f"{indent}{root}%{name} = {shape} call({rest}"
        out.append(_strip_layouts(line))
    return Rewrite("\n".join(out), counts["fusion"], counts["bitcast"], custom_calls,
                   partitions_as_replicas)

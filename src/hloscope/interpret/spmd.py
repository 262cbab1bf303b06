"""Global programs with manual regions: run a sharded, not yet partitioned module as one program.

Note [Global programs]
    Before SPMD partitioning, a sharded module is one global program: its sharding annotations
    change no values. The exceptions are manual regions (shard_map), whose code is per device:
    Shardy writes them as a ``call`` of ``xla.sdy.manual_computation_body*`` between custom
    calls ``xla.sdy.GlobalToLocalShape`` / ``xla.sdy.LocalToGlobalShape`` (shardings in the
    ``xla.sdy.in_shardings`` / ``out_shardings`` frontend attributes, over the module's
    ``xla.sdy.meshes``); GSPMD writes code between ``SPMDFullToShardShape`` (its operand is a
    ``Sharding`` custom call holding the region's sharding) and ``SPMDShardToFullShape`` (whose
    own ``sharding=`` is the result's). Running globally means: the entering custom call cuts
    each operand into the devices' shards (a ``Sharded`` value), a call whose operands are
    ``Sharded`` runs its computation on every device (collectives inside meet through the
    rendezvous of run.py), get-tuple-element maps over the devices, and the leaving custom call
    puts the shards back together. Entry parameters given per device are assembled by their
    ``sharding=``, and the root is cut back into per-device results the same way.

Every sharding here becomes one thing: for each device, the slice of the global array it holds
(``layout(...) -> list[tuple[slice, ...]]``); replicated copies simply hold the same slices.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from hloscope.errors import InterpretError, UnsupportedCustomCallError
from hloscope.interpret.dtype_bits import contiguous
from hloscope.ir import Computation, Family, Instruction, Module, Opcode, TupleShape
from hloscope.ir.attributes import ShardingSpec
from hloscope.ir.sharding import parse_sharding

__all__ = ["Sharded", "parse_sharding", "is_global_program", "region_calls", "hlo_layout", "assemble", "cut", "sdy_layouts",
           "ENTER_TARGETS", "LEAVE_TARGETS", "nested_region_marker"]

ENTER_TARGETS = ("xla.sdy.GlobalToLocalShape", "SPMDFullToShardShape")
LEAVE_TARGETS = ("xla.sdy.LocalToGlobalShape", "SPMDShardToFullShape")

Layout = list[tuple[slice, ...]]  # per device: the global slice it holds


class Sharded:
    """Per-device values of a manual region (device index order)."""

    __slots__ = ("values",)

    def __init__(self, values: list[Any]) -> None:
        self.values = values

    def __getitem__(self, index: int) -> Sharded:
        """Element ``index`` of a tuple value on every device (what get-tuple-element reads,
        also where the evaluator unpacks a tuple straight into its readers)."""
        return Sharded([v[index] for v in self.values])

    def __repr__(self) -> str:
        return f"<Sharded over {len(self.values)} devices>"


# Note [Recognising a global program]
#     A module is a global program (not partitioned yet) when it holds manual-region markers,
#     or when it carries sharding annotations (``sharding=`` or Shardy's ``xla.sdy.sharding``)
#     and nothing XLA's SPMD partitioner leaves behind: no collective and no partition-id or
#     replica-id (outside manual regions those only come from partitioning, or from a
#     per-device pmap program), and it is neither scheduled nor fused (XLA's optimized modules,
#     already per device, may keep their parameters' ``sharding=``). This is what jax's
#     lowering of a sharded jit hands XLA (the models tier's "pre" modules: num_partitions is
#     not even printed); seed 001 (partition-id, all-gather) and every optimized module are
#     per-device programs. A replicated-only annotation still means one global program, whose
#     devices all hold the same values. On one device the question does not arise.
_PARTITIONER_OUTPUT = frozenset((Opcode.PARTITION_ID, Opcode.REPLICA_ID, Opcode.FUSION))


def is_global_program(module: Module) -> bool:
    """True when ``module`` is a sharded program not partitioned yet (Note [Recognising a
    global program]): it holds manual-region markers, or sharding annotations and no
    partitioner output (collectives, partition-id, fusions) and no schedule."""
    markers = ENTER_TARGETS + LEAVE_TARGETS
    annotated = False
    partitioned = module.is_scheduled
    for inst in module.instructions():
        opcode = inst.opcode
        if opcode is Opcode.CUSTOM_CALL and inst.custom_call_target in markers:
            return True
        if opcode.family is Family.COLLECTIVE or opcode in _PARTITIONER_OUTPUT:
            partitioned = True
        elif not annotated:
            fa = inst.attrs.get("frontend_attributes")
            annotated = "sharding" in inst.attrs or (fa is not None and "xla.sdy.sharding" in fa.map)
    return annotated and not partitioned


def region_calls(module: Module) -> frozenset[int]:
    """The ids of the ``call`` instructions that are manual-region bodies: those whose value
    reaches a region's leaving custom call (through ``Sharding`` annotations and tuple
    elements). A region that takes no operands (``shard_map(f, in_specs=())``) has no entering
    custom call to mark it, yet its code is per device all the same (``axis_index`` differs)."""
    found: set[int] = set()
    for inst in module.instructions():
        if inst.opcode is not Opcode.CUSTOM_CALL or inst.custom_call_target not in LEAVE_TARGETS:
            continue
        stack = list(inst.operands)
        while stack:
            src = stack.pop()
            if src.opcode is Opcode.CALL:
                found.add(id(src))
            elif src.opcode in (Opcode.GET_TUPLE_ELEMENT, Opcode.TUPLE) or (
                    src.opcode is Opcode.CUSTOM_CALL and src.custom_call_target == "Sharding"):
                stack.extend(src.operands)
    return frozenset(found)


# --- shardings as per-device slices --------------------------------------------------------------


def _tile_layout(dims: Sequence[int], tile_counts: Sequence[int], coords_of: list[tuple[int, ...]]) -> Layout:
    out = []
    for coords in coords_of:
        sl = []
        for n, t, c in zip(dims, tile_counts, coords, strict=True):
            size = -(-n // t)  # XLA pads uneven tiles at the end
            sl.append(slice(min(c * size, n), min((c + 1) * size, n)))
        out.append(tuple(sl))
    return out


def hlo_layout(spec: ShardingSpec, dims: Sequence[int], num_devices: int) -> Layout:
    """Each device's slice under an HloSharding (replicated, maximal, tiled with
    last_tile_dim_replicate / last_tile_dims)."""
    rank = len(dims)
    if spec.kind in ("replicated", "maximal", "manual", "unknown") or not spec.tile_assignment_dims:
        return [tuple(slice(0, n) for n in dims)] * num_devices
    if spec.kind != "tiled":
        raise InterpretError(f"cannot cut a value by a {spec.kind} sharding")
    tiles = np.asarray(spec.tile_assignment_devices).reshape(spec.tile_assignment_dims)
    coords: list[tuple[int, ...] | None] = [None] * num_devices
    for idx in np.ndindex(*tiles.shape):
        d = int(tiles[idx])
        if d < num_devices and coords[d] is None:
            coords[d] = tuple(idx[:rank])
    placed = [c for c in coords if c is not None]
    if len(placed) != len(coords):
        raise InterpretError(f"sharding {spec} does not place every one of {num_devices} devices")
    return _tile_layout(dims, spec.tile_assignment_dims[:rank], placed)


_MESH = re.compile(r'(\w+)\s*=\s*#sdy\.mesh<\[([^\]]*)\](?:\s*,\s*device_ids=\[([^\]]*)\])?>')
_AXIS = re.compile(r'"([^"]+)"\s*=\s*(\d+)')
_VALUE = re.compile(r'<@(\w+)\s*,\s*\[(.*?)\](?:\s*,\s*replicated=\{[^}]*\})?>')


def _meshes(module: Module) -> dict[str, tuple[list[str], list[int], np.ndarray]]:
    fa = module.attrs.get("frontend_attributes")
    # The mesh table is an unquoted {...} value, so read the raw text rather than the key map.
    text = (fa.text if fa is not None else "").replace('\\"', '"')
    out = {}
    for name, axes, ids in _MESH.findall(text):
        found = _AXIS.findall(axes)
        names, sizes = [a for a, _ in found], [int(s) for _, s in found]
        n = int(np.prod(sizes)) if sizes else 1
        devices = np.asarray([int(x) for x in ids.split(",")] if ids.strip() else range(n)).reshape(sizes or ())
        out[name] = (names, sizes, devices)
    return out


def sdy_layouts(module: Module, text: str, shapes: Sequence[Sequence[int]], num_devices: int) -> list[Layout]:
    """Per-value layouts of ``#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>, ...]>``: dimension i
    is split over its listed mesh axes, major to minor; other axes replicate."""
    meshes = _meshes(module)
    text = text.replace('\\"', '"')
    values = _VALUE.findall(text)
    if len(values) != len(shapes):
        raise InterpretError(f"{len(values)} shardings in {text!r} for {len(shapes)} values")
    layouts = []
    for (mesh_name, dims_text), dims in zip(values, shapes, strict=True):
        if mesh_name not in meshes:
            raise InterpretError(f"sharding names mesh @{mesh_name}, not in xla.sdy.meshes")
        names, sizes, devices = meshes[mesh_name]
        per_dim = re.findall(r"\{([^}]*)\}", dims_text)
        counts, axes_of = [], []
        for d in per_dim:
            axes = re.findall(r'"([^"]+)"', d)
            if any(":" in a for a in axes) or ":" in d:
                raise UnsupportedCustomCallError(f"sub-axis shardings ({d}) are not supported")
            axes_of.append([names.index(a) for a in axes])
            counts.append(int(np.prod([sizes[names.index(a)] for a in axes])) if axes else 1)
        coords: list[tuple[int, ...] | None] = [None] * num_devices
        for mesh_idx in np.ndindex(*sizes):
            d = int(devices[mesh_idx])
            c = []
            for axes in axes_of:
                k = 0
                for a in axes:
                    k = k * sizes[a] + mesh_idx[a]
                c.append(k)
            if d < num_devices:
                coords[d] = tuple(c)
        placed = [c for c in coords if c is not None]
        if len(placed) != len(coords):
            raise InterpretError(f"mesh @{mesh_name} does not place every one of {num_devices} devices")
        layouts.append(_tile_layout(dims, counts, placed))
    return layouts


def cut(x: np.ndarray, layout: Layout) -> list[np.ndarray]:
    """Each device's shard of the global array ``x`` (a scalar's shard is 0-d, as jax's is)."""
    return [contiguous(np.asarray(x[s])) for s in layout]


def assemble(shards: Sequence[np.ndarray], layout: Layout, dims: Sequence[int], dtype: Any) -> np.ndarray:
    """The global array whose device shards are ``shards`` (replicas write equal data)."""
    out = np.zeros(tuple(dims), dtype)
    for x, s in zip(shards, layout, strict=True):
        out[s] = x
    return out


# --- the region custom calls --------------------------------------------------------------------


def _leaf_shapes(inst: Instruction) -> list[Any]:
    shape = inst.shape
    return list(shape.elements) if isinstance(shape, TupleShape) else [shape]


def enter_region(module: Module, inst: Instruction, operands: list[Any], num_devices: int) -> Any:
    """GlobalToLocalShape / SPMDFullToShardShape: each operand cut into per-device shards."""
    ops = [np.asarray(o) for o in operands]
    if inst.custom_call_target == "SPMDFullToShardShape":
        src = inst.operands[0]
        sharding = src.attrs.get("sharding")
        if sharding is None:
            raise InterpretError("SPMDFullToShardShape's operand carries no sharding= to cut by")
        layouts = [hlo_layout(sharding.parsed(), ops[0].shape, num_devices)]
    else:
        fa = inst.attrs.get("frontend_attributes")
        text = fa.map.get("xla.sdy.in_shardings", "") if fa is not None else ""
        layouts = sdy_layouts(module, text, [o.shape for o in ops], num_devices)
    shards = [cut(o, lay) for o, lay in zip(ops, layouts, strict=True)]
    if inst.shape.is_tuple:
        return Sharded([tuple(s[d] for s in shards) for d in range(num_devices)])
    return Sharded(shards[0])


def leave_region(module: Module, inst: Instruction, operands: list[Any], num_devices: int) -> Any:
    """LocalToGlobalShape / SPMDShardToFullShape: per-device shards put back together."""
    if not all(isinstance(o, Sharded) for o in operands):
        raise InterpretError(f"{inst.custom_call_target} expects values of a manual region")
    shapes = _leaf_shapes(inst)
    if inst.custom_call_target == "SPMDShardToFullShape":
        sharding = inst.attrs.get("sharding")
        spec = sharding.parsed() if sharding is not None else ShardingSpec("replicated")
        layouts = [hlo_layout(spec, shapes[0].dimensions, num_devices)]
    else:
        fa = inst.attrs.get("frontend_attributes")
        text = fa.map.get("xla.sdy.out_shardings", "") if fa is not None else ""
        layouts = sdy_layouts(module, text, [s.dimensions for s in shapes], num_devices)
    full = [assemble(o.values, lay, s.dimensions, s.dtype)
            for o, lay, s in zip(operands, layouts, shapes, strict=True)]
    return tuple(full) if inst.shape.is_tuple else full[0]


# Note [Nested manual regions]
#     A shard_map manual over some mesh axes (axis_names={"model"}) leaves the others automatic;
#     jax then writes axis_index of a manual axis, and code manual over the remaining axes, as a
#     region nested in the outer one. Inside the outer region every device already runs its own
#     code (control_flow._run_region), so a nested region whose shardings split nothing (an
#     operand-less axis_index, replicated values) is an ordinary call between identities. One
#     that splits values further would need each device's piece along the new axes and an
#     exchange to join them: we stop there rather than compute something else.


def nested_region_marker(inst: Instruction, operands: list[Any]) -> Any:
    """A manual-region custom call met inside a region: the identity when its shardings cut
    nothing (Note [Nested manual regions]), else an error that says so."""
    fa = inst.attrs.get("frontend_attributes")
    texts = [fa.map.get(k, "") for k in ("xla.sdy.in_shardings", "xla.sdy.out_shardings")] if fa is not None else []
    sharding = inst.attrs.get("sharding")
    splits = any(re.search(r'\{[^}]*"[^"]+"', t.replace('\\"', '"')) for t in texts)
    if inst.custom_call_target == "SPMDFullToShardShape" and inst.operands:
        src = inst.operands[0].attrs.get("sharding")
        splits |= src is not None and src.parsed().kind not in ("replicated", "manual", "maximal")
    if sharding is not None and inst.custom_call_target == "SPMDShardToFullShape":
        splits |= sharding.parsed().kind not in ("replicated", "manual", "maximal")
    if splits:
        raise UnsupportedCustomCallError(
            f"{inst.custom_call_target} {inst.name} opens or closes a manual region nested in another "
            "that splits values over further mesh axes; hloscope runs such regions only when their "
            "values are not split (Note [Nested manual regions]); run the partitioned module instead")
    return operands[0] if len(operands) == 1 else tuple(operands)


# Note [Manual regions written inline]
#     GSPMD's shard_map lowering calls the region's body (``call(SPMDFullToShardShape(...))``),
#     but XLA's CallInliner (the first passes of its SPMD pipeline, dumped with
#     ``--xla_dump_hlo_pass_re``) and older lowerings leave the body's instructions in the
#     calling computation, between the custom calls:
#
#         s = f32[16,2] custom-call(x), custom_call_target="Sharding", sharding={devices=[8,1]<=[8]}
#         f = f32[2,2] custom-call(s), custom_call_target="SPMDFullToShardShape"    <- enters
#         m = f32[2,2] multiply(f, two)                  \
#         r = f32[2,2] all-reduce(m), channel_id=1, ...  |  per device: the region
#         a = f32[2,2] add(r, f)                         /
#         l = f32[16,2] custom-call(a), custom_call_target="SPMDShardToFullShape"   <- leaves
#
#     ``outline_inline_regions`` turns such a module back into the called form, which the
#     evaluator runs (Note [Global programs]): the region is what the entering markers' values
#     reach before the leaving markers, plus what only the region reads and computes from no
#     parameter (constants, partition-id: per-device code); values from outside it become the
#     call's operands (every device reads them whole, as a called body's non-sharded
#     arguments); the leaving markers read the call's results. A region reading nothing from
#     an entering marker (``shard_map(f, in_specs=())``) is what the leaving markers compute
#     from no parameter. The module given is left alone: the pass works on a copy.

_WIRING = frozenset((Opcode.CALL, Opcode.GET_TUPLE_ELEMENT, Opcode.TUPLE))


def _is_marker(inst: Instruction, targets: tuple[str, ...]) -> bool:
    return inst.opcode is Opcode.CUSTOM_CALL and inst.custom_call_target in targets


def _inline_regions(comp: Any) -> list[list[Instruction]]:
    """The inline manual regions of ``comp`` (Note [Manual regions written inline]), each as
    its instructions in computation order; called regions (only a call and its wiring between
    the markers) are not listed."""
    order = {id(inst): k for k, inst in enumerate(comp.instructions)}
    label: dict[int, int] = {}  # instruction id -> region number (union-find roots below)
    parent: list[int] = []

    def find(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for enter in comp.instructions:
        if not _is_marker(enter, ENTER_TARGETS):
            continue
        k = len(parent)
        parent.append(k)
        stack = list(comp.users(enter))
        while stack:
            inst = stack.pop()
            if _is_marker(inst, LEAVE_TARGETS):
                continue
            seen = label.get(id(inst))
            if seen is not None:
                parent[find(seen)] = find(k)
                continue
            label[id(inst)] = k
            stack.extend(comp.users(inst))
    # Regions reading no entering marker: what a leaving marker computes from no parameter.
    closed: dict[int, bool] = {}

    def from_no_parameter(inst: Instruction) -> bool:
        if id(inst) not in closed:
            closed[id(inst)] = False  # cycles cannot occur; this only guards the recursion
            closed[id(inst)] = inst.opcode is not Opcode.PARAMETER and not _is_marker(
                inst, ENTER_TARGETS + LEAVE_TARGETS) and all(from_no_parameter(o) for o in inst.operands)
        return closed[id(inst)]

    for leave in comp.instructions:
        if not _is_marker(leave, LEAVE_TARGETS) or any(id(o) in label for o in leave.operands):
            continue
        if not all(from_no_parameter(o) for o in leave.operands):
            continue
        k = len(parent)
        parent.append(k)
        stack = list(leave.operands)
        while stack:
            inst = stack.pop()
            if id(inst) not in label:
                label[id(inst)] = k
                stack.extend(inst.operands)
    # Pull in what only a region reads and that is computed from no parameter.
    for inst in reversed(comp.instructions):
        if id(inst) in label or inst is comp.root or not from_no_parameter(inst):
            continue
        users = comp.users(inst)
        regions = {find(label[id(u)]) for u in users if id(u) in label}
        if users and len(regions) == 1 and all(id(u) in label for u in users):
            label[id(inst)] = regions.pop()
    groups: dict[int, list[Instruction]] = {}
    for inst in comp.instructions:
        if id(inst) in label:
            groups.setdefault(find(label[id(inst)]), []).append(inst)
    regions = []
    for members in groups.values():
        if all(i.opcode in _WIRING or (i.opcode is Opcode.CUSTOM_CALL and i.custom_call_target == "Sharding")
               for i in members) and any(i.opcode is Opcode.CALL for i in members):
            continue  # the called form
        regions.append(sorted(members, key=lambda i: order[id(i)]))
    return regions


def _outline(module: Module, comp: Any, members: list[Instruction], number: int) -> None:
    """Move the inline region ``members`` of ``comp`` into a new computation called in their
    place (Note [Manual regions written inline])."""
    inside = {id(i) for i in members}
    outside_users = [(u, i) for i in members for u in comp.users(i) if id(u) not in inside]
    if any(not _is_marker(u, LEAVE_TARGETS) for u, _ in outside_users) or comp.root in members:
        raise UnsupportedCustomCallError(
            f"the manual region written inline in {comp.name} hands a value to "
            f"{next((u.name for u, _ in outside_users if not _is_marker(u, LEAVE_TARGETS)), comp.root.name)} "
            "without a leaving SPMDShardToFullShape; hloscope cannot tell where the region ends")
    outputs = list(dict.fromkeys(i for _, i in outside_users))
    operands = list(dict.fromkeys(o for i in members for o in i.operands if id(o) not in inside))
    base = f"{comp.name}.hloscope_region{number}"
    params = [Instruction(f"{base}.arg{k}", Opcode.PARAMETER, o.shape, [], {"parameter_number": k})
              for k, o in enumerate(operands)]
    shape = TupleShape(tuple(o.shape for o in outputs))
    call = comp.add_instruction(Instruction(f"{base}.call", Opcode.CALL, shape, list(operands)))
    results = [comp.add_instruction(Instruction(f"{base}.result{k}", Opcode.GET_TUPLE_ELEMENT, o.shape, [call],
                                         {"index": k})) for k, o in enumerate(outputs)]
    for user, value in outside_users:
        for j, o in enumerate(user.operands):
            if o is value:
                comp.replace_operand(user, j, results[outputs.index(value)])
    first = comp.instructions.index(members[0])
    for inst in reversed(members):
        comp.remove_instruction(inst)
    by_operand = {id(o): p for o, p in zip(operands, params, strict=True)}
    for inst in members:
        inst.operands = [by_operand.get(id(o), o) for o in inst.operands]
    root = Instruction(f"{base}.outputs", Opcode.TUPLE, shape, list(outputs))
    body = module.add_computation(Computation(base, [*params, *members, root], root), before=comp)
    call.attrs["to_apply"] = body
    # The call goes where the region began; operands defined later move up before it.
    rest = comp.instructions[:-1 - len(results)]
    rest[first:first] = [call, *results]
    comp.instructions[:] = _topological(rest)


def _topological(instructions: list[Instruction]) -> list[Instruction]:
    """``instructions`` reordered so that operands come first, otherwise in the given order."""
    placed: set[int] = set()
    present = {id(i) for i in instructions}
    out: list[Instruction] = []

    def place(inst: Instruction) -> None:
        stack = [(inst, False)]
        while stack:
            cur, ready = stack.pop()
            if id(cur) in placed:
                continue
            if ready:
                placed.add(id(cur))
                out.append(cur)
                continue
            stack.append((cur, True))
            stack.extend((o, False) for o in reversed(cur.operands) if id(o) in present and id(o) not in placed)

    for inst in instructions:
        place(inst)
    return out


def has_inline_regions(module: Module) -> bool:
    """Whether some computation of ``module`` holds a manual region written inline."""
    return any(_is_marker(i, ENTER_TARGETS + LEAVE_TARGETS) for i in module.instructions()) and any(
        _inline_regions(comp) for comp in module.computations)


def outline_inline_regions(module: Module) -> Module:
    """``module`` with every manual region written inline turned into a called computation
    (Note [Manual regions written inline]): a new module, or ``module`` itself when it has
    none."""
    from hloscope.text import parse_module

    if not has_inline_regions(module):
        return module
    copy = parse_module(module.to_text(), f"<{module.name} with its manual regions outlined>")
    number = 0
    for comp in list(copy.computations):
        for members in _inline_regions(comp):
            _outline(copy, comp, members, number)
            number += 1
    return copy

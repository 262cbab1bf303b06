"""Whose program a module is: the global program of a sharded computation, one device's program
after SPMD partitioning, or a program for one device only; and over how many devices.

Note [Global and per-device programs]
    jax lowers a sharded function to one global program (the module "before optimizations"):
    its arrays have their global shapes and its sharding annotations change no values. XLA's
    SPMD partitioner turns it into the program each device runs (the module "after"): the
    same parameters with their shards' shapes, collectives where the shards meet. Comparing
    the two as they are compares a whole with one part of it (GPT data-parallel over 8
    devices: 367.7 MFLOP against 48.3 MFLOP, "-86.9%"), so the diff says which is which and
    compares per device (report/diff.py).

    What marks a global program, in the order the checks run:
    - Shardy's markers: a mesh of more than one device in the module's ``xla.sdy.meshes``
      frontend attribute, ``xla.sdy.*`` custom calls (``FuncResultSharding``,
      ``GlobalToLocalShape``, ...). Shardy's partitioner removes them (a single-device
      program keeps its ``empty_mesh``).
    - GSPMD's markers: ``Sharding`` custom calls and the manual-region custom calls
      ``SPMDFullToShardShape`` / ``SPMDShardToFullShape``, which the partitioner removes.
    What marks one device's program: a header whose ``num_partitions`` or ``replica_count``
    is above one (XLA prints them after partitioning), else collectives or ``partition-id``
    (outside manual regions, which carry markers, only the partitioner adds them; XLA's GPU
    benchmark dumps have no partition count in their header). A module with tiled shardings
    and none of these is taken as global, and one without any sharding as a single-device
    program; these two guesses give way to the comparison of two modules of one program
    (``compare_views``): an entry parameter whose dimensions are the other side's times its
    sharding's tile counts is global on this side and a shard on the other.

    This is a minimal predicate kept with the diff until the interpreter's own (issue 25,
    interpret/spmd.py) lands; the two should become one.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from hloscope.ir.instruction import Instruction
from hloscope.ir.module import Module
from hloscope.ir.opcode import Family, Opcode
from hloscope.ir.shape import ArrayShape

__all__ = ["ProgramView", "program_view", "compare_views"]

ViewKind = Literal["global", "per-device", "single-device"]

_GSPMD_MARKERS = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"})
_MESH_AXIS = re.compile(r'"[^"]*"\s*=\s*(\d+)')


@dataclass(frozen=True, slots=True)
class ProgramView:
    """``kind``: "global" (the whole computation, not partitioned yet), "per-device" (one
    device's program after partitioning) or "single-device"; ``devices``: how many devices the
    computation runs on (1 for a single-device program); ``why``: what showed it."""

    kind: ViewKind
    devices: int
    why: str

    def describe(self) -> str:
        """One phrase for tables: "the global program over 8 devices", ..."""
        if self.kind == "global":
            return f"the global program over {self.devices} devices"
        if self.kind == "per-device":
            return f"one device's program (of {self.devices})"
        return "a single-device program"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "devices": self.devices, "why": self.why}


def _header_devices(module: Module) -> int:
    return (module.num_partitions or 1) * (module.replica_count or 1)


def _mesh_devices(module: Module) -> int | None:
    """The device count of the module's Shardy mesh (``xla.sdy.meshes``), the largest if several."""
    fa = module.attrs.get("frontend_attributes")
    text = str(fa) if fa is not None else ""
    if "xla.sdy.meshes" not in text:
        return None
    counts = [math.prod(int(n) for n in _MESH_AXIS.findall(mesh))
              for mesh in re.findall(r"#sdy\.mesh<\[([^\]]*)\]", text)]
    return max(counts, default=None) or None


def _tiles(inst: Instruction) -> tuple[int, ...] | None:
    """The tile counts per dimension of an array instruction's tiled sharding, else None."""
    sharding = inst.sharding
    if sharding is None or not isinstance(inst.shape, ArrayShape):
        return None
    try:
        spec = sharding.parsed()
    except ValueError:
        return None
    rank = len(inst.shape.dimensions)
    if spec.kind != "tiled" or len(spec.tile_assignment_dims) < rank:
        return None
    return tuple(spec.tile_assignment_dims[:rank])


def _sharded_devices(module: Module) -> int:
    """The most devices any entry parameter's or the root's tiled sharding names."""
    best = 1
    for inst in [*module.entry.parameters, module.entry.root]:
        sharding = inst.sharding
        if sharding is None:
            continue
        try:
            spec = sharding.parsed()
        except ValueError:
            continue
        for s in (spec.tuple_elements or (spec,)):
            if s.kind == "tiled" and s.tile_assignment_dims:
                best = max(best, math.prod(s.tile_assignment_dims))
    return best


def program_view(module: Module) -> ProgramView:
    """Whose program ``module`` is (Note [Global and per-device programs])."""
    return _view(module)[0]


def _view(module: Module) -> tuple[ProgramView, bool]:
    """The view, and whether a marker or the header showed it (False: a guess)."""
    mesh = _mesh_devices(module)
    markers: set[str] = set()
    communicates = False
    for inst in module.instructions():
        communicates = communicates or inst.opcode.family is Family.COLLECTIVE or inst.opcode is Opcode.PARTITION_ID
        if inst.opcode is Opcode.CUSTOM_CALL:
            target = inst.custom_call_target or ""
            if target.startswith("xla.sdy.") or target in _GSPMD_MARKERS:
                markers.add(target)
    devices = max(mesh or 1, _sharded_devices(module), _header_devices(module))
    if (mesh or 1) > 1 or markers:
        shown = ", ".join(sorted(markers)[:3]) or "xla.sdy.meshes"
        return ProgramView("global", devices, f"not partitioned yet: it holds {shown}"), True
    if _header_devices(module) > 1:
        return ProgramView("per-device", _header_devices(module),
                           f"partitioned: num_partitions={module.num_partitions or 1}, "
                           f"replica_count={module.replica_count or 1}"), True
    if devices > 1 and communicates:
        return ProgramView("per-device", devices, "partitioned: sharded, with collectives"), True
    if devices > 1:
        return ProgramView("global", devices, "sharded, with no collectives and no partition count"), False
    return ProgramView("single-device", 1, "no sharding and one device"), False


def compare_views(before: Module, after: Module) -> tuple[ProgramView, ProgramView]:
    """Both modules' views, settled against each other: where their entry parameters differ
    exactly by their shardings' tile counts, the larger side is the global program."""
    (va, certain_a), (vb, certain_b) = _view(before), _view(after)
    if certain_a and certain_b:
        return va, vb
    pa, pb = before.entry.parameters, after.entry.parameters
    if len(pa) != len(pb):
        return va, vb
    a_global = b_global = 0
    for x, y in zip(pa, pb):
        tiles = _tiles(x) or _tiles(y)
        if tiles is None or not isinstance(x.shape, ArrayShape) or not isinstance(y.shape, ArrayShape):
            continue
        dx, dy = x.shape.dimensions, y.shape.dimensions
        if len(dx) != len(dy) or dx == dy:
            continue
        if all(-(-g // t) == s for g, s, t in zip(dx, dy, tiles)):
            a_global += 1
        elif all(-(-g // t) == s for g, s, t in zip(dy, dx, tiles)):
            b_global += 1
    if a_global and not b_global and (va.kind, vb.kind) != ("global", "per-device"):
        if (va.kind != "global" and certain_a) or (vb.kind != "per-device" and certain_b):
            return va, vb
        n = max(va.devices, vb.devices)
        why = f"{a_global} entry parameters are the other module's shards times their tile counts"
        return ProgramView("global", n, why), ProgramView("per-device", n, why)
    if b_global and not a_global and (va.kind, vb.kind) != ("per-device", "global"):
        if (va.kind != "per-device" and certain_a) or (vb.kind != "global" and certain_b):
            return va, vb
        n = max(va.devices, vb.devices)
        why = f"{b_global} entry parameters are the other module's shards times their tile counts"
        return ProgramView("per-device", n, why), ProgramView("global", n, why)
    return va, vb

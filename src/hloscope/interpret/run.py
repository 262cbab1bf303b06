"""``run``: evaluate a module on one device or on a grid of replicas x partitions.

Devices run through an executor (executor.py, Note [Executors]): per device through the
driver (driver.py, Note [Cooperative devices]), with the collective handlers of
collective_handlers.py, or all at once in lockstep (lockstep.py).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from hloscope.errors import InputError, InterpretError
from hloscope.interpret import float_env, spmd
from hloscope.interpret.allocator import kept_freed_memory
from hloscope.interpret.evaluator import (
    EvalContext,
    RunOptions,
    evaluate,
    run_to_completion,
)
from hloscope.interpret.executor import Executor, choose_executor
from hloscope.interpret.inputs import RandomInputs
from hloscope.interpret.values import Value, array_shapes, coerce_input
from hloscope.ir import ArrayShape, Family, Instruction, Module, Opcode, TupleShape
from hloscope.ir import replica_groups as devices
from hloscope.ir.collective_shapes import implied_replicas

__all__ = ["run", "default_grid", "infer_grid", "is_global_run", "shards_of", "input_shards",
           "global_arguments"]

Operands = list[Any]


# --- device grid and inputs -------------------------------------------------------------------------


def default_grid(module: Module) -> tuple[int, int]:
    """(replicas, partitions) from the module header; see ``infer_grid`` when it names none."""
    r, p, _ = infer_grid(module)
    return r, p


def infer_grid(module: Module) -> tuple[int, int, str | None]:
    """(replicas, partitions, note): the module header's counts (a count it leaves out is 1, as
    XLA prints only counts other than 1), or where it names neither (old pmap and GPU dumps,
    hand-written modules), what its collectives imply, with a note saying so.

    Ids in replica_groups/source_target_pairs count in the kind XLA's collective-op group mode
    gives them (``replica_groups.group_mode``): replica ids without a channel_id and with a
    channel_id but no use_global_device_ids (cross-replica-and-partition), partition ids for
    channel ops without that attribute (all-to-all, collective-permute), flattened device ids
    with use_global_device_ids=true (counted as partitions, jax's SPMD convention). Without
    ids, gathers and scatters over implicit groups imply the replica count their shapes hold
    (``collective_shapes.implied_replicas``)."""
    replicas, partitions = module.replica_count, module.num_partitions
    if replicas is not None or partitions is not None:
        # XLA prints each count only when it is not 1: a header naming one means 1 of the other.
        return replicas or 1, partitions or 1, None
    most = {"replica": 0, "partition": 0}
    # Only what runs: computations the entry never calls do not ask for devices.
    for inst in (i for c in module.reachable_computations() for i in c.instructions):
        if inst.opcode.family is not Opcode.ALL_REDUCE.family:
            continue
        ids: list[int] = []
        groups = inst.attrs.get("replica_groups")
        if groups is not None:
            try:
                ids = [i for g in groups.expanded() for i in g]
            except ValueError:
                ids = []
        ids += [i for pair in inst.attrs.get("source_target_pairs", ()) for i in pair]
        if ids:
            global_ids = inst.attrs.get("use_global_device_ids")
            has_attr = inst.opcode.text.split("-start")[0] in ("all-reduce", "all-gather", "reduce-scatter")
            channel = inst.attrs.get("channel_id") is not None
            kind = "partition" if channel and (global_ids or not has_attr) else "replica"
            most[kind] = max(most[kind], max(ids) + 1)
    note = None
    if replicas is None and not most["replica"]:
        implied = implied_replicas(module)
        # Where partitions are known, only a gather without channel_id says the replica count:
        # its implicit group is every replica of its partition (one with a channel spans all).
        known_partitions = bool(most["partition"]) or partitions is not None
        if implied is not None and (not known_partitions or implied[1].attrs.get("channel_id") is None):
            most["replica"] = implied[0]
            note = (f"the module names no device count; {implied[1].name} ({implied[1].opcode.text}) "
                    f"holds {implied[0]} shards, so it runs on {implied[0]} replicas")
    if replicas is None:
        replicas = most["replica"] or 1
    if partitions is None:
        partitions = most["partition"] or 1
    return replicas, partitions, note


def _hand_over(inputs: Sequence[Any]) -> None:
    """Empty the caller's input lists (``run(donate=True)``), so the arrays are held by the
    run alone and freed as soon as it is done with them."""
    if isinstance(inputs, list):
        for x in inputs:
            if isinstance(x, list):
                x.clear()
        inputs.clear()


def _device_inputs(module: Module, inputs: Sequence[Any], n: int) -> list[list[Value]]:
    params = module.entry.parameters
    per_device = n > 1 and len(inputs) == n and all(isinstance(x, list) for x in inputs)
    # One list per device even when they share the arrays: evaluation empties its list.
    lists = list(inputs) if per_device else [list(inputs) for _ in range(n)]
    out = []
    for d, args in enumerate(lists):
        if len(args) != len(params):
            raise InputError(f"{module.entry.name} takes {len(params)} parameters, got {len(args)} inputs"
                             + (f" for device {d}" if n > 1 else ""))
        where = f" on device {d}" if n > 1 else ""
        out.append([coerce_input(x, p.shape, f"parameter {p.parameter_number} ({p.name}){where}")
                    for x, p in zip(args, params, strict=True)])
    return out


def run(module: Module, inputs: Sequence[Any] | RandomInputs = (), *, replicas: int | None = None,
        partitions: int | None = None, options: RunOptions | None = None, donate: bool = False,
        executor: Executor | None = None) -> Any:
    """Evaluate ``module``'s entry computation on ``inputs`` with numpy.

    ``inputs`` is a list with one array (or tuple, for tuple parameters) per entry parameter,
    used by every device, or, with several devices, a list holding one such list per device
    (device index = replica * partitions + partition). ``replicas``/``partitions`` default to
    ``default_grid(module)``. Returns the root value (an array or a tuple) for one device, or
    a list with one value per device. A sharded module not partitioned yet (pmap, shard_map or
    sharded jit before XLA's partitioner, Note [Global programs] in spmd.py) is one global
    program: it returns the global root value its signature declares, or with
    ``options.per_device`` the list of each device's shard of it.

    ``donate=True`` hands the input arrays over, as jax's ``donate_argnums`` does: ``inputs``
    (and each per-device list in it) is emptied, and the arrays may be freed or overwritten
    while the module runs, so a module's outputs can take their memory. Keep no other
    reference to them.

    ``inputs`` may also be a ``RandomInputs`` recipe (what ``random_inputs`` would draw).
    ``executor`` runs the devices instead of the local choice (Note [Executors]): e.g. a
    ``RayExecutor``, which spreads them over a Ray cluster and draws a recipe's inputs where
    each device runs.
    """
    options = options or RunOptions()
    grid_r, grid_p = default_grid(module)
    r = replicas if replicas is not None else grid_r
    p = partitions if partitions is not None else grid_p
    if r < 1 or p < 1:
        raise InputError(f"a device grid needs at least one replica and one partition, got {r}x{p}")
    n = r * p
    with kept_freed_memory(options.keep_freed_memory), float_env.using(options.float_env):
        if isinstance(inputs, RandomInputs) and not (getattr(executor, "draws_inputs", False)
                                                     and not spmd.is_global_program(module)):
            inputs = inputs.materialize(module, n)
        if n > 1 and not isinstance(inputs, RandomInputs) and is_global_run(module, inputs, n):
            return _run_global(module, inputs, r, p, options)  # in this process, whatever the executor
        args: Any = inputs if isinstance(inputs, RandomInputs) else _device_inputs(module, inputs, n)
        if donate and not isinstance(inputs, RandomInputs):
            _hand_over(inputs)
        # Note [Executors]: where the devices' values live and how collectives meet.
        chosen = executor if executor is not None else choose_executor(module, options, n)
        results = chosen.run(module, args, r, p, options, donate=donate)
    return results[0] if n == 1 else results


# --- global programs (Note [Global programs] in spmd.py) ---------------------------------------


def is_global_run(module: Module, inputs: Sequence[Any], n: int) -> bool:
    """A sharded module not partitioned yet: it holds manual-region markers, or the per-device
    inputs given are shards of its (global) parameters."""
    if spmd.is_global_program(module):
        return True
    params = module.entry.parameters
    if not (len(inputs) == n and all(isinstance(x, list) for x in inputs)):
        return False
    return any(isinstance(p.shape, ArrayShape) and len(inputs[0]) == len(params) and np.shape(inputs[0][i]) != tuple(p.shape.dimensions)
               for i, p in enumerate(params))


def _frontend(inst: Instruction, key: str) -> str:
    """Entry ``key`` of ``inst``'s frontend attributes (empty when absent); the sdy custom calls
    always carry them."""
    fa = inst.attrs.get("frontend_attributes")
    if fa is None:
        raise InterpretError(f"{inst.name} ({inst.custom_call_target}) has no frontend_attributes")
    return fa.map.get(key, "")


def _spec_of(inst: Instruction) -> Any:
    sharding = inst.attrs.get("sharding")
    if sharding is None:
        return None
    # Tuple shardings may carry printer comments (/*index=5*/) the sharding parser rejects.
    return spmd.parse_sharding(re.sub(r"/\*.*?\*/", "", sharding.text))


_PASS_THROUGH = (Family.UNARY, Family.BINARY, Family.TERNARY)


def _layout_of(module: Module, inst: Instruction, n: int, depth: int = 0) -> Any:
    """The per-device layout of an entry value: its own ``sharding=``, a manual region's result
    sharding, or (a minimal sharding propagation) that of a same-shaped operand of an
    elementwise op or annotation. None when nothing says: the value is replicated."""
    dims = tuple(inst.shape.dimensions) if isinstance(inst.shape, ArrayShape) else None
    spec = _spec_of(inst)
    if spec is not None and spec.kind != "tuple" and dims is not None:
        return spmd.hlo_layout(spec, dims, n)
    target = inst.custom_call_target if inst.opcode is Opcode.CUSTOM_CALL else None
    src, index = inst, 0
    if inst.opcode is Opcode.GET_TUPLE_ELEMENT and inst.operands[0].opcode is Opcode.CUSTOM_CALL:
        src, index = inst.operands[0], inst.attrs["index"]
    if src.opcode is Opcode.CUSTOM_CALL and src.custom_call_target == "xla.sdy.LocalToGlobalShape":
        shapes = [s.dimensions for s in array_shapes(src)]
        return spmd.sdy_layouts(module, _frontend(src, "xla.sdy.out_shardings"), shapes, n)[index]
    if depth > 64 or dims is None:
        return None
    if inst.opcode.family in _PASS_THROUGH or target is not None or inst.opcode is Opcode.RESHAPE:
        for op in inst.operands:
            if isinstance(op.shape, ArrayShape) and tuple(op.shape.dimensions) == dims:
                found = _layout_of(module, op, n, depth + 1)
                if found is not None:
                    return found
    return None


def shards_of(module: Module, value: Value, n: int) -> list[Value]:
    """Each of ``n`` devices' piece of a global program's root ``value``, cut by the root's
    sharding (or what its operands say, a minimal propagation); unsharded values are whole."""
    root = module.entry.root
    spec = _spec_of(root)
    if isinstance(root.shape, TupleShape):
        if spec is not None and spec.kind == "tuple":
            layouts = [spmd.hlo_layout(sp, np.shape(v), n) for sp, v in zip(spec.tuple_elements, value, strict=True)]
        elif root.opcode is Opcode.TUPLE:
            layouts = [_layout_of(module, o, n) for o in root.operands]
        else:
            layouts = [None] * len(root.shape.elements)
        leaves = [spmd.cut(np.asarray(v), lay) if lay is not None else [v] * n
                  for v, lay in zip(value, layouts, strict=True)]
        return [tuple(leaf[d] for leaf in leaves) for d in range(n)]
    layout = _layout_of(module, root, n)
    return [value] * n if layout is None else [*spmd.cut(np.asarray(value), layout)]


def _input_layout(module: Module, param: Instruction, n: int) -> Any:
    """How per-device inputs of ``param`` are cut: its ``sharding=``, else the in-sharding of
    the manual region it enters directly."""
    layout = _layout_of(module, param, n)
    if layout is not None:
        return layout
    for user in module.entry.instructions:
        if (user.opcode is Opcode.CUSTOM_CALL and user.custom_call_target == "Sharding"
                and user.operands and user.operands[0] is param):
            # GSPMD's manual region: parameter -> Sharding(devices=...) -> SPMDFullToShardShape.
            found = _layout_of(module, user, n)
            if found is not None:
                return found
        if (user.opcode is Opcode.CUSTOM_CALL and user.custom_call_target == "xla.sdy.GlobalToLocalShape"
                and any(o is param for o in user.operands)):
            shapes = [o.array_shape.dimensions for o in user.operands]
            i = next(k for k, o in enumerate(user.operands) if o is param)
            return spmd.sdy_layouts(module, _frontend(user, "xla.sdy.in_shardings"), shapes, n)[i]
    return None


def input_shards(module: Module, inputs: Sequence[Any], n: int) -> list[list[Any]]:
    """Each of ``n`` devices' inputs for a global program given its global ``inputs``: every
    array parameter cut by its sharding (or the manual region it enters); a replicated or
    tuple parameter whole. The inverse of what ``run`` assembles from per-device shards."""
    per_device: list[list[Any]] = [[] for _ in range(n)]
    for param, x in zip(module.entry.parameters, inputs, strict=True):
        layout = _input_layout(module, param, n) if isinstance(param.shape, ArrayShape) else None
        pieces = spmd.cut(np.asarray(x), layout) if layout is not None else [x] * n
        for d in range(n):
            per_device[d].append(pieces[d])
    return per_device


def global_arguments(module: Module, inputs: Sequence[Any], n: int) -> list[Value]:
    """The global arrays a global program (Note [Global programs]) runs on, from ``inputs``
    as ``run`` takes them: one whole array per parameter, or per-device lists of shards, put
    back together by each parameter's sharding (``input_shards`` is the inverse)."""
    params = module.entry.parameters
    per_device = len(inputs) == n and all(isinstance(x, list) for x in inputs)
    if not per_device and len(inputs) != len(params):
        raise InputError(f"{module.entry.name} takes {len(params)} parameters, got {len(inputs)} inputs")
    args = []
    for i, param in enumerate(params):
        if not per_device:
            x = inputs[i]
        else:
            shards = [np.asarray(inputs[d][i]) for d in range(n)]
            shape = param.shape
            layout = _input_layout(module, param, n) if isinstance(shape, ArrayShape) else None
            if layout is None or not isinstance(shape, ArrayShape) or shards[0].shape == tuple(shape.dimensions):
                x = shards[0]
            else:
                x = spmd.assemble(shards, layout, shape.dimensions, shape.dtype)
        args.append(coerce_input(x, param.shape, f"parameter {param.parameter_number} ({param.name})"))
    return args


def _run_global(module: Module, inputs: Sequence[Any], r: int, p: int, options: RunOptions) -> Any:
    """Run a sharded, unpartitioned module as one global program (Note [Global programs])."""
    n = r * p
    args = global_arguments(module, inputs, n)
    module = spmd.outline_inline_regions(module)  # Note [Manual regions written inline]
    ctx = EvalContext(module, options, devices.process_id(0, p), r, p)
    result = run_to_completion(evaluate(ctx, module.entry, args), module.entry)
    return shards_of(module, result, n) if options.per_device else result

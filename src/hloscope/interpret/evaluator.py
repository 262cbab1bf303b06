"""The evaluator loop: run one computation on one device, instruction by instruction.

Each computation gets a *plan* once (Note [Plans]); ``evaluate`` walks it, keeping values in a
slot list and dropping each value after its last use, because real modules hold hundreds of MB.
Failures are wrapped in an ``InterpretError`` that names the computation and the instruction
and shows its text (Note [Located errors]). Observers see every instruction through ``Hooks``
passed in ``RunOptions``; there is no global state.

``evaluate`` is a generator: handlers that call computations or meet other devices are
generator functions and the loop drives them with ``yield from``; whatever they yield (a
collective's rendezvous request) travels up to the device driver in run.py. A device that never
meets a collective simply never yields.

Note [Plans]
    A plan lists, for each non-parameter instruction in order: its handler, its operands' slot
    numbers, and the slots whose last use it is. Building one costs a pass over the computation;
    a while loop's body and condition reuse theirs every iteration, so the per-iteration cost is
    one handler call per instruction plus list stores.

Note [Donation]
    A handler may write into an operand's array instead of copying it (dynamic-update-slice in
    scan loops is the case that matters: copying a [64,16,1024] buffer per step made seed 003
    copy-bound) only when nothing else can see that array. The plan frees every operand whose
    last use is this step *before* calling the handler, and calls that hand values to another
    computation (call, fusion, the while body, a conditional's branch) pass ``donate=True`` so
    the callee's parameters are the only holders once the caller drops them. What remains is
    one question asked at run time, ``sole_owner(operands, i)``: is the operands list the only
    reference to that array (and to the array it views, if any)? CPython's reference count
    answers it exactly, whoever the other holder would be: another live slot, a tuple, the
    constant cache, the user's inputs, another device's environment, a pending rendezvous. So a
    donated write is never observable, on one device or many. Hooks see every operand after
    the step, so a run with hooks never donates.

Note [Unpacked tuple parameters]
    A while body receives its loop state as one tuple and reads it with get-tuple-element.
    Kept whole, that tuple stays alive until its last GTE and holds every element, so no element
    could be updated in place before then (Note [Donation]). When every user of a tuple
    parameter is a GTE, the plan binds the elements straight into the GTE slots and skips the
    GTE steps: each element is then held by exactly the slots that read it. The same holds for
    any tuple-shaped instruction read only by GTEs (a while loop's final state, a multi-output
    fusion): its elements go straight to their GTE slots and elements nobody reads are freed
    at once. Kept whole, seed 003's eight scan loops each held ~100 MB of dead loop state
    until their last GTE, 60% above XLA's peak. Skipped GTEs are not counted in Progress; runs
    with hooks keep them so observers see every instruction.

Note [Located errors]
    The innermost failing instruction makes the error: its computation, its name, and its text
    (``span.render`` with file:line:col and a caret when the module came from a file). Each
    calling instruction on the way out (while, call, fusion, ...) adds a ``called from`` line,
    so a failure deep in a loop body reads like a short stack trace.
"""
from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol

import numpy as np

from hloscope.errors import (
    EvaluationInterrupted,
    EvaluationStopped,
    HloscopeError,
    InterpretError,
    UnsupportedOpcodeError,
)
from hloscope.interpret import excess_precision, spmd
from hloscope.interpret.dynamic import has_dynamic, involves_dynamic, with_dynamic_sizes
from hloscope.interpret.float_env import FLOAT_ENVS
from hloscope.interpret.registry import UNSUPPORTED, handler_for, is_generator_handler
from hloscope.interpret.values import Value
from hloscope.ir import Computation, Instruction, Module, Opcode
from hloscope.ir.replica_groups import ProcessId

__all__ = ["Hooks", "Progress", "RunOptions", "EvalContext", "EvaluationInterrupted", "EvaluationStopped", "Plan",
           "evaluate", "run_to_completion", "known_reduction", "located_error", "sole_owner"]


class Hooks(Protocol):
    """Observer of an evaluation. Implement the methods you need (missing ones are skipped);
    Note [Observers] says what a hook may also define."""

    def on_instruction(self, inst: Instruction, operands: list[Value], result: Value) -> None:
        """Called after each instruction of any computation has produced ``result``."""


# Note [Observers]
#     A hook sees each instruction after it ran, with its operands (intact: a run with hooks
#     never writes into an operand, Note [Donation]) and its result, and never changes what
#     the run computes (torch.fx's Interpreter.run_node, xDSL's listeners). Besides
#     ``on_instruction(inst, operands, result)`` a hook may define
#     ``on_evaluated(ctx, inst, operands, result)``, which is called instead and is told the
#     EvalContext as well: ``ctx.device`` says whose values these are, ``ctx.stacked`` whether
#     they are lockstep's (every device's array along a leading axis, Note [Lockstep] in
#     lockstep.py) and ``ctx.weight`` for how many devices. A hook whose ``sees_stacked`` is
#     true accepts stacked values, so a run whose hooks all accept them still runs in lockstep
#     (executor.py); any other hook makes the run go device by device. A hook stops the run
#     by raising ``EvaluationStopped`` (the run raises it, unchanged, to its caller).


def _bind_hook(hook: Any) -> Callable[..., None] | None:
    """``hook`` as one function ``(ctx, inst, operands, result)`` (Note [Observers])."""
    evaluated = getattr(hook, "on_evaluated", None)
    if evaluated is not None:
        return evaluated
    seen = getattr(hook, "on_instruction", None)
    if seen is None:
        return None
    return lambda ctx, inst, operands, result: seen(inst, operands, result)


@dataclasses.dataclass
class Progress:
    """Counts across all devices: instructions evaluated and while-loop iterations run."""

    instructions: int = 0
    loop_iterations: int = 0


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How to run a module.

    hooks           observers (``Hooks``) told about every instruction (Note [Observers]).
    fill_elided     None (elided constants are an error), "zeros" or "random".
    seed            seeds the legacy ``rng`` op and ``fill_elided="random"``.
    progress        ``progress(Progress)`` every ``progress_every`` instructions.
    mode            how several devices run: "lockstep" (all at once, values stacked along a
                    leading device axis; Note [Lockstep] in lockstep.py), "per-device" (one
                    generator per device, meeting at collectives; Note [Cooperative devices]
                    in run.py), or "auto": lockstep where it applies, per-device otherwise.
    keep_freed_memory  let glibc reuse freed large blocks during the run instead of handing
                    them back to the kernel (Note [Keeping freed memory] in allocator.py).
    float_env       the backend's floating-point environment (Note [Denormals] in
                    float_env.py): "auto" (default: XLA:CPU as it compiles in this process,
                    Note [Which XLA:CPU]), "xla-cpu" (f32/bf16/f64 denormals flushed),
                    "xla-cpu-avx512" (also f64 -> f16 rounded once, as on AVX-512 hosts), "gpu"
                    (f32/bf16 flushed, f64 kept), "tpu" (no f32 denormals), "ieee" (all kept).
    per_device      for a sharded module not partitioned yet (Note [Global programs] in
                    spmd.py): return each device's shard of the outputs, cut by the outputs'
                    shardings, instead of the global arrays the module declares.
    """

    hooks: Sequence[Any] = ()
    fill_elided: str | None = None
    seed: int = 0
    progress: Callable[[Progress], None] | None = None
    progress_every: int = 100_000
    mode: str = "auto"
    keep_freed_memory: bool = True
    per_device: bool = False
    float_env: str = "auto"

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "lockstep", "per-device"):
            raise ValueError(f"mode must be 'auto', 'lockstep' or 'per-device', not {self.mode!r}")
        if self.float_env != "auto" and self.float_env not in FLOAT_ENVS:
            raise ValueError(f"float_env must be 'auto' or one of {', '.join(FLOAT_ENVS)}, not {self.float_env!r}")
        if self.fill_elided not in (None, "zeros", "random"):
            raise ValueError(f"fill_elided must be None, 'zeros' or 'random', not {self.fill_elided!r}")


@dataclasses.dataclass(slots=True)
class _Step:
    handler: Callable[..., Any]
    inst: Instruction
    slot: int
    operand_slots: tuple[int, ...]
    dead: tuple[int, ...]  # operand slots whose last use is this step (freed before it runs)
    is_generator: bool
    keep: bool  # False when the result is never used (dropped right away)
    # A tuple read only by get-tuple-element: (GTE slot, index) pairs its elements go to, the
    # tuple itself is not kept (Note [Unpacked tuple parameters]).
    unpack: tuple[tuple[int, int], ...] = ()
    # The element of a tuple result that hooks see as the instruction's value (the rounded one
    # of an (f32, bf16) pair, Note [Excess precision]); None: the result itself.
    shown: int | None = None


@dataclasses.dataclass(slots=True)
class Plan:
    """A computation prepared for evaluation (Note [Plans])."""

    computation: Computation
    size: int
    parameter_slots: tuple[int, ...]
    steps: list[_Step]
    root_slot: int
    # Tuple parameters read only by get-tuple-element: (parameter number, ((slot, index), ...))
    # bound straight into the GTE slots (Note [Unpacked tuple parameters]).
    unpacked: tuple[tuple[int, tuple[tuple[int, int], ...]], ...] = ()


def _unsupported(reason: str) -> Callable[..., Any]:
    def handler(ctx: Any, inst: Instruction, operands: list[Value]) -> Value:
        raise UnsupportedOpcodeError(f"{inst.opcode.text} is not supported by the interpreter: {reason}")

    return handler


def _dead_custom_call(ctx: Any, inst: Instruction, operands: list[Value]) -> None:
    """The value of a custom call nobody reads: none (build_plan)."""
    return None


def _unpackable(comp: Computation, slot_of: dict[int, int], *,
                keep_root: bool = False) -> dict[int, list[tuple[int, int]]]:
    """Tuple-shaped instructions (parameters, while loops, multi-output fusions, ...) whose
    every user is a get-tuple-element: slot -> [(GTE slot, tuple index)] (Note [Unpacked tuple
    parameters]). ``keep_root``: not one a root get-tuple-element reads, so the root runs as
    a step (a dynamic output is handed out there, Note [Dynamic shapes as bounds])."""
    users: dict[int, list[Instruction]] = {}
    for inst in comp.instructions:
        for op in inst.operands:
            users.setdefault(id(op), []).append(inst)
    out = {}
    for inst in comp.instructions:
        us = users.get(id(inst), [])
        # A get-tuple-element of an unpacked tuple gets its value bound, never run as a step,
        # so its own readers must run (a nested tuple (t0.0).1 into a fusion).
        bound = inst.opcode is Opcode.GET_TUPLE_ELEMENT and slot_of[id(inst.operands[0])] in out
        if (inst.shape is not None and inst.shape.is_tuple and us and inst is not comp.root and not bound
                and all(u.opcode is Opcode.GET_TUPLE_ELEMENT for u in us)
                and not (keep_root and any(u is comp.root for u in us))):
            out[slot_of[id(inst)]] = [(slot_of[id(u)], u.attrs["index"]) for u in us]
    return out


def build_plan(comp: Computation, *, unpack_tuples: bool = True,
               resolve: Callable[[Instruction], Callable[..., Any]] | None = None,
               per_device: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None,
               dynamic: bool = False) -> Plan:
    """The plan of ``comp``: handlers, operand slots and last-use frees (Note [Plans]).
    ``unpack_tuples`` binds tuple parameters straight into their get-tuple-element slots
    (Note [Unpacked tuple parameters]); runs with hooks keep every instruction visible.
    ``resolve(inst)`` picks each handler (lockstep.py's stacked rules) instead of the registry;
    ``per_device(handler)`` then adapts a one-device handler to its stacked values.
    ``dynamic``: the module has dynamic shapes, so the instructions that see one carry their
    sizes (Note [Dynamic shapes as bounds] in dynamic.py); static modules pay nothing."""
    insts = comp.instructions
    slot_of = {id(inst): i for i, inst in enumerate(insts)}
    unpack = _unpackable(comp, slot_of, keep_root=dynamic) if unpack_tuples else {}
    skipped = {slot for pairs in unpack.values() for slot, _ in pairs}
    # Note [Excess precision]: producers whose f32 value some user reads get a second slot.
    unrounded: dict[int, int] = {}
    operand_slots: list[tuple[int, ...]] = []
    check = excess_precision.enabled()
    def wide_of(inst: Instruction) -> Callable[..., Any] | None:
        wide = excess_precision.wide_handler(inst.opcode)
        if wide is not None and resolve is not None:
            wide = per_device(wide) if per_device is not None else None
        return wide

    def can_widen(inst: Instruction) -> bool:  # a dot's f32 value needs its own handler
        return excess_precision.wide_handler(inst.opcode) is None or wide_of(inst) is not None

    for inst in insts:
        slots = []
        for k, op in enumerate(inst.operands):
            s = slot_of[id(op)]
            if check and excess_precision.reads_unrounded(inst, k) and can_widen(op):
                s = unrounded.setdefault(s, len(insts) + len(unrounded))
            slots.append(s)
        operand_slots.append(tuple(slots))
    size = len(insts) + len(unrounded)
    last_use = [-1] * size
    for i, slots in enumerate(operand_slots):
        for s in slots:
            last_use[s] = i
    root_slot = slot_of[id(comp.root)]
    dead_after: list[list[int]] = [[] for _ in range(size)]
    for s, use in enumerate(last_use):
        if s != root_slot and use >= 0:
            dead_after[use].append(s)
    steps = []
    for i, inst in enumerate(insts):
        if inst.opcode is Opcode.PARAMETER or i in skipped:
            continue
        handler = resolve(inst) if resolve is not None else handler_for(inst.opcode)
        if handler is None:
            handler = _unsupported(UNSUPPORTED.get(inst.opcode, "no handler registered"))
        if (unpack_tuples and inst.opcode is Opcode.CUSTOM_CALL and last_use[i] < 0 and i != root_slot
                and not inst.attrs.get("custom_call_has_side_effect")):
            # A custom call nobody reads and without side effects is dead code XLA removes
            # before codegen, so its target needs no handler (nor a sensible shape) to run.
            # Runs with hooks (unpack_tuples=False) still evaluate it, to show its value.
            handler = _dead_custom_call
        elif dynamic and involves_dynamic(inst):
            handler = with_dynamic_sizes(handler, inst)
        pairs = tuple(unpack.get(i, ()))
        generator = is_generator_handler(handler)
        if check and excess_precision.rounds_its_result(inst) and any(
                s >= len(insts) for s in operand_slots[i]):
            handler = excess_precision.with_declared_result(handler)
        if i in unrounded:
            handler = excess_precision.with_unrounded_result(handler, wide_of(inst))
            used = last_use[i] >= 0 or i == root_slot
            pairs = ((unrounded[i], 0),) + (((i, 1),) if used else ())
        steps.append(_Step(handler, inst, i, operand_slots[i], tuple(dead_after[i]), generator,
                           not pairs and (last_use[i] >= 0 or i == root_slot), pairs,
                           shown=1 if i in unrounded else None))
    params = tuple(slot_of[id(p)] for p in comp.parameters)
    unpacked = tuple((p.parameter_number, tuple(unpack[slot_of[id(p)]])) for p in comp.parameters
                     if slot_of[id(p)] in unpack)
    return Plan(comp, size, params, steps, root_slot, unpacked)


class EvalContext:
    """What handlers may use on one device: the module, options, the device's ProcessId and
    the grid size, shared plan and computation caches, and the shared Progress counters."""

    stacked = False  # values hold one device's arrays (lockstep.py's context: every device's)

    def __init__(self, module: Module, options: RunOptions, process: ProcessId | None = None,
                 num_replicas: int = 1, num_partitions: int = 1, *,
                 shared: dict[str, Any] | None = None) -> None:
        self.module = module
        self.options = options
        self.process = process if process is not None else ProcessId(0, 0)
        self.num_replicas = num_replicas
        self.num_partitions = num_partitions
        shared = shared if shared is not None else {}
        self.plans: dict[Computation, Plan] = shared.setdefault("plans", {})
        self.cache: dict[Any, Any] = shared.setdefault("cache", {})  # per-instruction derived data
        self.progress: Progress = shared.setdefault("progress", Progress())
        self.hooks = [f for f in map(_bind_hook, options.hooks) if f is not None]  # Note [Observers]
        self.rng = np.random.default_rng([options.seed, self.process.replica, self.process.partition])
        self.async_state: dict[Any, Any] = {}
        self.donate = not self.hooks  # Note [Donation]
        self.weight = 1  # devices one step evaluates for (lockstep.py: all of them)
        self.in_region = False  # evaluating one device's part of a manual region (spmd.py)
        # Whether values carry dynamic sizes (Note [Dynamic shapes as bounds] in dynamic.py).
        if "dynamic" not in shared:
            shared["dynamic"] = has_dynamic(module)
        self.dynamic: bool = shared["dynamic"]

    @property
    def device(self) -> int:
        """This device's flattened index ``replica * num_partitions + partition``."""
        return self.process.replica * self.num_partitions + self.process.partition

    def plan(self, comp: Computation) -> Plan:
        plan = self.plans.get(comp)
        if plan is None:
            plan = self.plans[comp] = build_plan(comp, unpack_tuples=not self.hooks, dynamic=self.dynamic)
        return plan

    def call(self, comp: Computation, args: Sequence[Value], *,
             donate: bool = False) -> Generator[Any, Any, Value]:
        """Evaluate ``comp`` on ``args`` (use with ``yield from`` inside generator handlers).
        ``donate=True`` hands the values over: ``args`` (a list) is emptied once bound, so the
        callee may write into arrays nobody else holds (Note [Donation])."""
        return evaluate(self, comp, args, donate=donate and self.donate)

    def attrs(self, inst: Instruction, unpack: Callable[[Instruction], Any]) -> Any:
        """``unpack(inst)``, computed once per instruction and kept for the run (handlers
        call this to avoid re-deriving attributes on every loop iteration)."""
        key = (unpack, id(inst))
        value = self.cache.get(key, _MISSING)
        if value is _MISSING:
            value = self.cache[key] = unpack(inst)
        return value

    def handler(self, inst: Instruction) -> Callable[..., Any]:
        """The handler this context runs ``inst`` with (an instruction no plan holds, such as
        the one an async-start wraps); lockstep contexts pick their stacked rule."""
        handler = handler_for(inst.opcode)
        return handler if handler is not None else _unsupported(UNSUPPORTED.get(inst.opcode, "no handler registered"))

    def call_now(self, comp: Computation, args: Sequence[Value]) -> Value:
        """Evaluate ``comp`` to completion; it must not contain collectives."""
        return run_to_completion(evaluate(self, comp, args), comp)

    def vectorized(self, comp: Computation) -> Callable[..., Any]:
        """``comp`` as a function of whole arrays (Note [Vectorized computations] in
        reduction.py): scalar computations such as reducers and comparators are elementwise, so
        evaluating them once on arrays applies them to every element at once."""
        return lambda *args: self.call_now(comp, args)


_MISSING = object()


def sole_owner(operands: list[Any], i: int) -> bool:
    """True when ``operands[i]`` is an array that only the operands list refers to (nor does
    anything else hold the array it views), so writing into it is unobservable (Note
    [Donation]). Reference counts are CPython's: the list's and the call's own argument."""
    x = operands[i]
    if not isinstance(x, np.ndarray) or not x.flags.writeable or sys.getrefcount(x) > _LIST_AND_ARG:
        return False
    base = x.base
    if base is None:
        return True
    # A view (a reshape of a fresh result): its base must be an owning array held by it alone.
    return (isinstance(base, np.ndarray) and base.base is None and base.flags.writeable
            and sys.getrefcount(base) <= _VIEW_AND_ARG)


_LIST_AND_ARG = 2 + 1  # the list, the local x, getrefcount's argument
_VIEW_AND_ARG = 1 + 2  # the view's base pointer, the local base, getrefcount's argument


def run_to_completion(gen: Generator[Any, Any, Value], comp: Computation | None) -> Value:
    """Drive an evaluation that must not meet other devices; return its result."""
    try:
        request = next(gen)
    except StopIteration as stop:
        return stop.value
    gen.close()
    name = comp.name if comp is not None else "(detached)"
    raise InterpretError(f"computation {name} reached a collective ({request!r}) where only a "
                         "local computation is allowed (a reducer, comparator or mapped function)")


def evaluate(ctx: EvalContext, comp: Computation, args: Sequence[Value], *,
             donate: bool = False) -> Generator[Any, Any, Value]:
    """Evaluate ``comp`` on ``args`` on ``ctx``'s device; a generator returning the root value.
    With ``donate`` the list ``args`` is emptied once bound (Note [Donation])."""
    plan = ctx.plan(comp)
    if len(args) != len(plan.parameter_slots):
        raise InterpretError(f"computation {comp.name} takes {len(plan.parameter_slots)} arguments, "
                             f"got {len(args)}")
    env: list[Any] = [None] * plan.size
    for i, slot in enumerate(plan.parameter_slots):
        env[slot] = args[i]
    for i, pairs in plan.unpacked:
        env[plan.parameter_slots[i]] = None
        for slot, index in pairs:
            env[slot] = args[i][index]
    if donate and isinstance(args, list):
        args.clear()
    del args  # no local may keep a parameter alive (Note [Donation])
    hooks = ctx.hooks
    progress = ctx.progress
    report = ctx.options.progress
    every = ctx.options.progress_every
    weight = ctx.weight
    for step in plan.steps:
        operands = [env[s] for s in step.operand_slots]
        for s in step.dead:
            env[s] = None
        try:
            if step.is_generator:
                result = yield from step.handler(ctx, step.inst, operands)
            else:
                result = step.handler(ctx, step.inst, operands)
            if hooks:  # inside the try: a hook may be where Ctrl-C lands
                shown = result if step.shown is None else result[step.shown]
                for h in hooks:
                    h(ctx, step.inst, operands, shown)
        except KeyboardInterrupt:
            raise EvaluationInterrupted(
                f"interrupted at instruction {step.inst.name} in computation {comp.name} after "
                f"{progress.instructions} instructions and {progress.loop_iterations} loop iterations"
            ) from None
        except Exception as e:
            if not isinstance(e, HloscopeError) and any(isinstance(o, spmd.Sharded) for o in operands):
                # Note [Global programs] in spmd.py: regions are evaluated as called computations.
                e = UnsupportedOpcodeError(
                    f"{step.inst.opcode.text} {step.inst.name} reads the shards of a manual region written "
                    f"inline in computation {comp.name} (no call around it); hloscope evaluates a manual "
                    "region only as a called computation")
            raise located_error(e, step.inst) from e
        if step.keep:
            env[step.slot] = result
        elif step.unpack:
            for slot, index in step.unpack:
                env[slot] = result[index]
        del operands, result
        progress.instructions += weight
        if report is not None and progress.instructions % every < weight:
            report(progress)
    return env[plan.root_slot]


def _inst_text(inst: Instruction, message: str) -> str:
    if inst.span is not None:
        return inst.span.render(message)
    try:
        text = inst.to_text()
    except Exception:  # printing must never hide the real error
        text = repr(inst)
    return f"error: {message}\n  {text}"


def located_error(e: Exception, inst: Instruction) -> HloscopeError:
    """``e`` as an error that names ``inst`` (Note [Located errors])."""
    if isinstance(e, EvaluationInterrupted):
        return e  # already says where; the callers add nothing a user needs after Ctrl-C
    comp = inst.computation.name if inst.computation is not None else "?"
    if isinstance(e, HloscopeError) and getattr(e, "instruction", None) is not None:
        e.args = (f"{e.args[0] if e.args else e}\n  called from {inst.name} in computation {comp}",)
        return e
    cls = type(e) if isinstance(e, InterpretError) else InterpretError
    # A Python exception here is hloscope's own fault, not the module's: say so.
    cause = str(e) if isinstance(e, HloscopeError) else (
        f"internal error in hloscope's {inst.opcode.text} evaluation, please report it with this "
        f"module ({type(e).__name__}: {e})")
    message = f"evaluating {inst.name} ({inst.opcode.text}) in computation {comp}: {cause}"
    return cls(_inst_text(inst, message), instruction=inst, computation=comp)


# Root opcodes of two-parameter computations that the pure functions have fast paths for.
_KNOWN_BINARY = {
    Opcode.ADD: "add", Opcode.MULTIPLY: "multiply", Opcode.MAXIMUM: "max",
    Opcode.MINIMUM: "min", Opcode.AND: "and", Opcode.OR: "or",
}


def known_reduction(comp: Computation) -> str | None:
    """"add", "max", ... when ``comp`` is ``op(parameter(0), parameter(1))`` for a commutative
    op the pure functions have a numpy fast path for, else None."""
    root = comp.root
    name = _KNOWN_BINARY.get(root.opcode)
    if name is None or len(comp.parameters) != 2:
        return None
    if {id(o) for o in root.operands} == {id(p) for p in comp.parameters} and len(root.operands) == 2:
        return name
    return None

"""Which XLA:CPU thunks run as a graph and which in sequence, and which run in loop bodies:
what each thunk's dispatch costs (Note [Thunk dispatch]). ``analysis.timing`` charges it;
``analysis.cpu_model`` times each thunk's own work."""
from __future__ import annotations

from collections import deque

from hloscope.ir import ArrayShape, Computation, Instruction, Module, Opcode

__all__ = ["SEQUENTIAL_BUFFER_BYTES", "SEQUENTIAL_THUNKS", "SPLIT_THRESHOLD", "loop_computations", "runs_in_sequence",
           "thunks_of", "wide_thunks"]


def _bytes_of(inst: Instruction) -> int:
    return sum(leaf.byte_size() for _, leaf in inst.shape.leaves() if isinstance(leaf, ArrayShape))


# Note [Thunk dispatch]
#     XLA:CPU runs each computation's thunks with a ThunkExecutor
#     (``backends/cpu/runtime/thunk_executor.cc``). It runs them one after another, inline, when
#     every thunk depends on the one before (``ExecutionGraph::is_sequential``), when all of
#     their buffers are at most 512 bytes, or when there are at most 8; otherwise as a graph:
#     each thunk's completion makes its users ready, ready thunks wait in a FIFO queue, and
#     whenever more than 8 wait, half of them go to the thread pool (``SplitReadyQueue``). On
#     one core those hand-offs are context switches between threads of this process, and the
#     waiting thread's spinning is CPU time: independent reductions cost about 3 us a thunk
#     here, the same reductions in a chain 0.6 us (a reduction of 1024 elements is two thunks
#     once compiled, a window pass and a final one). So a thunk that the executor pops while more than 8 others
#     are ready (``wide_thunks``, a replay of its queue over the data flow) costs
#     ``cpu_rates.dag_thunk_overhead``, every other ``kernel_launch_overhead`` (``calibrate``
#     measures the first on independent reductions, the second on a chain), and an execution
#     ``cpu_rates.execution_overhead`` (a module of one small thunk) plus, per entry parameter
#     and per result array, ``parameter_overhead`` and ``result_overhead``: PjRt prepares each
#     argument and creates each output buffer around the run (``timing.execution_seconds``;
#     calibrated on 64 small arrays against 2, 0.3 and 2.8 us here, a fifth of the models
#     tier's ViT step, which hands over 47 arrays each way). The dependence between
#     thunks is read from the data flow (an operand, through tuples and bitcasts), which is
#     what XLA's buffer conflicts mostly are.
_NOT_THUNKS = frozenset({
    Opcode.PARAMETER, Opcode.CONSTANT, Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT, Opcode.BITCAST,
    Opcode.AFTER_ALL, Opcode.ADD_DEPENDENCY, Opcode.OPTIMIZATION_BARRIER, Opcode.DOMAIN,
})
SEQUENTIAL_BUFFER_BYTES = 512
SEQUENTIAL_THUNKS = 8
SPLIT_THRESHOLD = 8


def thunks_of(comp: Computation) -> list[Instruction]:
    """The instructions of ``comp`` that are XLA:CPU thunks (not parameters, constants, tuples,
    bitcasts and the like), in order."""
    return [i for i in comp.instructions if i.opcode not in _NOT_THUNKS]


def runs_in_sequence(comp: Computation) -> bool:
    """Whether XLA:CPU runs the thunks of ``comp`` in sequence (Note [Thunk dispatch])."""
    thunks = thunks_of(comp)
    if len(thunks) <= SEQUENTIAL_THUNKS:
        return True
    if all(_bytes_of(i) <= SEQUENTIAL_BUFFER_BYTES and all(_bytes_of(o) <= SEQUENTIAL_BUFFER_BYTES
                                                           for o in i.operands) for i in thunks):
        return True
    for before, after in zip(thunks, thunks[1:], strict=False):
        if before not in _thunk_inputs(after):
            return False
    return True


def wide_thunks(comp: Computation) -> set[Instruction]:
    """The thunks of ``comp`` XLA:CPU's executor pops while more than ``SPLIT_THRESHOLD`` others
    are ready: a replay of its FIFO ready queue over the data flow (Note [Thunk dispatch])."""
    if runs_in_sequence(comp):
        return set()
    thunks = thunks_of(comp)
    inputs = {t: {i for i in _thunk_inputs(t) if i.opcode not in _NOT_THUNKS} for t in thunks}
    users: dict[Instruction, list[Instruction]] = {}
    for t, ins in inputs.items():
        for i in ins:
            users.setdefault(i, []).append(t)
    waiting = {t: len(ins) for t, ins in inputs.items()}
    ready = deque(t for t in thunks if not waiting[t])
    wide: set[Instruction] = set()
    while ready:
        t = ready.popleft()
        if len(ready) > SPLIT_THRESHOLD:
            wide.add(t)
        for u in users.get(t, ()):
            waiting[u] -= 1
            if not waiting[u]:
                ready.append(u)
    return wide


def _thunk_inputs(inst: Instruction) -> set[Instruction]:
    """The thunks whose results ``inst`` reads, looking through tuples and bitcasts."""
    out: set[Instruction] = set()
    stack = list(inst.operands)
    while stack:
        o = stack.pop()
        if o.opcode in (Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT, Opcode.BITCAST):
            stack.extend(o.operands)
        else:
            out.add(o)
    return out


def loop_computations(module: Module) -> set[Computation]:
    """The computations XLA:CPU runs on every trip of a while loop: each loop's body and
    condition, and what they call (calls, conditionals' branches, nested loops), not fusions'
    computations, which are no thunks (Note [Thunks in loops]).

    Note [Thunks in loops]
        A loop body's thunks run once per trip on the same buffers with the same code: on one
        core, a body of small reductions cost its modelled work and 5-10 ns more per thunk and
        trip, and a trip with its condition's thunk 25-30 ns in all (the WhileThunk reads the
        predicate and starts the body's executor again). A thunk of the step's own, run
        once per execution, costs ``kernel_launch_overhead``, which ``calibrate`` measures on a
        chain whose fusions take one more operand each link, and which matched what the
        models tier's steps spend per thunk beyond their modelled work (ViT 1.5 us: a chain
        of small thunks that share one input costs 0.1-0.2 us). With the step's figure on
        every trip, the models tier's LSTM (two scans of 16 trips over bodies of 27 and 18
        thunks) was estimated at 3.4 times its time. ``calibrate`` measures both loop costs
        on a loop of 64 trips over bodies of 1 and 8 pairs of links (``cpu_rates.loop_*``).
    """
    loops: set[Computation] = set()
    stack: list[Computation] = []
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode is Opcode.WHILE:
                stack += [inst.attrs["body"], inst.attrs["condition"]]
    while stack:
        comp = stack.pop()
        if comp in loops:
            continue
        loops.add(comp)
        for inst in comp.instructions:
            if inst.opcode is not Opcode.FUSION:
                stack += [c for c in inst.called_computations if c not in loops]
    return loops

"""XLA's own test modules on hloscope and on XLA:CPU, one module at a time: the check behind
``tools/xla_sweep.py`` (which runs it over the corpus ``tools/xla_corpus.py extract`` writes, in
watched worker processes).

``check_module(text)`` parses the module, draws random inputs, runs it on XLA:CPU in a child
process (``hloscope.xla.worker.run_on_xla``) and on hloscope, and compares every output leaf
(``compare_leaf``: integers and preds bit-exact, floats within ``hloscope.testing.tolerances``'
``MODULE`` table, Note [Sweep tolerance]); it returns one row whose ``kind`` is one of
``KINDS``. XLA's texts stay outside the repository (Apache-2.0); nothing here copies them.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["KINDS", "MAX_INPUT_BYTES", "NeedsDevices", "check_module", "compare_leaf", "identity_inits",
           "run_xla_in_process", "share_integer_inputs", "unstable_sorts"]

XlaRunner = Callable[..., Any]  # (text, inputs, *, replicas, partitions, per_device, timeout) -> outputs

KINDS = {
    "match": "both ran; every output equal within tolerance",
    "differs": "both ran; an output differs",
    "hloscope-error": "XLA runs it; hloscope cannot parse or run it (or its process died)",
    "xla-refuses": "XLA cannot parse, compile or run it (templates, invalid tests, GPU-only ops)",
    "xla-crash": "XLA:CPU killed its process",
    "timeout": "one side took longer than the time limit",
    "skipped": "not comparable (elided constants) or too large to draw inputs for",
}

# Note [Sweep tolerance]
#     Float tolerance per dtype (``hloscope.testing.tolerances.MODULE``): rtol of each
#     element, and an absolute part of rms_atol times the leaf's RMS magnitude. XLA:CPU's
#     transcendental kernels are polynomial approximations a few ulps off, and it reorders long
#     sums (dots, convolutions, reduces: blocked, vectorised, split over threads); a K-long f32
#     sum of terms of size s then differs by ~ulp(s * sqrt(K)), absolute, so an element that
#     cancels to near 0 differs far beyond rtol of itself (spmd_partitioner_test modules: 2e-4
#     on values of RMS 75-150, 3e-5 of the RMS). The absolute part follows the leaf's scale
#     down as well as up: with a floor of 1 (as before), any f32 leaf of values below 1e-4 matched
#     whatever its values. The low-precision types get about one ulp of their own format.
# Inputs larger than this are not drawn (benchmarks at LLM scale): the two sides would need
# several times that, over the worker's memory limit.
MAX_INPUT_BYTES = 512 * 2**20





def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300] if text else ''}"


def _leaves(value: Any, path: str = "out") -> list[tuple[str, Any]]:
    if isinstance(value, tuple | list):
        return [leaf for k, v in enumerate(value) for leaf in _leaves(v, f"{path}.{k}")]
    return [(path, value)]


def _tolerance(dtype: Any) -> tuple[float, float] | None:
    """(rtol, rms_atol) of ``dtype`` (Note [Sweep tolerance]); None where exact."""
    from hloscope.testing.tolerances import module_tolerance

    tol = module_tolerance(dtype)
    return None if tol is None else (tol["rtol"], tol["rms_atol"])


def compare_leaf(ours: Any, theirs: Any, narrow: Any = None) -> str | None:
    """None when equal; else one line saying how they differ.

    Floats are close within ``rtol`` relative to the element or ``rms_atol`` relative to the
    leaf's root-mean-square magnitude: a K-long sum (dot, convolution, reduce)
    summed in another order differs by a few ulps of its terms' scale, which is about the
    leaf's scale, not the element's when the sum cancels to near 0 (Note [Sweep tolerance]).
    ``narrow``: the narrower float type the leaf was converted from (its precision)."""
    import numpy as np

    a, b = np.asarray(ours), np.asarray(theirs)
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"shape/dtype {a.dtype}{list(a.shape)} vs XLA {b.dtype}{list(b.shape)}"
    tol = _tolerance(a.dtype)
    if tol is None:  # integers, preds, tokens: bit-exact
        bad = a != b
        if not bad.any():
            return None
        return f"{int(bad.sum())}/{a.size} elements differ (exact {a.dtype})"
    if narrow is not None:
        wide = _tolerance(narrow) or (0.0, 0.0)
        tol = (max(tol[0], wide[0]), max(tol[1], wide[1]))
    # In chunks: float64 copies of a 400 MB leaf would not fit in the worker's memory limit.
    cast = np.complex128 if a.dtype.kind == "c" else np.float64
    fa_all, fb_all = a.reshape(-1), b.reshape(-1)
    step = 1 << 22
    total = count = 0.0
    for i in range(0, fb_all.size, step):
        fb = np.abs(fb_all[i:i + step].astype(cast))
        fb = fb[np.isfinite(fb)]
        total, count = total + float(np.sum(fb * fb)), count + fb.size
    scale = (total / count) ** 0.5 if count else 0.0
    bad, worst, nans_a, nans_b = 0, 0.0, 0, 0
    for i in range(0, fb_all.size, step):
        fa, fb = fa_all[i:i + step].astype(cast), fb_all[i:i + step].astype(cast)
        nan_a, nan_b = np.isnan(fa), np.isnan(fb)
        nans_a, nans_b = nans_a + int(nan_a.sum()), nans_b + int(nan_b.sum())
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.isclose(fa, fb, rtol=tol[0], atol=tol[1] * scale) | (nan_a & nan_b) | (fa == fb)
            if not close.all():
                bad += int((~close).sum())
                worst = max(worst, float(np.abs(np.nan_to_num(fa[~close] - fb[~close], nan=np.inf)).max()))
    if not bad:
        return None
    return (f"{bad}/{a.size} elements differ ({a.dtype}), max |diff| "
            f"{worst:.3g}, NaN {nans_a} vs XLA {nans_b}")


def _leaf_producers(module: Any) -> list[str]:
    """The opcode that produces each leaf of the entry's result, in leaf order."""
    from hloscope.ir.shape import TupleShape

    def walk(inst: Any) -> list[str]:
        if inst.opcode.name == "TUPLE":
            return [p for o in inst.operands for p in walk(o)]
        if isinstance(inst.shape, TupleShape):
            return [inst.opcode.text] * len(_leaves(_zeros_like(inst.shape)))
        return [inst.opcode.text]

    return walk(module.entry.root)


# Note [Dynamic outputs]
#     XLA:CPU hands out a dynamic array (s32[2,<=3,2]) as its elements in row-major order at
#     the front of the bound buffer, and leaves the rest as the buffer was (Note [Dynamic
#     shapes as bounds] in hloscope/interpret/dynamic.py): only that front is defined. So an
#     output leaf with dynamic sizes is compared on its first prod(sizes) elements, the sizes
#     taken from hloscope's run (a hook reading the interpreter's size store).


class _DynamicSizes:
    """Hook: each array instruction's dynamic sizes (the bound where static), by instruction."""

    def __init__(self) -> None:
        self.sizes: dict[int, tuple[int, ...]] = {}

    def on_evaluated(self, ctx: Any, inst: Any, operands: list[Any], result: Any) -> None:
        from hloscope.interpret.dynamic import sizes_of

        sizes = sizes_of(ctx, inst)
        if isinstance(sizes, tuple) and hasattr(result, "shape"):
            self.sizes[id(inst)] = tuple(b if n is None else n for n, b in zip(sizes, result.shape, strict=True))


def _leaf_instructions(module: Any) -> list[Any]:
    """The instruction that produces each leaf of the entry's result, in leaf order."""
    from hloscope.ir.shape import TupleShape

    def walk(inst: Any) -> list[Any]:
        if inst.opcode.name == "TUPLE":
            return [p for o in inst.operands for p in walk(o)]
        if isinstance(inst.shape, TupleShape):
            return [inst] * len(_leaves(_zeros_like(inst.shape)))
        return [inst]

    return walk(module.entry.root)


# Sources of values that differ from run to run by design: XLA's rng draws from a generator
# whose state hloscope does not model (and XLA:CPU's RngExpander seeds it per compilation), and
# GetRngSeed is a fresh random seed per run under jax. An output computed from one is not
# comparable; rng-bit-generator and rng-get-and-update-state are deterministic and compared.
RANDOM_OPCODES = {"rng"}
RANDOM_TARGETS = {"GetRngSeed"}


def _is_random_source(inst: Any) -> bool:
    return inst.opcode.text in RANDOM_OPCODES or (
        inst.opcode.text == "custom-call" and inst.custom_call_target in RANDOM_TARGETS)


def _random_instructions(module: Any) -> set[int]:
    """ids of the instructions whose value depends on a random source: the source itself, an
    instruction calling a computation that holds one (a while, call or fusion around an rng),
    and everything computed from either."""
    calls_random: dict[int, bool] = {}

    def computation_random(comp: Any) -> bool:
        if id(comp) not in calls_random:
            calls_random[id(comp)] = False  # a cycle (none in valid HLO) cannot recurse forever
            calls_random[id(comp)] = any(_is_random_source(i) or any(computation_random(c) for c in i.called_computations)
                                         for i in comp.instructions)
        return calls_random[id(comp)]

    tainted: set[int] = set()
    done: set[int] = set()
    for root in module.entry.instructions:  # iterative post-order over operands
        stack = [(root, False)]
        while stack:
            inst, expanded = stack.pop()
            if id(inst) in done:
                continue
            if not expanded:
                stack.append((inst, True))
                stack.extend((o, False) for o in inst.operands if id(o) not in done)
                continue
            done.add(id(inst))
            if (_is_random_source(inst) or any(id(o) in tainted for o in inst.operands)
                    or any(computation_random(c) for c in inst.called_computations)):
                tainted.add(id(inst))
    return tainted


def _random_leaves(module: Any) -> list[bool]:
    """For each leaf of the entry's result, in leaf order: does it depend on a random source?"""
    from hloscope.ir.shape import TupleShape

    tainted = _random_instructions(module)

    def walk(inst: Any) -> list[bool]:
        if inst.opcode.name == "TUPLE":
            return [r for o in inst.operands for r in walk(o)]
        if isinstance(inst.shape, TupleShape):
            return [id(inst) in tainted] * len(_leaves(_zeros_like(inst.shape)))
        return [id(inst) in tainted]

    return walk(module.entry.root)


def _leaf_sources(module: Any) -> list[Any]:
    """For each leaf of the entry's result, in leaf order: the narrower float dtype it was
    converted from (``f32 convert(bf16 x)`` carries bf16's precision: one bf16 ulp from a sum
    rounded on the other side of a tie is no difference), else None."""
    import numpy as np

    from hloscope.ir.shape import ArrayShape, TupleShape

    def narrow(inst: Any) -> Any:
        if inst.opcode.text != "convert" or not isinstance(inst.shape, ArrayShape):
            return None
        src = inst.operands[0].shape
        if not isinstance(src, ArrayShape):
            return None
        a, b = np.dtype(src.dtype), np.dtype(inst.shape.dtype)
        return a if a.kind in "fV" and a.itemsize < b.itemsize and b.kind == "f" else None

    def walk(inst: Any) -> list[Any]:
        if inst.opcode.name == "TUPLE":
            return [r for o in inst.operands for r in walk(o)]
        if isinstance(inst.shape, TupleShape):
            return [None] * len(_leaves(_zeros_like(inst.shape)))
        return [narrow(inst)]

    return walk(module.entry.root)


def _leaf_float_views(module: Any) -> list[Any]:
    """For each leaf of the entry's result: the float dtype its integer bits are a bitcast of
    (``s32 bitcast(f32 sum)``), so that it is compared as that float, else None."""
    import numpy as np

    from hloscope.ir.shape import ArrayShape, TupleShape

    def view(inst: Any) -> Any:
        if inst.opcode.text not in ("bitcast", "bitcast-convert") or not isinstance(inst.shape, ArrayShape):
            return None
        src = inst.operands[0].shape
        if not isinstance(src, ArrayShape):
            return None
        a, b = np.dtype(src.dtype), np.dtype(inst.shape.dtype)
        same = a.itemsize == b.itemsize and src.dimensions == inst.shape.dimensions
        return a if same and b.kind in "iu" and a.kind == "f" else None

    def walk(inst: Any) -> list[Any]:
        if inst.opcode.name == "TUPLE":
            return [r for o in inst.operands for r in walk(o)]
        if isinstance(inst.shape, TupleShape):
            return [None] * len(_leaves(_zeros_like(inst.shape)))
        return [view(inst)]

    return walk(module.entry.root)


def _zeros_like(shape: Any) -> Any:
    from hloscope.ir.shape import TupleShape

    if isinstance(shape, TupleShape):
        return tuple(_zeros_like(e) for e in shape.elements)
    return 0


# Note [Devices that disagree on control]
#     Per-device random inputs give each device its own loop bound when a while loop's trip
#     count comes from a parameter (XLA's while_loop_all_reduce_code_motion tests), and then
#     the devices reach different numbers of collectives. Such a program is undefined in XLA
#     (every device must issue the same collectives): XLA:CPU aborts in its rendezvous when the
#     collective's operand changes per iteration, and returns a value only when its loop-
#     invariant code motion has hoisted the collective out of the loop (measured with jaxlib
#     0.10.2), which is an artifact of its optimizer, not a meaning to match. hloscope stops
#     with "collective deadlock", which is right; the comparison is then redone on inputs whose
#     integer and pred leaves are device 0's on every device (as trip counts and indices of
#     SPMD programs are), floats still per device, and the row says so ("inputs").


# Note [Identity init values]
#     XLA requires a reduce's init value to be the identity of its computation, and XLA:CPU
#     relies on it: its tree-reduction rewrite applies the init once per window of 32
#     (33 times for 1024 elements), its simplifier drops it for a reduce over extent 1. A
#     random init drawn for a parameter that only feeds init values (XLA's fusion-analysis
#     tests: reduce(p0, p1)) makes the module undefined, so the sweep gives such a parameter
#     the identity of the reductions it feeds (0 for add, 1 for multiply, -inf / +inf for
#     max / min), when they agree.

def _identity(kind: str, dtype: Any) -> Any:
    """The identity of reduction ``kind`` in ``dtype`` (None for types we leave alone)."""
    import ml_dtypes
    import numpy as np

    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return {"add": 0, "multiply": 1, "max": info.min, "min": info.max}.get(kind)
    if dtype.kind in "fc" or (dtype.kind == "V" and dtype.name.startswith(("float", "bfloat"))):
        try:
            ml_dtypes.finfo(dtype)  # a float type ml_dtypes knows
        except ValueError:
            return None
        return {"add": 0.0, "multiply": 1.0, "max": -np.inf, "min": np.inf}.get(kind)
    return None


def _fusion_and_call_callers(module: Any) -> dict[int, list[tuple[Any, Any]]]:
    """id(computation) -> [(fusion or call instruction, computation)] that call it."""
    callers: dict[int, list[tuple[Any, Any]]] = {}
    for inst in module.instructions():
        if inst.opcode.text in ("fusion", "call"):
            for comp in inst.called_computations:
                callers.setdefault(id(comp), []).append((inst, comp))
    return callers


def identity_inits(module: Any) -> dict[int, str]:
    """Entry parameter number -> the reduction whose identity to give it, for the parameters used only as
    init values of reduce / reduce-window instructions with a known reducer (reached through
    fusion and call parameters) that all want the same identity."""
    from hloscope.interpret.evaluator import known_reduction

    callers = _fusion_and_call_callers(module)

    def entry_params(inst: Any, depth: int = 0) -> list[Any]:
        if inst.opcode.text != "parameter" or depth > 16:
            return []
        comp = inst.computation
        if comp is module.entry:
            return [inst]
        out = []
        for caller, _ in callers.get(id(comp), []):
            n = inst.parameter_number
            if n < len(caller.operands):
                out += entry_params(caller.operands[n], depth + 1)
        return out

    wanted: dict[int, set[str]] = {}
    for inst in module.instructions():
        if inst.opcode.text not in ("reduce", "reduce-window") or len(inst.operands) != 2:
            continue
        kind = known_reduction(inst.attrs["to_apply"])
        for p in entry_params(inst.operands[1]):
            wanted.setdefault(p.parameter_number, set()).add(kind or "?")
    out = {}
    for p in module.entry.parameters:
        ids = wanted.get(p.parameter_number, set())
        # Only a parameter whose every use is an init value (directly or through a fusion).
        if len(ids) == 1 and "?" not in ids and _only_inits(module, p, callers):
            out[p.parameter_number] = ids.pop()
    return out


def _only_inits(module: Any, param: Any, callers: dict[int, list[tuple[Any, Any]]]) -> bool:
    """Whether every use of ``param`` ends as the init value of a reduce (through fusion /
    call parameters)."""
    stack, seen = [param], set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        for user in v.computation.users(v):
            op = user.opcode.text
            if op in ("reduce", "reduce-window") and len(user.operands) == 2 and user.operands[1] is v \
                    and user.operands[0] is not v:
                continue
            if op in ("fusion", "call"):
                for k, o in enumerate(user.operands):
                    if o is v:
                        for comp in user.called_computations:
                            params = [q for q in comp.parameters if q.parameter_number == k]
                            stack.extend(params)
                continue
            return False
    return True


def share_integer_inputs(inputs: list[list[Any]]) -> list[list[Any]]:
    """Per-device inputs with every integer and pred leaf replaced by device 0's."""
    import numpy as np

    def share(mine: Any, first: Any) -> Any:
        if isinstance(mine, tuple):
            return tuple(share(a, b) for a, b in zip(mine, first, strict=True))
        dtype = np.asarray(mine).dtype
        integer = dtype.kind in "biu" or dtype.name.startswith(("int", "uint"))  # ml_dtypes' int4 is kind V
        return np.array(first, copy=True) if integer else mine

    return [[share(a, b) for a, b in zip(args, inputs[0], strict=True)] for args in inputs]


# Note [Modules XLA partitions]
#     A module for several partitions that is not optimized yet and carries sharding=
#     annotations (XLA's spmd tests: global shapes, num_partitions=2) is SPMD-partitioned by XLA:CPU, whose
#     executable then takes and returns each device's shard. Random inputs per device would
#     give a "replicated" parameter other values on every device, and a sharded one the wrong
#     shape. Such a module is compared as the global program it is: global inputs drawn once
#     and cut into shards by the parameters' shardings for XLA; hloscope runs it on the global
#     inputs, and its global result is cut by the root's sharding (hloscope.interpret.run's
#     input_shards and shards_of).


def _global_shards(m: Any, global_inputs: list[Any], replicas: int, partitions: int, seed: int) -> list[Any]:
    """hloscope's result of an unpartitioned sharded module, as each device's shard."""
    import hloscope as hs
    from hloscope.interpret.run import shards_of
    from hloscope.interpret.spmd import is_global_program

    n = replicas * partitions
    out = hs.run(m, global_inputs, replicas=replicas, partitions=partitions, options=hs.RunOptions(seed=seed))
    # With manual regions run() runs the global program once; otherwise every device runs it
    # whole on the same inputs, and each device's shard is cut from its own result: a program
    # that reads partition-id (one XLA already partitioned by hand) differs from device to device.
    if is_global_program(m):
        return shards_of(m, out, n)
    return [shards_of(m, out[k], n)[k] for k in range(n)]


class NeedsDevices(Exception):  # noqa: N818 - a request, not an error
    """``run_xla_in_process`` needs a process whose XLA:CPU has ``devices`` host devices."""

    def __init__(self, devices: int) -> None:
        super().__init__(f"XLA:CPU needs {devices} host devices")
        self.devices = devices


def run_xla_in_process(text: str, inputs: list[Any], *, replicas: int, partitions: int, per_device: bool,
                       timeout: float) -> Any:
    """XLA:CPU's outputs for ``text`` computed in this process (same conventions as
    ``hloscope.xla.worker.run_on_xla``, whose child process imports jax again for every module:
    most of the sweep's time). Only for a process that is itself watched and restarted when XLA
    kills it, as the sweep's workers are; ``timeout`` is the watcher's. Raises ``NeedsDevices``
    when XLA:CPU here has another number of host devices than the module's grid (the device
    count is fixed when jax starts: ``--xla_force_host_platform_device_count``)."""
    from hloscope.errors import HloscopeError
    from hloscope.xla import client as xla

    n = max(replicas * partitions, 1)
    if xla.available() and xla.jaxlib_api().get_backend("cpu").device_count() != n:
        raise NeedsDevices(n)
    try:
        compiled = xla.compile_hlo(text, replicas=replicas, partitions=partitions)
        return compiled.run(inputs if per_device or n == 1 else [inputs] * n)
    except HloscopeError as e:
        raise HloscopeError(f"XLA:CPU could not run the module: {str(e).splitlines()[0] if str(e) else e}") from None
    except Exception as e:  # noqa: BLE001 - whatever jaxlib raises is XLA refusing the module
        raise HloscopeError(f"XLA:CPU could not run the module: {type(e).__name__}: {e}") from None


def check_module(text: str, *, seed: int, timeout: float,
                 phase: Callable[[str], None] = lambda name: None,
                 xla_runner: XlaRunner | None = None) -> dict[str, Any]:
    """One module through both sides; the result row (without the index fields). ``phase`` is
    told the name of each phase as it starts (the sweep's watchdog reads them). XLA runs in a
    child process per module (``run_on_xla``) unless ``xla_runner`` says otherwise
    (``run_xla_in_process``)."""
    import numpy as np

    import hloscope as hs
    from hloscope.errors import HloscopeError, MissingDependencyError, ParseError
    from hloscope.interpret.dynamic import has_dynamic
    from hloscope.interpret.inputs import random_inputs
    from hloscope.interpret.run import default_grid, input_shards
    from hloscope.ir.literal import Literal
    from hloscope.xla import client as xla
    from hloscope.xla.rewrite import needs_rewrite
    from hloscope.xla.worker import run_on_xla

    phase("hloscope-parse")
    try:
        m = hs.parse(text, "module.hlo")
    except Exception as e:  # noqa: BLE001 - ParseError or a crash: either way ask XLA next
        phase("xla-parse")
        try:
            xla.parse_hlo_text(text)
        except ParseError as xe:
            return {"kind": "xla-refuses", "stage": "parse", "detail": _first_line(xe)}
        return {"kind": "hloscope-error", "stage": "parse", "detail": _first_line(e)}
    # XLA's parser first, in this process (a crash here is the parent's xla-crash): half the
    # corpus is templates hloscope reads leniently, and they need no XLA child process.
    phase("xla-parse")
    try:
        xla.parse_hlo_text(text)
    except ParseError as xe:
        return {"kind": "xla-refuses", "stage": "parse", "detail": _first_line(xe)}
    if any(isinstance(i.attrs.get("literal"), Literal) and i.attrs["literal"].elided for i in m.instructions()):
        return {"kind": "skipped", "detail": "elided constants"}
    ops = sorted({i.opcode.text for i in m.instructions()} - {"parameter", "constant", "tuple",
                                                                "get-tuple-element", "ROOT"})
    replicas, partitions = default_grid(m)
    n = replicas * partitions
    per_device = n > 1
    size = sum(p.shape.byte_size() for p in m.entry.parameters)
    if size * (n if per_device else 1) > MAX_INPUT_BYTES:
        return {"kind": "skipped", "detail": f"inputs of {size / 2**30:.1f} GiB", "ops": ops}
    # Note [Modules XLA partitions]: the same test as hloscope.xla.client.compile_hlo's.
    # Without any sharding= every partition runs the whole program on its own inputs (and
    # device-dependent collectives differ per device): compared per device as usual.
    sharded = any("sharding" in i.attrs for i in m.instructions())
    partitioned = partitions > 1 and sharded and not needs_rewrite(xla.xla_canonical_text(text))
    global_inputs: list[Any] = []
    try:
        if partitioned:
            global_inputs = random_inputs(m, seed)
            inputs = input_shards(m, global_inputs, n)
            if any(len({np.shape(args[i]) for args in inputs}) > 1 for i in range(len(global_inputs))):
                # XLA pads uneven shards to one size (the padding's contents unspecified).
                return {"kind": "skipped", "detail": "a parameter's sharding does not divide it evenly", "ops": ops}
        else:
            inputs = random_inputs(m, seed, num_devices=n, per_device=per_device)
        identities = identity_inits(m)  # Note [Identity init values]
        for args in ([global_inputs] if partitioned else []) + (inputs if per_device else [inputs]):
            for k, kind in identities.items():
                value = _identity(kind, np.asarray(args[k]).dtype)
                if value is not None:
                    args[k] = np.full_like(np.asarray(args[k]), value)
        if partitioned and identities:
            inputs = input_shards(m, global_inputs, n)
    except Exception as e:  # noqa: BLE001
        return {"kind": "hloscope-error", "stage": "inputs", "detail": _first_line(e), "ops": ops}
    extra: dict[str, Any] = {"inputs": "global, cut into shards"} if partitioned else {}
    if identities:
        extra["identity_inits"] = sorted(identities)
    while True:
        phase("xla")
        try:
            if xla_runner is not None:
                theirs = xla_runner(text, inputs, replicas=replicas, partitions=partitions,
                                    per_device=per_device, timeout=timeout)
            else:
                theirs = run_on_xla(text, inputs, replicas=replicas, partitions=partitions,
                                    per_device=per_device, timeout=timeout).outputs
        except MissingDependencyError:
            raise
        except HloscopeError as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            if "did not finish within" in msg:
                return {"kind": "timeout", "stage": "xla", "ops": ops, **extra}
            if "(killed by signal" in msg:
                return {"kind": "xla-crash", "stage": "xla", "detail": msg[:300], "ops": ops, **extra}
            return {"kind": "xla-refuses", "stage": "compile", "detail": msg[:300], "ops": ops, **extra}
        phase("hloscope")
        t0 = time.perf_counter()
        dynamic = _DynamicSizes()  # Note [Dynamic outputs]
        try:
            if partitioned:
                ours = _global_shards(m, global_inputs, replicas, partitions, seed)
            else:
                hooks = (dynamic,) if has_dynamic(m) else ()
                ours = hs.run(m, inputs, replicas=replicas, partitions=partitions,
                              options=hs.RunOptions(seed=seed, hooks=hooks))
        except Exception as e:  # noqa: BLE001 - the point is to find these
            if per_device and not partitioned and not extra and "collective deadlock" in str(e):
                # Note [Devices that disagree on control]: draw again with the integers shared.
                inputs, extra = share_integer_inputs(inputs), {"inputs": "integers shared by the devices"}
                continue
            if "never ends:" in str(e):  # XLA:CPU's answer for a loop that never ends defines nothing
                return {"kind": "skipped", "detail": "a while loop never ends (hloscope says so; XLA's "
                        "simplifier may delete it)", "ops": ops, **extra}
            return {"kind": "hloscope-error", "stage": "run", "detail": _first_line(e), "ops": ops, **extra}
        break
    seconds = time.perf_counter() - t0
    mine, ref = _leaves(ours), _leaves(theirs)
    if len(mine) != len(ref):
        return {"kind": "differs", "detail": f"{len(mine)} output leaves vs XLA {len(ref)}", "ops": ops,
                "producer": "(structure)"}
    producers = _leaf_producers(m) * (n if n > 1 else 1)
    leaf_insts = _leaf_instructions(m) * (n if n > 1 else 1)
    random_leaf = _random_leaves(m) * (n if n > 1 else 1)
    narrow = _leaf_sources(m) * (n if n > 1 else 1)
    views = _leaf_float_views(m) * (n if n > 1 else 1)
    for k, ((path, a), (_, b)) in enumerate(zip(mine, ref)):
        if k < len(random_leaf) and random_leaf[k]:
            continue
        if k < len(views) and views[k] is not None and np.shape(a) == np.shape(b):
            a, b = np.asarray(a).view(views[k]), np.asarray(b).view(views[k])  # bits of a float
        sizes = dynamic.sizes.get(id(leaf_insts[k])) if k < len(leaf_insts) else None
        if sizes is not None and np.shape(a) == np.shape(b):  # Note [Dynamic outputs]
            defined = int(np.prod(sizes))
            a, b = np.asarray(a).reshape(-1)[:defined], np.asarray(b).reshape(-1)[:defined]
        why = compare_leaf(a, b, narrow[k] if k < len(narrow) else None)
        if why is not None:
            producer = producers[k] if k < len(producers) else "?"
            undefined = non_identity_inits(m)
            if undefined:
                extra["implementation_defined"] = undefined
                why += f"; {undefined[0]}'s init value is not its reducer's identity (implementation-defined)"
            unstable = unstable_sorts(m)
            if unstable and not undefined:
                extra["implementation_defined"] = unstable
                why += f"; {unstable[0]} is not stable: equal keys may come out in any order (implementation-defined)"
            return {"kind": "differs", "leaf": path, "producer": producer, "detail": why, "ops": ops,
                    "seconds": round(seconds, 3), **extra}
    unchecked = sum(random_leaf[:len(mine)])
    if unchecked and unchecked == len(mine):
        return {"kind": "skipped", "detail": "every output depends on rng or GetRngSeed (random by design)",
                "ops": ops, **extra}
    if unchecked:
        extra["random_leaves"] = unchecked  # not compared: random by design
    return {"kind": "match", "ops": ops, "seconds": round(seconds, 3), **extra}




def unstable_sorts(module: Any) -> list[str]:
    """Names of the sorts without ``is_stable=true``. XLA leaves the order of equal keys to
    the backend there (XLA:CPU's ``std::sort`` puts them its own way, the interpreter keeps
    them in order), so a difference in such a sort's outputs is not hloscope's: bf16 keys of
    random data tie often (XLA's hlo_to_mhlo top-k test: 3 of 64 indices)."""
    return [inst.name for inst in module.instructions()
            if inst.opcode.text == "sort" and not inst.attrs.get("is_stable", False)]


def non_identity_inits(module: Any) -> list[str]:
    """Names of the reduce / reduce-window instructions with a known reducer whose init value
    is not provably its identity: a constant other than the identity, or a value computed in
    the module. XLA's semantics leave such a reduction implementation-defined (XLA:CPU splits a
    reduction of 128 elements into windows of 32 and adds the init to each window and again to
    their sum), so a difference there is not hloscope's; the sweep says so beside it."""
    import numpy as np

    from hloscope.interpret.evaluator import known_reduction
    from hloscope.ir.literal import Literal

    given = identity_inits(module)  # entry parameters the inputs set to the identity
    callers = _fusion_and_call_callers(module)

    def is_identity(value: Any, kind: str, depth: int = 0) -> bool:
        op = value.opcode.text
        if op == "constant" and isinstance(value.attrs.get("literal"), Literal):
            try:
                want = _identity(kind, value.shape.dtype)
                got = value.attrs["literal"].to_numpy(value.shape)
            except (ValueError, AttributeError):  # no numpy type, or an undecodable literal
                return False
            return want is not None and np.size(got) == 1 and bool(np.asarray(got, np.float64).item() == want)
        if op != "parameter" or depth > 16:
            return False
        if value.computation is module.entry:
            return given.get(value.parameter_number) == kind
        users = [caller for caller, _ in callers.get(id(value.computation), [])]
        n = value.parameter_number
        return bool(users) and all(n < len(u.operands) and is_identity(u.operands[n], kind, depth + 1)
                                   for u in users)

    out = []
    for inst in module.instructions():
        if inst.opcode.text not in ("reduce", "reduce-window") or len(inst.operands) != 2:
            continue
        kind = known_reduction(inst.attrs["to_apply"])
        if kind is not None and not is_identity(inst.operands[1], kind):
            out.append(inst.name)
    return out

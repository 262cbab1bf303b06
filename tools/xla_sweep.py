"""Run every module of XLA's own test suite on hloscope and on XLA:CPU with the same random
inputs, and sort each into one kind, so that the next family of differences shows up by itself.

The modules are those ``tools/xla_corpus.py extract`` writes (``OUT/modules/*.hlo`` with
``OUT/index.jsonl``). For each module, in this order:

1. hloscope parses it; when it cannot, XLA's parser is asked (a module both refuse is a
   template or a deliberately invalid test string: ``xla-refuses``);
2. a module with elided constants (``{...}``) is ``skipped``: XLA fills them with garbage;
3. random inputs are drawn (``hloscope.interpret.inputs.random_inputs``, per device when the
   header asks for several) and XLA:CPU runs the module in its own child process
   (``hloscope.xla.worker.run_on_xla``); a module XLA:CPU cannot compile or run is
   ``xla-refuses``, one that kills XLA's process ``xla-crash``;
4. hloscope runs it on the same inputs and every output leaf is compared (integers and preds
   bit-exact, floats within a per-dtype tolerance, NaN where NaN).

Kinds (``KINDS``): match, differs, hloscope-error, xla-refuses, xla-crash, timeout, skipped.

Everything of one module happens in a worker process (this script's ``_worker``), started with
a memory limit (``--memory-gb``, an address-space limit that XLA's own child inherits) and
watched by the parent, which kills it when one phase takes longer than ``--timeout`` seconds
and restarts it for the next module. Results go to a JSON-lines file outside the repository
(``--results``, default ``OUT/sweep.jsonl``), one line per module as it finishes; a second run
skips the modules already there (resumable), and ``--only KIND`` runs again just the modules
of that kind (the newest line of a module wins). ``summary`` counts the kinds and groups the
differing and failing modules by cause. Usage (the machine is shared: be nice)::

    nice -n 10 python tools/xla_sweep.py run /work/xla_hlo [--limit N] [--timeout 60]
    nice -n 10 python tools/xla_sweep.py run /work/xla_hlo --only differs
    python tools/xla_sweep.py summary /work/xla_hlo [--show KIND] [--examples 3]

XLA's texts stay outside the repository (Apache-2.0); nothing here copies them.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import resource
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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
#     Float tolerance per dtype name: rtol, and atol = the same times the leaf's RMS magnitude
#     (at least 1). XLA:CPU's transcendental kernels are polynomial approximations a few ulps
#     off, and it reorders long sums (dots, convolutions, reduces: blocked, vectorised, split
#     over threads); a K-long f32 sum of terms of size s then differs by ~ulp(s * sqrt(K)),
#     absolute, so an element that cancels to near 0 differs far beyond rtol of itself
#     (spmd_partitioner_test modules: 2e-4 on values of RMS 75-150, 3e-5 of the RMS). The
#     low-precision types get about one ulp of their own format.
TOLERANCE = {"float64": 1e-9, "complex128": 1e-9, "float32": 1e-4, "complex64": 1e-4,
             "float16": 1e-2, "bfloat16": 4e-2}
LOW_FLOAT_TOLERANCE = 0.25  # fp8 and narrower
# Inputs larger than this are not drawn (benchmarks at LLM scale): the two sides would need
# several times that, over the worker's memory limit.
MAX_INPUT_BYTES = 512 * 2**20



# --- the worker: one module at a time ----------------------------------------------------------


def _phase(name: str) -> None:
    sys.stdout.write(json.dumps({"phase": name}) + "\n")
    sys.stdout.flush()


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300] if text else ''}"


def _leaves(value: Any, path: str = "out") -> list[tuple[str, Any]]:
    if isinstance(value, tuple | list):
        return [leaf for k, v in enumerate(value) for leaf in _leaves(v, f"{path}.{k}")]
    return [(path, value)]


def _tolerance(dtype: Any) -> float | None:
    import numpy as np

    name = np.dtype(dtype).name
    if name in TOLERANCE:
        return TOLERANCE[name]
    if name.startswith("float") or "e4m3" in name or "e5m2" in name or "e2m1" in name or "e3m2" in name \
            or "e2m3" in name or "e8m0" in name:
        return LOW_FLOAT_TOLERANCE
    return None


def compare_leaf(ours: Any, theirs: Any, narrow: Any = None) -> str | None:
    """None when equal; else one line saying how they differ.

    Floats are close within ``tol`` relative to the element and ``tol`` relative to the
    leaf's root-mean-square magnitude (at least 1): a K-long sum (dot, convolution, reduce)
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
        tol = max(tol, _tolerance(narrow) or 0.0)
    # In chunks: float64 copies of a 400 MB leaf would not fit in the worker's memory limit.
    cast = np.complex128 if a.dtype.kind == "c" else np.float64
    fa_all, fb_all = a.reshape(-1), b.reshape(-1)
    step = 1 << 22
    total = count = 0.0
    for i in range(0, fb_all.size, step):
        fb = np.abs(fb_all[i:i + step].astype(cast))
        fb = fb[np.isfinite(fb)]
        total, count = total + float(np.sum(fb * fb)), count + fb.size
    scale = max(1.0, (total / count) ** 0.5) if count else 1.0
    bad, worst, nans_a, nans_b = 0, 0.0, 0, 0
    for i in range(0, fb_all.size, step):
        fa, fb = fa_all[i:i + step].astype(cast), fb_all[i:i + step].astype(cast)
        nan_a, nan_b = np.isnan(fa), np.isnan(fb)
        nans_a, nans_b = nans_a + int(nan_a.sum()), nans_b + int(nan_b.sum())
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.isclose(fa, fb, rtol=tol, atol=tol * scale) | (nan_a & nan_b) | (fa == fb)
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


def identity_inits(module: Any) -> dict[int, str]:
    """Entry parameter number -> the reduction whose identity to give it, for the parameters used only as
    init values of reduce / reduce-window instructions with a known reducer (reached through
    fusion and call parameters) that all want the same identity."""
    from hloscope.interpret.evaluator import known_reduction

    callers: dict[int, list[tuple[Any, Any]]] = {}  # id(computation) -> [(caller, computation)]
    for inst in module.instructions():
        if inst.opcode.text in ("fusion", "call"):
            for comp in inst.called_computations:
                callers.setdefault(id(comp), []).append((inst, comp))

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
    # whole on the same inputs (a list of n equal values).
    value = out if is_global_program(m) else out[0]
    return shards_of(m, value, n)


def check_module(text: str, *, seed: int, timeout: float) -> dict[str, Any]:
    """One module through both sides; the result row (without the index fields)."""
    import numpy as np

    import hloscope as hs
    from hloscope.errors import HloscopeError, MissingDependencyError, ParseError
    from hloscope.interpret.inputs import random_inputs
    from hloscope.interpret.run import default_grid, input_shards
    from hloscope.ir.literal import Literal
    from hloscope.xla import client as xla
    from hloscope.xla.rewrite import needs_rewrite
    from hloscope.xla.worker import run_on_xla

    _phase("hloscope-parse")
    try:
        m = hs.parse(text, "module.hlo")
    except Exception as e:  # noqa: BLE001 - ParseError or a crash: either way ask XLA next
        _phase("xla-parse")
        try:
            xla.parse_hlo_text(text)
        except ParseError as xe:
            return {"kind": "xla-refuses", "stage": "parse", "detail": _first_line(xe)}
        return {"kind": "hloscope-error", "stage": "parse", "detail": _first_line(e)}
    # XLA's parser first, in this process (a crash here is the parent's xla-crash): half the
    # corpus is templates hloscope reads leniently, and they need no XLA child process.
    _phase("xla-parse")
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
        _phase("xla")
        try:
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
        _phase("hloscope")
        t0 = time.perf_counter()
        try:
            if partitioned:
                ours = _global_shards(m, global_inputs, replicas, partitions, seed)
            else:
                ours = hs.run(m, inputs, replicas=replicas, partitions=partitions,
                              options=hs.RunOptions(seed=seed))
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
    random_leaf = _random_leaves(m) * (n if n > 1 else 1)
    narrow = _leaf_sources(m) * (n if n > 1 else 1)
    views = _leaf_float_views(m) * (n if n > 1 else 1)
    for k, ((path, a), (_, b)) in enumerate(zip(mine, ref)):
        if k < len(random_leaf) and random_leaf[k]:
            continue
        if k < len(views) and views[k] is not None and np.shape(a) == np.shape(b):
            a, b = np.asarray(a).view(views[k]), np.asarray(b).view(views[k])  # bits of a float
        why = compare_leaf(a, b, narrow[k] if k < len(narrow) else None)
        if why is not None:
            producer = producers[k] if k < len(producers) else "?"
            return {"kind": "differs", "leaf": path, "producer": producer, "detail": why, "ops": ops,
                    "seconds": round(seconds, 3), **extra}
    unchecked = sum(random_leaf[:len(mine)])
    if unchecked and unchecked == len(mine):
        return {"kind": "skipped", "detail": "every output depends on rng or GetRngSeed (random by design)",
                "ops": ops, **extra}
    if unchecked:
        extra["random_leaves"] = unchecked  # not compared: random by design
    return {"kind": "match", "ops": ops, "seconds": round(seconds, 3), **extra}


def _worker(seed: int, timeout: float) -> None:
    """Child process: one module path per stdin line; phase lines, then one result line."""
    import warnings

    warnings.filterwarnings("ignore")
    for line in sys.stdin:
        try:
            result = check_module(Path(line.strip()).read_text(), seed=seed, timeout=timeout)
        except MemoryError:
            result = {"kind": "hloscope-error", "stage": "run", "detail": "MemoryError: over the memory limit"}
        sys.stdout.write(json.dumps({"result": result}) + "\n")
        sys.stdout.flush()


# --- the parent: a watched worker, restarted when it dies or is killed ------------------------


class Worker:
    """This script's ``_worker`` in its own session (so XLA's child dies with it when killed),
    with an address-space limit of ``memory_gb``."""

    def __init__(self, *, seed: int, timeout: float, memory_gb: float) -> None:
        self.seed, self.timeout, self.memory = seed, timeout, int(memory_gb * 2**30)
        self.proc: subprocess.Popen[bytes] | None = None
        self.pending = b""

    def _limit(self) -> None:
        resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))

    def _start(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
        src = str(Path(__file__).resolve().parents[1] / "src")
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
        return subprocess.Popen([sys.executable, __file__, "_worker", "--seed", str(self.seed),
                                 "--timeout", str(self.timeout)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env, start_new_session=True, preexec_fn=self._limit)

    def _readline(self, seconds: float) -> str | None:
        """The next line; None after ``seconds`` without one, "" when the worker died."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + seconds
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self.pending:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return ""
                self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode()

    def stop(self) -> int | None:
        """Kill the worker and everything it started; its exit status."""
        if self.proc is None:
            return None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        code = self.proc.wait()
        self.proc, self.pending = None, b""
        return code

    def check(self, path: Path) -> dict[str, Any]:
        if self.proc is None:
            self.proc = self._start()
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{path}\n".encode())
        self.proc.stdin.flush()
        phase = "start"
        # A fresh worker imports jax first; XLA's phase has run_on_xla's own limit inside.
        limits = {"start": 60.0, "hloscope-parse": self.timeout, "xla-parse": self.timeout,
                  "xla": self.timeout + 30.0, "hloscope": self.timeout}
        while True:
            line = self._readline(limits.get(phase, self.timeout))
            if line is None:
                self.stop()
                side = "xla" if phase.startswith("xla") else "hloscope"
                return {"kind": "timeout", "stage": side if phase != "start" else "start"}
            if not line:
                code = self.stop()
                how = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
                if phase.startswith("xla"):
                    return {"kind": "xla-crash", "stage": phase, "detail": f"the process died ({how})"}
                return {"kind": "hloscope-error", "stage": phase, "detail": f"the process died ({how})"}
            msg = json.loads(line)
            if "result" in msg:
                return msg["result"]
            phase = msg["phase"]


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """The newest row of every module in a results file."""
    rows: dict[str, dict[str, Any]] = {}
    if path.exists():
        with open(path) as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    rows[row["file"]] = row
    return rows


def run(out: Path, results: Path, *, only: str | None, limit: int | None, timeout: float,
        memory_gb: float, seed: int, match: str | None, shuffle: int | None = None) -> None:
    with open(out / "index.jsonl") as f:
        index = [json.loads(line) for line in f]
    done = read_results(results)
    if only:
        todo = [row for row in index if done.get(row["file"], {}).get("kind") == only]
    else:
        todo = [row for row in index if row["file"] not in done]
    if match:
        todo = [row for row in todo if re.search(match, row["source"])]
    if shuffle is not None:  # a partial run then samples the whole corpus
        random.Random(shuffle).shuffle(todo)
    if limit:
        todo = todo[:limit]
    print(f"{len(todo)} modules to check ({len(done)} already in {results})", file=sys.stderr)
    worker = Worker(seed=seed, timeout=timeout, memory_gb=memory_gb)
    tally: collections.Counter[str] = collections.Counter()
    t0 = time.monotonic()
    try:
        with open(results, "a") as f:
            for k, row in enumerate(todo):
                s = time.monotonic()
                result = worker.check(out / "modules" / row["file"])
                result["wall"] = round(time.monotonic() - s, 2)
                f.write(json.dumps({**row, **result}) + "\n")
                f.flush()
                tally[result["kind"]] += 1
                if (k + 1) % 50 == 0:
                    rate = (k + 1) / (time.monotonic() - t0)
                    print(f"  {k + 1}/{len(todo)} ({rate:.2f}/s): " + ", ".join(
                        f"{kind} {c}" for kind, c in tally.most_common()), file=sys.stderr)
    finally:
        worker.stop()


# --- summary --------------------------------------------------------------------------------


def cause(row: dict[str, Any]) -> str:
    """A short key that groups modules failing for one reason."""
    kind = row["kind"]
    if kind == "differs":
        detail = row.get("detail", "")
        what = "shape/dtype" if detail.startswith("shape/dtype") else \
            "exact" if "(exact" in detail else "float"
        return f"{row.get('producer', '?')} ({what})"
    detail = row.get("detail", "") or row.get("stage", "")
    # "module.hlo:3:4: error: evaluating NAME (OPCODE) in computation C: WHY" -> "OPCODE: WHY"
    m = re.search(r"evaluating \S+ \(([\w-]+)\) in computation \S+: (.*)", detail)
    if m:
        detail = f"{m.group(1)}: {m.group(2)}"
        detail = re.sub(r"^custom-call: custom-call target '([^']*)'.*", r"custom-call target \1", detail)
        detail = re.sub(r" is not supported by the interpreter.*", " is not supported", detail)
    detail = re.sub(r"%?[\w.\-]*\d[\w.\-]*", "#", detail)  # names and numbers
    detail = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", detail)
    detail = re.sub(r"\[[^\]]*\]|\{[^}]*\}", "[…]", detail)
    return f"{row.get('stage', '')}: {detail[:110]}"


def summarize(rows: list[dict[str, Any]], *, show: str | None, examples: int, top: int) -> str:
    tally = collections.Counter(r["kind"] for r in rows)
    lines = [f"{len(rows)} modules checked"]
    for kind in KINDS:
        if tally[kind]:
            lines.append(f"  {tally[kind]:6d}  {kind:<15} {KINDS[kind]}")
    compared = tally["match"] + tally["differs"]
    if compared:
        lines.append(f"  hloscope equals XLA:CPU on {tally['match']} of the {compared} modules both ran "
                     f"({100 * tally['match'] / compared:.1f}%); hloscope fails on {tally['hloscope-error']} "
                     f"that XLA runs")
    for kind in ([show] if show else ["differs", "hloscope-error", "xla-crash", "timeout"]):
        group: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        for r in rows:
            if r["kind"] == kind:
                group[cause(r)].append(r)
        if not group:
            continue
        lines.append(f"\n{kind} by cause ({sum(map(len, group.values()))} modules, {len(group)} causes):")
        for key, members in sorted(group.items(), key=lambda kv: -len(kv[1]))[:top]:
            lines.append(f"  {len(members):5d}  {key}")
            for r in members[:examples]:
                lines.append(f"           {r['file']}  {r['source']}  {r.get('detail', '')[:160]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    rn = sub.add_parser("run", help="check the modules not yet in the results file")
    sm = sub.add_parser("summary", help="counts per kind, and the failing modules by cause")
    for p in (rn, sm):
        p.add_argument("out", type=Path, help="the folder tools/xla_corpus.py extract wrote")
        p.add_argument("--results", type=Path, help="JSON-lines results (default OUT/sweep.jsonl)")
    rn.add_argument("--only", metavar="KIND", choices=sorted(KINDS), help="check again the modules of this kind")
    rn.add_argument("--match", metavar="REGEX", help="only modules whose XLA source path matches")
    rn.add_argument("--limit", type=int, help="check at most N modules")
    rn.add_argument("--timeout", type=float, default=60.0, help="seconds per phase of a module (default 60)")
    rn.add_argument("--memory-gb", type=float, default=4.0, help="address-space limit of the worker (default 4)")
    rn.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    rn.add_argument("--shuffle", type=int, metavar="SEED", help="check the modules in a random order")
    sm.add_argument("--show", metavar="KIND", choices=sorted(KINDS), help="group only this kind")
    sm.add_argument("--examples", type=int, default=2, help="modules listed per cause")
    sm.add_argument("--top", type=int, default=40, help="causes listed per kind")
    wk = sub.add_parser("_worker")
    wk.add_argument("--seed", type=int, default=0)
    wk.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args(argv)
    if args.command == "_worker":
        _worker(args.seed, args.timeout)
        return 0
    results = args.results or args.out / "sweep.jsonl"
    if args.command == "run":
        run(args.out, results, only=args.only, limit=args.limit, timeout=args.timeout,
            memory_gb=args.memory_gb, seed=args.seed, match=args.match, shuffle=args.shuffle)
    print(summarize(list(read_results(results).values()), show=getattr(args, "show", None),
                    examples=getattr(args, "examples", 2), top=getattr(args, "top", 40)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

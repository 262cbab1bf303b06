"""A breadth sweep of the interpreter against XLA:CPU: many small jax programs, built
automatically, each run by XLA and by hloscope (pre- and post-optimization text), mismatches
and errors grouped by cause.

The oracle corpus (hloscope/testing/oracle/programs*.py) holds hand-written programs that the test suite
checks on every run; this sweep looks for what nobody has written yet. It walks jax.numpy,
jax.lax, jax.nn, jax.scipy.special, the linear algebra modules and jax.random over small shapes
and many dtypes, adds transformations (grad, vmap, jvp, scan, while, cond, switch, custom_vjp,
remat) and 8-device programs (pmap, shard_map, jit with NamedSharding under Shardy and GSPMD),
and compares every output leaf. A case jax refuses to trace (an op without that dtype) is
counted as ``skip``, not as a finding.

The catalogue is in ``oracle_sweep_cases.py`` (op by op) and ``oracle_sweep_programs.py``
(multi-device programs, long reductions and scans, small models). Each class of difference the
sweep found and hloscope fixed has a program in hloscope/testing/oracle/programs_sweep.py.

Usage (from the repository root, in the dev venv; about 15 minutes for every case)::

    python tools/oracle_sweep.py                       # every case; summary on stdout
    python tools/oracle_sweep.py --only 'nn\\.|lax\\.'   # names matching a regex
    python tools/oracle_sweep.py --list                # the case names
    python tools/oracle_sweep.py --jsonl out.jsonl --show 3
    python tools/oracle_sweep.py --only NAME --bisect pre   # the first instruction that differs

The device count is forced to 8 before jax is imported. The cases run in a child process that
is restarted after a case on which XLA itself hangs or aborts (reported as ``hang``/``crash``),
and each hloscope run has a time limit (``--timeout``).
"""
from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_force_host_platform_device_count=8").strip()

import argparse  # noqa: E402
import collections  # noqa: E402
import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402
import oracle_sweep_cases as cases_mod  # noqa: E402
import oracle_sweep_programs as programs_mod  # noqa: E402
from oracle_sweep_cases import CASES  # noqa: E402

import hloscope  # noqa: E402
from hloscope.interpret import RunOptions  # noqa: E402
from hloscope.interpret import run as hs_run  # noqa: E402
from hloscope.testing.cases import Case  # noqa: E402
from hloscope.xla import client as xla  # noqa: E402

warnings.filterwarnings("ignore")

# Tolerance per output dtype: XLA's transcendental kernels are polynomial approximations a few
# ulps from numpy's, so each dtype gets room for that and no more.
RTOL = {"float64": 1e-9, "float32": 2e-5, "complex64": 2e-5, "complex128": 1e-9,
        "float16": 2e-3, "bfloat16": 1.6e-2}
LOW_FLOAT_RTOL = 0.13  # fp8 and narrower: one ulp



def build_cases() -> list[Case]:
    """Every case of the catalogue, in a stable order."""
    if not CASES:
        for gen in (*cases_mod.GENERATORS, *programs_mod.GENERATORS):
            gen()
    return CASES


# --------------------------------------------------------------------------------------------
# Running and comparing


@dataclasses.dataclass
class Outcome:
    """What happened to one case at one stage: ok | mismatch | error | skip (jax refused it) |
    hang | crash (XLA hung or aborted while building the reference)."""

    name: str
    stage: str
    status: str
    detail: str = ""
    seconds: float = 0.0


class Timeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def handler(signum: int, frame: Any) -> None:
        raise Timeout(f"over {seconds:.0f}s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _leaves(v: Any) -> list[Any]:
    if isinstance(v, tuple | list):
        return [leaf for x in v for leaf in _leaves(x)]
    return [v]


def compare(got: Any, expected: list[Any], scale: float) -> str:
    """'' when every leaf matches, else what differs first (dtype-aware tolerances)."""
    g, e = _leaves(got), _leaves(expected)
    if len(g) != len(e):
        return f"{len(g)} leaves, expected {len(e)}"
    for i, (a, b) in enumerate(zip(g, e)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape and not (a.shape == () and b.shape == (1,)):
            return f"leaf {i}: shape {a.shape}, expected {b.shape}"
        a = a.reshape(b.shape)
        if a.dtype != b.dtype:
            return f"leaf {i}: dtype {a.dtype}, expected {b.dtype}"
        if a.dtype.kind in "biu":
            bad = a != b
            if bad.any():
                k = int(np.argmax(bad.ravel()))
                return (f"leaf {i} {b.dtype}: {int(bad.sum())}/{b.size} differ, e.g. got {a.ravel()[k]} "
                        f"expected {b.ravel()[k]}")
            continue
        rtol = RTOL.get(b.dtype.name, LOW_FLOAT_RTOL) * scale
        kind = b.dtype.kind
        if kind not in "fc":
            a, b = a.astype(np.float32), b.astype(np.float32)
        a64 = a.astype(np.complex128 if kind == "c" else np.float64)
        b64 = b.astype(np.complex128 if kind == "c" else np.float64)
        nan_a, nan_b = np.isnan(a64), np.isnan(b64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(a64 - b64)
            finite_scale = np.abs(b64[np.isfinite(b64)]).max(initial=0.0)
            ok = (a64 == b64) | (nan_a & nan_b) | (diff <= rtol * np.abs(b64) + rtol * 1e-2 * max(finite_scale, 1))
        if not ok.all():
            k = int(np.argmax(~ok.ravel()))
            return (f"leaf {i} {b.dtype.name}: {int((~ok).sum())}/{b.size} differ, e.g. got {a.ravel()[k]!r} "
                    f"expected {b.ravel()[k]!r}")
    return ""


_NORMALIZE = [
    (re.compile(r"%?[A-Za-z_][\w.-]*\.\d+(\.\d+)*"), "<name>"),
    (re.compile(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b"), "N"),
    (re.compile(r"\[[N, ]*\]"), "[..]"),
]


def cause(detail: str) -> str:
    """A grouping key: the error's first line with names and numbers blanked."""
    line = detail.strip().splitlines()[0] if detail.strip() else ""
    for pat, rep in _NORMALIZE:
        line = pat.sub(rep, line)
    return line[:160]


def _post_with_constants(c: Case, args: tuple[Any, ...], post: str) -> str:
    if "{...}" not in post:
        return post
    transform = jax.pmap if c.lowering == "pmap" else jax.jit
    kwargs = c.jit_options()
    if c.lowering == "jit":
        kwargs = {"keep_unused": True, **kwargs}
    with xla.use_shardy(c.shardy):
        module = transform(c.fn, **kwargs).lower(*args).compile().runtime_executable().hlo_modules()[0]
    options = xla.jaxlib_api().HloPrintOptions()
    options.print_large_constants = True
    return module.to_string(options)


def run_case(c: Case, timeout: float) -> list[Outcome]:
    start = time.perf_counter()
    jax.config.update("jax_enable_x64", c.x64)
    try:
        with time_limit(timeout * 2):
            args = c.inputs()
            kwargs = c.jit_options()
            art = xla.lower_jax(c.fn, *args, mode=c.lowering, shardy=c.shardy, dump=False, **kwargs)
            post = _post_with_constants(c, args, art.post_optimization_text)
    except Exception as e:
        return [Outcome(c.name, "lower", "skip", f"{type(e).__name__}: {e}", time.perf_counter() - start)]
    finally:
        jax.config.update("jax_enable_x64", False)
    results = []
    for stage, text in (("pre", art.pre_optimization_text), ("post", post)):
        t = time.perf_counter()
        try:
            with time_limit(timeout):
                module = hloscope.parse(text)
                # XLA's reference is each device's result, so a sharded module not partitioned
                # yet (the pre stage) is asked for its shards too; run's default there is the
                # global value (Note [Global programs]). Partitioned modules ignore the option.
                options = RunOptions(per_device=art.num_devices > 1)
                out = hs_run(module, art.inputs, replicas=art.num_replicas, partitions=art.num_partitions,
                             options=options)
            if art.num_devices == 1:
                detail = compare(out, art.outputs, c.tolerance_scale)
            else:
                details = [compare(out[k], art.outputs[k], c.tolerance_scale) for k in range(art.num_devices)]
                bad = [(k, d) for k, d in enumerate(details) if d]
                detail = f"device {bad[0][0]}: {bad[0][1]}" if bad else ""
            status = "mismatch" if detail else "ok"
        except Timeout as e:
            status, detail = "error", f"Timeout: {e}"
        except Exception as e:
            status, detail = "error", f"{type(e).__name__}: {e}"
        results.append(Outcome(c.name, stage, status, detail, time.perf_counter() - t))
    return results


def bisect(c: Case, stage: str = "pre") -> str:
    """The first entry instruction of ``c``'s module (one device) whose value hloscope computes
    differently from XLA:CPU, found by recompiling the module with each instruction as its root.
    For triage: it names the op to blame, with both values."""
    jax.config.update("jax_enable_x64", c.x64)
    args = c.inputs()
    kwargs = c.jit_options()
    art = xla.lower_jax(c.fn, *args, mode=c.lowering, shardy=c.shardy, dump=False, **kwargs)
    text = art.pre_optimization_text if stage == "pre" else _post_with_constants(c, args, art.post_optimization_text)
    module = hloscope.parse(text)
    entry = module.entry
    seen: dict[int, Any] = {}

    class Record:
        def on_instruction(self, inst: Any, operands: list[Any], result: Any) -> None:
            seen[id(inst)] = result

    hs_run(module, art.inputs, options=RunOptions(hooks=(Record(),), mode="per-device"))

    def without_layout(text: str) -> str:  # the header's entry_computation_layout={...} names the old root
        start = text.find("entry_computation_layout={")
        if start < 0:
            return text
        depth, i = 0, text.index("{", start)
        while True:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                return text[:start].rstrip(", ") + text[i + 1:]
            i += 1

    for inst in entry.instructions:
        if inst.opcode.text in ("parameter", "constant") or id(inst) not in seen or inst.shape.is_tuple:
            continue
        entry.root = inst
        variant = without_layout(module.to_text())
        try:
            expected = xla.compile_and_run(variant, art.inputs)
        except Exception as e:  # an instruction XLA cannot be rooted at (tokens, ...)
            print(f"  (skipped {inst.name}: {str(e).splitlines()[0][:100]})", file=sys.stderr)
            continue
        detail = compare(seen[id(inst)], [expected], c.tolerance_scale)
        if detail:
            line = inst.to_text() if hasattr(inst, "to_text") else inst.name
            return f"{inst.name}: {detail}\n  {line}\n  operands: {[o.name for o in inst.operands]}"
    return "no entry instruction differs"


def _family(name: str) -> str:
    """The case name without its dtype and variant suffixes: unary.exp.bf16 -> unary.exp."""
    return ".".join(name.split(".")[:2])


def summarize(outcomes: list[Outcome], show: int) -> str:
    by_status = collections.Counter((o.stage, o.status) for o in outcomes)
    cases = {o.name for o in outcomes}
    skipped = {o.name for o in outcomes if o.status == "skip"}
    lines = [f"{len(cases)} cases, {len(skipped)} skipped (jax refused to build them)"]
    for stage in ("pre", "post"):
        counts = {s: by_status[(stage, s)] for s in ("ok", "mismatch", "error")}
        lines.append(f"  {stage:4s}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    groups: dict[tuple[str, str], list[Outcome]] = collections.defaultdict(list)
    for o in outcomes:
        if o.status == "error":
            groups[("error", cause(o.detail))].append(o)
        elif o.status in ("hang", "crash"):
            groups[(o.status, _family(o.name))].append(o)
        elif o.status == "mismatch":
            groups[("mismatch", _family(o.name))].append(o)
    lines.append("")
    for (status, key), group in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
        stages = collections.Counter(o.stage for o in group)
        lines.append(f"[{status}] {key}  ({len(group)}: " + ", ".join(f"{k} {v}" for k, v in stages.items()) + ")")
        for o in group[:show]:
            lines.append(f"    {o.name} [{o.stage}] {o.detail.splitlines()[0][:220] if o.detail else ''}")
    return "\n".join(lines)


def run_named(name: str, timeout: float) -> list[dict[str, Any]]:
    """``run_case`` of the case called ``name``, as dicts (what the worker process sends back)."""
    case = next(c for c in build_cases() if c.name == name)
    return [dataclasses.asdict(o) for o in run_case(case, timeout)]


def _supervise(names: list[str], timeout: float, on_outcome: Callable[[Outcome], None]) -> None:
    """Run each case in a child process (``hloscope.testing.xla_worker``), replaced after a case
    it hangs or dies on.

    XLA itself can hang (jnp.gcd on INT_MIN loops forever) or abort, inside C++ where no Python
    signal reaches, so the only safe time limit is a process boundary."""
    from hloscope.testing.xla_worker import XlaWorker

    with XlaWorker(timeout=timeout * 4) as worker:
        for i, name in enumerate(names):
            if i and i % 100 == 0:
                print(f"... {i}/{len(names)}", file=sys.stderr, flush=True)
            status, value = worker.call("call", __file__, "run_named", name, timeout)
            if status == "ok":
                for row in value:
                    on_outcome(Outcome(**row))
            elif status == "timeout":
                on_outcome(Outcome(name, "lower", "hang", f"no progress in {timeout * 4:.0f}s"))
            else:  # the worker died ("abort") or the case raised outside its own guards ("error")
                on_outcome(Outcome(name, "lower", "crash", f"the worker failed: {value}"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=None, help="regex over case names")
    parser.add_argument("--exclude", default=None, help="regex over case names to leave out")
    parser.add_argument("--list", action="store_true", help="print the case names and exit")
    parser.add_argument("--jsonl", default=None, help="write one JSON line per outcome")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per stage")
    parser.add_argument("--show", type=int, default=3, help="examples per group")
    parser.add_argument("--bisect", default=None, metavar="STAGE",
                        help="pre|post: for each selected one-device case, the first instruction that differs")
    args = parser.parse_args(argv)
    build_cases()
    selected = [c for c in CASES if (not args.only or re.search(args.only, c.name))
                and not (args.exclude and re.search(args.exclude, c.name))]
    if args.list:
        print("\n".join(c.name for c in selected))
        return 0
    if args.bisect:
        for c in selected:
            print(f"{c.name}: {bisect(c, args.bisect)}")
        return 0
    outcomes: list[Outcome] = []
    sink = open(args.jsonl, "w") if args.jsonl else None  # noqa: SIM115

    def record(o: Outcome) -> None:
        outcomes.append(o)
        if sink:
            sink.write(json.dumps(dataclasses.asdict(o)) + "\n")
            sink.flush()

    start = time.perf_counter()
    try:
        _supervise([c.name for c in selected], args.timeout, record)
    finally:
        if sink:
            sink.close()
    print(summarize(outcomes, args.show))
    print(f"\n{time.perf_counter() - start:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

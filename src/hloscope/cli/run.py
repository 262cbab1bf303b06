"""The ``hloscope run`` command: evaluate a module with numpy on one device or many."""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from hloscope.cli.common import (
    EXIT_FOUND,
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_VERIFY,
    command,
    console,
    emit_json,
    input_file,
    non_negative_int,
    output_file,
    positive_int,
)

__all__: list[str] = []


def _configure_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", type=input_file, help="HLO text file ('-' reads standard input)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--inputs", metavar="IN.npz", type=input_file,
                     help="arrays arg0, arg1, ... (tuple parameters arg0.0 ...; device k only: d<k>.arg0)")
    src.add_argument("--random", type=non_negative_int, metavar="SEED", default=None,
                     help="deterministic random inputs from SEED (the default, with seed 0)")
    p.add_argument("--distribution", choices=("normal", "uniform", "positive"), default="normal",
                   help="how --random draws floats (default normal)")
    p.add_argument("--per-device-inputs", action="store_true",
                   help="draw different random inputs for each device (default: the same on every device)")
    p.add_argument("--cast-inputs", action="store_true",
                   help="convert --inputs arrays of another element type than their parameter's (f64 for f32, "
                        "int64 for s32...) when every value fits; without it such an input is refused")
    p.add_argument("--out", metavar="OUT.npz", type=output_file, help="write the outputs (out, out.0 ...; per device d<k>.out...)")
    p.add_argument("--float-env", choices=("auto", "xla-cpu", "xla-cpu-avx512", "gpu", "tpu", "ieee"),
                   default="auto",
                   help="the backend whose floating-point environment to follow (default auto: XLA:CPU "
                        "as it would compile on this machine, honouring XLA_FLAGS=--xla_cpu_max_isa). "
                        "xla-cpu: XLA:CPU reads and writes f32, bf16 and f64 denormals of arithmetic as "
                        "zero, so log(1e-40) is -inf, and rounds f64 -> f16 through f32 as on AVX2 hosts; "
                        "xla-cpu-avx512: XLA:CPU on an AVX-512 host, which rounds f64 -> f16 once; "
                        "gpu: GPU kernels flush f32/bf16 denormals (ftz) but keep f64 ones; "
                        "tpu: TPUs have no f32 denormals; ieee: keep every denormal")
    p.add_argument("--per-device", action="store_true",
                   help="for a sharded module not partitioned yet (pmap, shard_map, sharded jit before "
                        "XLA's partitioner): write each device's shard of the outputs (d<k>.out...) "
                        "instead of the global arrays the module declares")
    p.add_argument("--replicas", type=positive_int, help="number of replicas (default: the module's)")
    p.add_argument("--partitions", type=positive_int, help="number of partitions (default: the module's)")
    p.add_argument("--fill-elided", choices=("zeros", "random"),
                   help="run modules whose large constants were elided ({...}) with these values")
    p.add_argument("--check-xla", action="store_true",
                   help="also run the module on XLA:CPU (needs jax) and print the largest difference per output "
                        "and the worst over all; when XLA:CPU cannot run the module, hloscope's results are "
                        "still printed (and written) with XLA's reason, and the exit code is 1")
    p.add_argument("--find-nonfinite", action="store_true",
                   help="stop at the first instruction whose result holds a NaN or an infinity while its "
                        "operands held none, and say where it is (devices, loop iterations, the instruction "
                        "inside a fusion, op_name and source line) and what its operands held; exit status "
                        "4 when one is found")
    p.add_argument("--json", action="store_true", help="print a JSON summary of the outputs")
    p.add_argument("--force", action="store_true",
                   help="run even when the memory analysis predicts more memory than is available")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="where the devices run: this process (default), or Ray actors, each holding a slice "
                        "of the device grid (pip install 'hloscope[ray]')")
    p.add_argument("--ray-address", metavar="ADDR",
                   help="with --executor ray: a running cluster ('auto' or host:port, as `ray start --head` "
                        "prints); default: a local Ray instance started for this run")
    p.add_argument("--devices-per-worker", type=positive_int, metavar="K",
                   help="with --executor ray: devices each Ray worker holds (default: the grid spread over "
                        "the cluster's CPUs)")


def _stats(a: np.ndarray) -> dict[str, Any]:
    arr = np.asarray(a)
    info: dict[str, Any] = {"shape": list(arr.shape), "dtype": str(arr.dtype)}
    if arr.size and arr.dtype.kind in "fc" or arr.dtype.name in ("bfloat16",) or arr.dtype.name.startswith("float"):
        f = arr.astype(np.complex128 if arr.dtype.kind == "c" else np.float64)
        finite = np.isfinite(f)
        info.update(finite=bool(finite.all()), nan=int(np.isnan(f).sum()))
        if finite.any():
            g = np.abs(f[finite]) if arr.dtype.kind == "c" else f[finite]
            info.update(min=float(g.min()), max=float(g.max()), mean=float(g.mean()))
    elif arr.size and arr.dtype.kind in "iub":
        info.update(min=int(arr.min()), max=int(arr.max()))
    return info


_STOPPED = object()  # the run ended early: the non-finite value is found


def _run_watched(run: Callable[..., Any], m: Any, inputs: Any, r: int, p: int, options: Any, donate: bool,
                 executor: Any) -> Any:
    """``run(...)``, or ``_STOPPED`` when an observer ended it (``--find-nonfinite``)."""
    from hloscope.errors import EvaluationStopped

    try:
        return run(m, inputs, replicas=r, partitions=p, options=options, donate=donate, executor=executor)
    except EvaluationStopped:
        return _STOPPED


def _report_nonfinite(args: argparse.Namespace, m: Any, r: int, p: int, elapsed: float, first: Any) -> int:
    """Print what ``--find-nonfinite`` found when it stopped the run (no outputs then); exit
    status 4 (EXIT_FOUND)."""
    if args.json:
        emit_json({"module": m.name, "replicas": r, "partitions": p, "seconds": elapsed, "stopped": True,
                   "first_nonfinite": None if first is None else first.to_json(), "outputs": None})
    else:
        sys.stdout.write((first.describe() if first is not None else "the run stayed finite") + "\n")
        sys.stdout.write(f"(the run stopped there after {elapsed:.2f} s, so it has no outputs"
                         f"{'; none written to ' + args.out if args.out else ''})\n")
    return EXIT_OK if first is None else EXIT_FOUND


def _max_difference(ours: np.ndarray, theirs: np.ndarray) -> float:
    a = np.asarray(ours)
    b = np.asarray(theirs)
    if a.shape != b.shape:
        return float("inf")
    if a.dtype.kind in "iub" or a.dtype == np.bool_:
        return float(np.abs(a.astype(np.int64) - b.astype(np.int64)).max()) if a.size else 0.0
    fa = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    fb = b.astype(np.complex128 if b.dtype.kind == "c" else np.float64)
    same_nan = np.isnan(fa) & np.isnan(fb)
    diff = np.where(same_nan, 0.0, np.abs(fa - fb))
    return float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0


@command("run", "evaluate a module with numpy on one device or many (replicas x partitions)")(_configure_run)
def _run(args: argparse.Namespace) -> int:
    from hloscope.api import load
    from hloscope.interpret import RunOptions, run
    from hloscope.interpret.inputs import inputs_from_mapping, outputs_to_mapping, random_inputs
    from hloscope.interpret.npz_io import load_npz, save_npz
    from hloscope.interpret.run import infer_grid, is_global_run, shards_of
    from hloscope.ir.verifier import verify

    m = load(args.file)
    r0, p0, grid_note = infer_grid(m)
    r = args.replicas or r0
    p = args.partitions or p0
    n = r * p
    if args.replicas or args.partitions:
        grid_note = None
    # Run only what `hloscope verify` accepts, on the grid we run on: a module it rejects
    # would give values of other shapes than it declares, or fail somewhere inside.
    errors = [d for d in verify(m, replicas=r, partitions=p) if d.severity == "error"]
    if errors:
        for d in errors:
            sys.stderr.write(str(d) + "\n")
        sys.stderr.write(f"{m.name}: {len(errors)} verifier error(s) on {r} replica(s) x {p} partition(s); "
                         "not running it (see `hloscope verify`)\n")
        return EXIT_VERIFY
    if grid_note is not None and not args.json:
        sys.stderr.write(f"note: {grid_note}\n")
    if args.executor == "local" and (args.ray_address or args.devices_per_worker):
        sys.stderr.write("hloscope run: --ray-address and --devices-per-worker need --executor ray\n")
        return EXIT_USAGE
    if args.executor == "ray" and args.find_nonfinite:
        # The watch observes every value as it is made, in this process (Note [Observers]).
        sys.stderr.write("hloscope run: --find-nonfinite runs the devices in this process; leave out --executor ray\n")
        return EXIT_USAGE
    executor = None
    if args.executor == "ray":
        # The memory guard is per worker (Note [Ray executor]): a worker's devices against its node.
        from hloscope.api import ray_executor

        executor = ray_executor(m, args.ray_address, args.devices_per_worker, force=args.force,
                                fill_elided=args.fill_elided)
    elif not args.force:
        # Before any input or value is allocated: a run that cannot fit is refused with the
        # figures and what would fit, instead of swapping the machine to a halt.
        from hloscope.api import NotEnoughMemoryError, check_run_memory

        try:
            budget = check_run_memory(m, n, fill_elided=args.fill_elided)
        except Exception as e:  # an analysis gap must not stop a run the interpreter can do
            sys.stderr.write(f"hloscope run: memory check skipped ({type(e).__name__}: {e})\n")
        else:
            if not budget.fits:
                raise NotEnoughMemoryError(budget.message())
    if args.inputs:
        inputs = inputs_from_mapping(m, load_npz(args.inputs), n, cast=args.cast_inputs)
        per_device = n > 1 and len(inputs) == n and all(isinstance(x, list) for x in inputs)
    else:
        per_device = n > 1 and args.per_device_inputs
        if executor is not None and not args.check_xla:
            # Each worker draws its own devices' inputs, the same arrays (Note [Ray executor]).
            from hloscope.interpret.inputs import RandomInputs

            inputs = RandomInputs(args.random or 0, args.distribution, per_device)
        else:
            inputs = random_inputs(m, args.random or 0, args.distribution, num_devices=n, per_device=per_device)
    if args.out:
        from hloscope.fileio import check_not_input

        check_not_input(args.out, [args.file] + ([args.inputs] if args.inputs else []))

    progress_cb: Callable[[Any], None] | None = None
    progress_ctx = None
    if sys.stderr.isatty() and not args.json:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        progress_ctx = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                console=__import__("rich.console").console.Console(stderr=True), transient=True)
        task = progress_ctx.add_task("running")

        def show_progress(pr: Any) -> None:
            progress_ctx.update(task, description=f"running: {pr.instructions:,} instructions, "
                                                  f"{pr.loop_iterations:,} loop iterations")

        progress_cb = show_progress

    # A global program (a sharded module not partitioned yet) runs once, on global arrays; its
    # per-device shards (--per-device) are cut from the global outputs afterwards.
    global_run = n > 1 and is_global_run(m, inputs if isinstance(inputs, list) else [], n)
    options = RunOptions(fill_elided=args.fill_elided, seed=args.random or 0, progress=progress_cb,
                         progress_every=5_000, per_device=args.per_device and not global_run,
                         float_env=args.float_env)
    watch = None
    if args.find_nonfinite:  # an observer: the run computes what it computes without it
        from hloscope.numerics.nonfinite import NonfiniteWatch, input_records

        assert isinstance(inputs, list)  # drawn here: --find-nonfinite refuses --executor ray
        inputs_held = input_records(m, inputs, n)
        watch = NonfiniteWatch(m, r, p)
        watch.global_run = global_run
        options = dataclasses.replace(options, hooks=[watch])
    # The inputs are ours: hand them over (outputs reuse their memory), unless XLA needs them after.
    t0 = time.perf_counter()
    if progress_ctx is not None:
        with progress_ctx:
            results = _run_watched(run, m, inputs, r, p, options, not args.check_xla, executor)
    else:
        results = _run_watched(run, m, inputs, r, p, options, not args.check_xla, executor)
    elapsed = time.perf_counter() - t0
    first = None
    if watch is not None:
        from hloscope.numerics.nonfinite import conclude

        first = conclude(watch, inputs_held)
        if results is _STOPPED:
            return _report_nonfinite(args, m, r, p, elapsed, first)
    if global_run:
        outputs = outputs_to_mapping(shards_of(m, results, n), n) if args.per_device else outputs_to_mapping(results, 1)
    else:
        outputs = outputs_to_mapping(results, n)
    if args.out:
        save_npz(args.out, outputs)

    check = _check_on_xla(m, inputs, results, r, p, global_run, per_device) if args.check_xla else None
    del inputs, results
    if args.json:
        emit_json({"module": m.name, "replicas": r, "partitions": p, "seconds": elapsed,
                   **({"ray": last.to_json()} if (last := getattr(executor, "last_run", None)) else {}),
                   **({"global_program": True} if global_run else {}),
                   **({"grid_note": grid_note} if grid_note else {}),
                   **({"first_nonfinite": None if first is None else first.to_json()} if watch is not None else {}),
                   **({"xla": check.summary()} if check is not None else {}),
                   "outputs": {k: {**_stats(v), **({"max_abs_difference_vs_xla": check.difference(k)}
                                                   if check is not None and check.diffs else {})}
                               for k, v in outputs.items()}})
        if check is not None and check.error is not None:
            return EXIT_INPUT
        return EXIT_OK if first is None else EXIT_FOUND
    from rich.table import Table

    con = console()
    last = getattr(executor, "last_run", None)
    on = f" on {len(last.workers)} Ray worker(s)" if last is not None else ""
    what = " (a global program: the outputs are the global arrays it declares)" if global_run and not args.per_device else ""
    con.print(f"[bold]{m.name}[/bold]: ran on {r} replica(s) x {p} partition(s){on} in {elapsed:.2f} s{what}")
    diffs = check is not None and bool(check.diffs)
    t = Table(title_justify="left")
    for col in ("output", "shape", "dtype", "min", "max", "mean", "finite") + (("max |hloscope - XLA|",) if diffs else ()):
        t.add_column(col, justify="left" if col in ("output", "shape", "dtype") else "right")
    keys = list(outputs)
    shown = keys if len(keys) <= 60 else keys[:60]
    for key in shown:
        s = _stats(outputs[key])
        row = [key, str(tuple(s["shape"])), s["dtype"]]
        row += [f"{s[k]:.6g}" if k in s else "" for k in ("min", "max", "mean")]
        row.append("" if "finite" not in s else ("yes" if s["finite"] else f"no ({s['nan']} NaN)"))
        if diffs:
            assert check is not None
            row.append(f"{check.difference(key):.3g}")
        t.add_row(*row)
    con.print(t)
    if len(keys) > len(shown):
        con.print(f"... and {len(keys) - len(shown)} more outputs (use --out to save them all)")
    if args.out:
        con.print(f"outputs written to {args.out}")
    if watch is not None:
        con.print(first.describe() if first is not None else "no NaN or infinity: the run stayed finite",
                  markup=False, highlight=False)
    if check is not None and check.error is not None:
        # hloscope's results stand (printed above, written to --out); the check could not be made.
        sys.stderr.write(f"{check.error}; nothing was compared\n")
        return EXIT_INPUT
    if check is not None:
        for line in check.lines():
            con.print(line, markup=False, highlight=False)
    return EXIT_OK if first is None else EXIT_FOUND


class _XlaCheck:
    """What ``--check-xla`` found: XLA's largest difference from hloscope per output (keyed as
    hloscope's outputs are, or by the global names for a global program), how XLA:CPU had to
    rewrite the module, or why it could not run it."""

    def __init__(self, diffs: dict[str, float], rewrite: str | None, custom_calls: dict[str, int],
                 error: str | None, global_run: bool) -> None:
        self.diffs = diffs
        self.rewrite = rewrite
        self.custom_calls = custom_calls
        self.error = error
        self.global_run = global_run

    def difference(self, key: str) -> float:
        """The difference of output ``key`` (a device's shard of a global output: the global one's)."""
        if key in self.diffs:
            return self.diffs[key]
        return self.diffs.get(key.split(".", 1)[-1], float("inf"))

    def worst(self) -> tuple[str, float] | None:
        if not self.diffs:
            return None
        key = max(self.diffs, key=lambda k: (self.diffs[k] != self.diffs[k], self.diffs[k]))
        return key, self.diffs[key]

    def summary(self) -> dict[str, Any]:
        """The JSON twin of ``lines``."""
        worst = self.worst()
        return {"rewrite": self.rewrite, "custom_calls": self.custom_calls, "error": self.error,
                **({"compared": "global outputs"} if self.global_run else {}),
                "worst": None if worst is None else {"output": worst[0], "max_abs_difference": worst[1],
                                                     "outputs_compared": len(self.diffs)}}

    def lines(self) -> list[str]:
        """What the table does not say, when XLA ran the module: how it ran it and the one
        worst difference over every output."""
        out = ["XLA:CPU ran the module as it is" if self.rewrite is None else
               f"XLA:CPU ran the module rewritten for it: {self.rewrite}"]
        if self.global_run:
            out.append("XLA's partitioner split it; its outputs were put back together into the global arrays")
        worst = self.worst()
        if worst is not None:
            out.append(f"worst |hloscope - XLA| over {len(self.diffs)} outputs: {worst[1]:.3g} ({worst[0]})")
        return out


def _check_on_xla(m: Any, inputs: Any, results: Any, r: int, p: int, global_run: bool,
                  per_device: bool) -> _XlaCheck:
    """Run ``m`` on XLA:CPU in a child process on the same ``inputs`` and compare with
    hloscope's ``results`` (global outputs for a global program, Note [Global runs on XLA:CPU]).
    XLA's refusal or crash is reported, not raised: hloscope's own results stand."""
    from hloscope.errors import HloscopeError
    from hloscope.interpret.inputs import outputs_to_mapping
    from hloscope.interpret.npz_io import flatten_named
    from hloscope.interpret.run import global_arguments
    from hloscope.xla.worker import run_on_xla

    n = r * p
    try:
        if global_run:
            xla_run = run_on_xla(m.to_text(), global_arguments(m, inputs, n), replicas=r, partitions=p,
                                 per_device=False, global_program=True)
        else:
            xla_run = run_on_xla(m.to_text(), inputs, replicas=r, partitions=p, per_device=per_device)
    except HloscopeError as e:
        return _XlaCheck({}, None, {}, str(e).splitlines()[0] if str(e) else type(e).__name__, global_run)
    theirs = xla_run.outputs
    if n == 1 or global_run:
        ref = flatten_named("out", theirs)
        ours = flatten_named("out", results)
    else:
        ref = outputs_to_mapping(theirs, n)
        ours = outputs_to_mapping(results, n)
    diffs = {key: _max_difference(v, ref[key]) if key in ref else float("inf") for key, v in ours.items()}
    return _XlaCheck(diffs, xla_run.rewrite, xla_run.custom_calls, None, global_run)

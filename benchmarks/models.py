"""The models tier as a user meets it: every command on every model, timed, each checked against
what jax and XLA say of the same program.

Rows are the tier's programs (``hloscope.testing.models``: real flax/optax training steps on 1
and 8 devices), each before (``pre``) and after (``post``) XLA's optimizations, and with
``--xla-dir`` XLA's LLM benchmark modules (analyses and report only: they are GPU steps of
billions of parameters). Each cell is one command run as a user runs it (``hloscope ...`` in a
child process; the seconds include Python's start, about 0.5 s) and its agreement:

    summary      instruction count = XLA's parser's
    verify       no diagnostics
    print        XLA reads hloscope's printing back as the same module (canonical text equal)
    cost         FLOPs, transcendentals, bytes = XLA's cost analysis (post: compiled.cost_analysis();
                 pre and LLM modules: XLA's HloCostAnalysis of the text), up to XLA's float sum
    memory       post: argument, output, alias and temp bytes = compiled.memory_analysis()
    run          outputs = jax's for the same inputs within the tier's rtol/atol (the share of the
                 tolerance the worst element uses)
    check-xla    ``run --check-xla`` succeeds; its worst difference
    from_jax     ``hs.from_jax(step, *args, **jit options).compare().ok`` (post row)
    collectives, estimate, report, graph, diff (pre vs post): the command succeeds

A cell reads ``0.84 ok``, ``0.84 ran`` (nothing of jax's to compare), ``0.84 DIFF (...)`` or
``FAIL (...)``. ``--markdown`` prints the table for the README.

Run: ``python benchmarks/models.py [--models gpt_dp8,...] [--commands cost,memory,...]
[--xla-dir .cache/xla_bench] [--markdown] [--json out.json]``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ["summary", "verify", "print", "cost", "memory", "collectives", "estimate", "report",
            "graph", "diff", "run", "check-xla", "from_jax"]
LLM_COMMANDS = ["summary", "verify", "print", "cost", "memory", "collectives", "estimate", "report",
                "graph"]


@dataclass
class Cell:
    seconds: float | None
    status: str  # ok, ran, DIFF, FAIL, -
    detail: str = ""

    def text(self) -> str:
        if self.status == "-":
            return "-"
        head = "" if self.seconds is None else f"{self.seconds:.2f} "
        return f"{head}{self.status}" + (f" ({self.detail})" if self.detail else "")


def _hloscope(argv: list[str], timeout: float = 1800) -> tuple[float, int, str, str]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "hloscope", *argv], capture_output=True, text=True,
                          timeout=timeout)
    return time.perf_counter() - t0, proc.returncode, proc.stdout, proc.stderr


def _last_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else "no message")[:90]


def _float_sum_equal(ours: float, xla: float, terms: int) -> bool:
    # XLA adds each instruction's figure into a float: equal up to one rounding per term.
    return abs(ours - xla) <= terms * 2.0 ** -24 * abs(xla) + 1


def _cost_cell(path: Path, xla: dict[str, Any] | None, terms: int) -> Cell:
    sec, code, out, err = _hloscope(["cost", "--json", str(path)])
    if code:
        return Cell(sec, "FAIL", _last_line(err))
    if not xla or "__error__" in xla:
        return Cell(sec, "ran")
    data = json.loads(out)
    bad = [k for k, x in (("flops", "flops"), ("transcendentals", "transcendentals"),
                          ("bytes_accessed", "bytes accessed"))
           if x in xla and not _float_sum_equal(data[k], xla[x], terms)]
    if bad:
        return Cell(sec, "DIFF", ", ".join(f"{k} {data[k]:.4g} vs {xla[x]:.4g}" for k, x in
                                           (("flops", "flops"), ("transcendentals", "transcendentals"),
                                            ("bytes_accessed", "bytes accessed")) if k in bad))
    return Cell(sec, "ok")


def _memory_cell(path: Path, xla: dict[str, Any] | None) -> Cell:
    sec, code, out, err = _hloscope(["memory", "--json", str(path)])
    if code:
        return Cell(sec, "FAIL", _last_line(err))
    if not xla:
        return Cell(sec, "ran")
    data = json.loads(out)
    pairs = [("argument_bytes", "argument_size_in_bytes"), ("output_bytes", "output_size_in_bytes"),
             ("alias_bytes", "alias_size_in_bytes"), ("temp_bytes", "temp_size_in_bytes")]
    bad = [f"{k} {data[k]} vs {xla[x]}" for k, x in pairs if data.get(k) != xla.get(x)]
    return Cell(sec, "DIFF", "; ".join(bad)) if bad else Cell(sec, "ok")


def _simple_cell(argv: list[str]) -> Cell:
    sec, code, _, err = _hloscope(argv)
    return Cell(sec, "FAIL", _last_line(err)) if code else Cell(sec, "ran")


def _summary_cell(path: Path, text: str) -> Cell:
    from hloscope.xla.client import instruction_opcodes

    sec, code, out, err = _hloscope(["summary", "--json", str(path)])
    if code:
        return Cell(sec, "FAIL", _last_line(err))
    xla = sum(len(v) for v in instruction_opcodes(text).values())
    ours = json.loads(out)["instructions"]
    return Cell(sec, "ok") if ours == xla else Cell(sec, "DIFF", f"{ours} vs XLA's {xla}")


def _verify_cell(path: Path) -> Cell:
    sec, code, out, err = _hloscope(["verify", "--json", str(path)])
    if code not in (0, 3):
        return Cell(sec, "FAIL", _last_line(err))
    data = json.loads(out)
    return Cell(sec, "ok") if data["ok"] else Cell(sec, "DIFF", f"{len(data['diagnostics'])} diagnostics")


def _print_cell(path: Path, work: Path) -> Cell:
    from hloscope.xla.client import xla_canonical_text

    out = work / f"{path.stem}.printed.hlo"
    sec, code, _, err = _hloscope(["print", str(path), "-o", str(out)])
    if code:
        return Cell(sec, "FAIL", _last_line(err))
    same = xla_canonical_text(out.read_text()) == xla_canonical_text(path.read_text())
    return Cell(sec, "ok") if same else Cell(sec, "DIFF", "XLA reads another module")


def _tolerances_used(got: Any, expected: Any, rtol: float, atol: float) -> float:
    """The largest ``|got - expected| / (atol + rtol * |expected|)`` over every element: at most
    1 is what the models tier's tests accept (``np.testing.assert_allclose``'s rule); a plain
    relative error would call a difference of 1e-7 on a gradient of 1e-7 a 100% miss."""
    import numpy as np

    def leaves(v: Any) -> list[Any]:
        return [x for e in v for x in leaves(e)] if isinstance(v, list | tuple) else [v]

    worst = 0.0
    for a, b in zip(leaves(got), leaves(expected), strict=True):
        a, b = np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64)
        if a.size == b.size == 1:  # jax keeps a replicated scalar's shard as (1,)
            a, b = a.reshape(()), b.reshape(())
        if a.shape != b.shape:
            return float("inf")
        if a.size:
            worst = max(worst, float(np.max(np.abs(a - b) / (atol + rtol * np.abs(b)))))
    return worst


def _run_cell(case: Any, stage: str, path: Path, work: Path) -> Cell:
    from hloscope.interpret.npz_io import device_values, load_npz, save_npz

    whole = stage == "pre" and case.num_devices > 1
    inputs, out = work / f"{case.name}.{stage}.in.npz", work / f"{case.name}.{stage}.out.npz"
    save_npz(inputs, load_npz(case.path / ("global_inputs.npz" if whole else "inputs.npz")))
    sec, code, _, err = _hloscope(["run", str(path), "--inputs", str(inputs), "--out", str(out)])
    if code:
        return Cell(sec, "FAIL", _last_line(err))
    n = 1 if whole else case.num_devices
    got = device_values(load_npz(out), "out", n)
    expected = case.global_outputs() if whole else case.outputs()
    used = _tolerances_used(got, expected, case.meta["rtol"], case.meta["atol"])
    return Cell(sec, "ok" if used <= 1 else "DIFF", f"{used:.2f} of the tolerance")


def _check_xla_cell(case: Any, stage: str, path: Path, work: Path) -> Cell:
    from hloscope.interpret.npz_io import load_npz, save_npz

    whole = stage == "pre" and case.num_devices > 1
    inputs = work / f"{case.name}.{stage}.in.npz"
    save_npz(inputs, load_npz(case.path / ("global_inputs.npz" if whole else "inputs.npz")))
    sec, code, out, err = _hloscope(["run", str(path), "--inputs", str(inputs), "--check-xla", "--json"])
    if code:
        return Cell(sec, "FAIL", _last_line(err))
    data = json.loads(out)
    diffs = [v.get("max_abs_difference_vs_xla") for v in data.get("outputs", {}).values()]
    diffs = [d for d in diffs if d is not None]
    if not diffs:
        reason = (data.get("xla") or {}).get("error") or "no comparison"
        return Cell(sec, "DIFF", str(reason)[:90])
    worst = max(diffs)
    return Cell(sec, "ok" if worst <= 1e-2 else "DIFF", f"worst {worst:.1e}")


def _from_jax_cell(name: str) -> Cell:
    import hloscope as hs
    from hloscope.testing.cases import jax_config
    from hloscope.testing.models.programs import by_name

    case = by_name(name)
    t0 = time.perf_counter()
    try:
        with jax_config(case.config):
            fn = case.fn
            kwargs = case.jit_options()
            if case.lowering == "pmap":
                return Cell(None, "-")
            mods = hs.from_jax(fn, *case.inputs(), **kwargs)
            cmp = mods.compare()
    except Exception as e:  # a row of the table, not a crash of the benchmark
        return Cell(time.perf_counter() - t0, "FAIL", f"{type(e).__name__}: {str(e)[:70]}")
    sec = time.perf_counter() - t0
    if cmp.ok:
        return Cell(sec, "ok")
    return Cell(sec, "DIFF", ", ".join(f.name for f in cmp.mismatches))


@dataclass
class Target:
    """One module of a row: its file, the model case it came from (None for XLA's modules) and
    XLA's cost analysis of it."""

    path: Path
    stage: str  # pre, post, or xla for XLA's benchmark modules
    work: Path
    xla_cost: dict[str, Any] | None
    case: Any = None
    pre: Path | None = None  # the model's pre module, for diff

    @property
    def text(self) -> str:
        return self.path.read_text()


def _cell(cmd: str, t: Target) -> Cell:
    path, out = t.path, t.work / t.path.stem
    if cmd == "summary":
        return _summary_cell(path, t.text)
    if cmd == "verify":
        return _verify_cell(path)
    if cmd == "print":
        return _print_cell(path, t.work)
    if cmd == "cost":
        return _cost_cell(path, t.xla_cost, t.text.count("\n"))
    if cmd == "memory":
        return _memory_cell(path, t.case.json("memory.json") if t.stage == "post" else None)
    if cmd == "collectives":
        return _simple_cell(["collectives", "--json", str(path)])
    if cmd == "estimate":
        hardware = "cpu" if t.case is not None else "h100-sxm"
        return _simple_cell(["estimate", "--hardware", hardware, "--json", str(path)])
    if cmd == "report":
        return _simple_cell(["report", str(path), "-o", f"{out}.html"])
    if cmd == "graph":
        return _simple_cell(["graph", str(path), "-o", f"{out}.svg"])
    if t.case is None:
        return Cell(None, "-")  # XLA's LLM modules: analyses and report only
    if cmd == "diff":
        return (_simple_cell(["diff", "--json", str(t.pre), str(path)])
                if t.stage == "post" and t.pre is not None else Cell(None, "-"))
    if cmd == "run":
        return _run_cell(t.case, t.stage, path, t.work)
    if cmd == "check-xla":
        return _check_xla_cell(t.case, t.stage, path, t.work)
    if cmd == "from_jax":
        return _from_jax_cell(t.case.name) if t.stage == "post" else Cell(None, "-")
    raise SystemExit(f"unknown command {cmd}")


def _row(label: str, t: Target, commands: list[str]) -> tuple[str, dict[str, Cell]]:
    cells: dict[str, Cell] = {}
    for cmd in commands:
        try:
            cells[cmd] = _cell(cmd, t)
        except subprocess.TimeoutExpired:
            cells[cmd] = Cell(None, "FAIL", "timed out")
        print(f"  {label} {cmd}: {cells[cmd].text()}", file=sys.stderr, flush=True)
    return label, cells


def model_rows(names: list[str], commands: list[str], work: Path) -> list[tuple[str, dict[str, Cell]]]:
    from hloscope.testing.models import build

    rows = []
    for name in names:
        case = build(name)
        pre, post = work / f"{name}.pre.hlo", work / f"{name}.post.hlo"
        pre.write_text(case.pre_text)
        post.write_text(case.post_text)
        rows.append(_row(f"{name} pre", Target(pre, "pre", work, case.json("cost_pre.json"), case), commands))
        rows.append(_row(f"{name} post", Target(post, "post", work, case.json("cost_post.json")["compiled"],
                                                 case, pre), commands))
    return rows


def llm_rows(xla_dir: Path, files: list[str], commands: list[str], work: Path) -> list[tuple[str, dict[str, Cell]]]:
    from hloscope.xla.client import cost_analysis

    rows = []
    for fname in files:
        path = xla_dir / fname
        if not path.exists():
            continue
        try:
            xla_cost: dict[str, Any] | None = cost_analysis(path.read_text())
        except Exception as e:
            xla_cost = {"__error__": str(e)}
        rows.append(_row(fname.removesuffix(".hlo"), Target(path, "xla", work, xla_cost), commands))
    return rows


def render(rows: list[tuple[str, dict[str, Cell]]], commands: list[str], markdown: bool) -> str:
    header = ["module"] + commands
    table = [[name] + [cells[c].text() if c in cells else "-" for c in commands] for name, cells in rows]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in table]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [header, *table])


def main() -> int:
    from hloscope.testing.models import LLM_MODULES, MODEL_NAMES, xla_bench_dir

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODEL_NAMES))
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--xla-dir", type=Path, default=None, help="XLA's benchmark modules (default: "
                    "$HLOSCOPE_XLA_BENCH or .cache/xla_bench when present; 'none' skips them)")
    ap.add_argument("--xla-modules", default=",".join(LLM_MODULES))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the cells as JSON")
    args = ap.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    commands = [c for c in args.commands.split(",") if c]
    names = [n for n in args.models.split(",") if n and n != "none"]
    with tempfile.TemporaryDirectory(prefix="hloscope-models-") as d:
        work = Path(d)
        rows = model_rows(names, commands, work)
        xla_dir = None if str(args.xla_dir) == "none" else (args.xla_dir or xla_bench_dir())
        if xla_dir is not None:
            rows += llm_rows(xla_dir, args.xla_modules.split(","), [c for c in commands if c in LLM_COMMANDS], work)
    print(render(rows, commands, args.markdown))
    if args.json:
        args.json.write_text(json.dumps({name: {c: vars(cell) for c, cell in cells.items()} for name, cells in rows},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

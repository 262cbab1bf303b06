"""The Ray executor and sweeps: where the time goes, and what would scale on a cluster.

``run``: seed 003 (the Trax LSTM step) on 8 replicas with different data per replica
(``--per-device-inputs``), in this process's executor and on 1, 2 and 4 workers of a local Ray
instance, each as its own ``hloscope run ... --json`` child: wall seconds (Ray's start
included, and without it), the client's peak RSS (``os.wait4``), each worker's peak RSS (its
``ru_maxrss``) and their total, and the exchange's figures per cross-worker collective (data
moved, seconds moving it, combining, and waiting for the slowest worker). Every Ray run's
outputs are compared bit for bit with the local run's.

``sweep``: XLA's test modules (``tools/xla_corpus.py extract ... DIR``) swept on 1 process,
``--jobs 2`` and Ray tasks: modules per second (Ray's start included; the figure without it
is modules / (wall - start)).

The machine is shared: the load average is printed with each figure; compare only figures
of one run. Usage::

    python benchmarks/ray_run.py run [--workers 1,2,4] [--seed PATH] [--no-local]
    python benchmarks/ray_run.py sweep --xla-dir /tmp/xla_hlo [--limit N] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SEED003 = ROOT / "tests" / "data" / "seeds" / "003_83a80cec1e7cc5e6.txt"
GB = 1 << 30


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} {five:.1f} {fifteen:.1f}"


def _child(cmd: list[str]) -> tuple[float, int, str, str, int]:
    """Run ``cmd``; (wall seconds, peak RSS bytes of the child itself, stdout, stderr, exit code)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        return wall, usage.ru_maxrss * 1024, out.read().decode(), err.read().decode(), os.waitstatus_to_exitcode(status)


def _run(seed: Path, out: Path, workers: int | None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "hloscope", "run", str(seed), "--per-device-inputs", "--random", "0", "--json",
           "--out", str(out)]
    if workers is not None:
        cmd += ["--executor", "ray", "--devices-per-worker", str(8 // workers)]
    load = _load()
    wall, rss, stdout, stderr, code = _child(cmd)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({code}):\n{stderr[-3000:]}")
    report = json.loads(stdout)
    row: dict[str, Any] = {"workers": workers or "local", "wall_s": wall, "run_s": report["seconds"],
                           "client_peak_rss_gb": rss / GB, "load": load}
    ray = report.get("ray")
    if ray:
        ws = ray["workers"]
        meetings = max(w["exchange"]["meetings"] for w in ws)
        row.update(connect_s=ray["connect_seconds"], start_workers_s=ray["start_seconds"],
                   worker_peak_rss_gb=[round(w["peak_rss_bytes"] / GB, 2) for w in ws],
                   total_peak_rss_gb=sum(w["peak_rss_bytes"] for w in ws) / GB + rss / GB,
                   worker_seconds=[round(w["seconds"], 1) for w in ws],
                   collectives_across_workers=meetings,
                   per_collective_ms={k: 1e3 * max(w["exchange"][k] for w in ws) / max(1, meetings)
                                      for k in ("transfer_seconds", "combine_seconds", "waiting_seconds")},
                   mb_sent_per_collective=sum(w["exchange"]["bytes_sent"] for w in ws) / max(1, meetings) / 1e6,
                   executor=ws[0]["executor"])
    return row


def _same(a: Path, b: Path) -> bool:
    import numpy as np

    x, y = np.load(a), np.load(b)
    return sorted(x.files) == sorted(y.files) and all(x[k].tobytes() == y[k].tobytes() for k in x.files)


def bench_run(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "local.npz"
        if not args.no_local:
            rows.append(_run(args.seed, local, None))
            print(json.dumps(rows[-1]), flush=True)
        for w in args.workers:
            out = Path(tmp) / f"ray{w}.npz"
            row = _run(args.seed, out, w)
            row["identical_to_local"] = _same(local, out) if local.exists() else None
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _subset(xla_dir: Path, limit: int | None, into: Path) -> Path:
    modules = sorted((xla_dir / "modules").glob("*.hlo")) if (xla_dir / "modules").is_dir() else sorted(xla_dir.glob("*"))
    if limit:
        step = max(1, len(modules) // limit)
        modules = modules[::step][:limit]
    into.mkdir(parents=True, exist_ok=True)
    for m in modules:
        (into / m.name).symlink_to(m.resolve())
    return into


def bench_sweep(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = _subset(args.xla_dir, args.limit, Path(tmp) / "modules")
        count = len(list(corpus.iterdir()))
        for name, extra in (("1 process", ["-j", "1"]), ("--jobs 2", ["-j", "2"]), ("Ray tasks", ["--ray"])):
            if args.only and name not in args.only:
                continue
            out = Path(tmp) / f"{name.replace(' ', '_')}.jsonl"
            load = _load()
            wall, rss, stdout, stderr, code = _child([sys.executable, "-m", "hloscope", "sweep", str(corpus), "-o",
                                                      str(out), "--timeout", "120", *extra])
            lines = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
            status: dict[str, int] = {}
            for r in lines:
                status[r["status"]] = status.get(r["status"], 0) + 1
            rows.append({"how": name, "modules": len(lines), "of": count, "wall_s": wall,
                         "modules_per_s": len(lines) / wall, "status": status, "exit": code, "load": load,
                         "job_seconds": sum(r["seconds"] or 0 for r in lines)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--workers", default="1,2,4", type=lambda s: [int(x) for x in s.split(",")])
    r.add_argument("--seed", type=Path, default=SEED003)
    r.add_argument("--no-local", action="store_true", help="skip the local reference run")
    r.add_argument("--json", type=Path)
    s = sub.add_parser("sweep")
    s.add_argument("--xla-dir", type=Path, required=True, help="what tools/xla_corpus.py extract wrote")
    s.add_argument("--limit", type=int, help="sweep this many modules, evenly spread (default all)")
    s.add_argument("--only", type=lambda v: v.split(","), help="of '1 process,--jobs 2,Ray tasks'")
    s.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    rows = bench_run(args) if args.what == "run" else bench_sweep(args)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

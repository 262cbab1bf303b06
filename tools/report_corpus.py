"""Build the report of every module in a directory (XLA's test corpus, as ``tools/xla_corpus.py
extract`` writes it) and list the sections that failed, grouped by their message.

A report runs every analysis and the page's own joins (op profile, timeline, collectives rows)
on one module; a module nobody here wrote that breaks one shows up as a failed section (its
message names the exception and where), a crash or a timeout. The modules go through
``hloscope.sweep`` (worker processes, a time limit per module, resumable results), with a job
that builds the report instead of the sweep's analyses::

    python tools/report_corpus.py /tmp/xla_hlo/modules --results /tmp/reports.jsonl [--jobs 2]

Each line is a sweep record: ``status`` "ok", "failed" (not parsed, or a section failed;
``errors`` has each ``{"step", "message"}``), "timeout" or "crashed". XLA's texts stay outside
the repository (Apache-2.0). First run, 2026-11-29 (10,079 texts): 9,193 parsed, none crashed
or timed out, 8 had a failing section. Five were fixed (reduce-window and select-and-scatter of
scalars; ``use_global_device_ids=true`` without a channel_id, which the parser now refuses as
XLA's does); two are invalid modules, whose failed sections now say so first
(``_why_sections_failed`` in ``report/data.py``); the last, a ``dot-start()`` without operands,
passes hloscope's verifier and crashes jaxlib's parser. Run again after: 9,189 ok, 887 not
parsed, 3 failed, in 1 min 56 s with ``--jobs 2``.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT / "src") not in sys.path:  # running from a checkout without installing
    sys.path.insert(0, str(_ROOT / "src"))

from hloscope.sweep import SweepOptions, find_modules, new_record, read_results, sweep  # noqa: E402


def report_job(path: str, options: SweepOptions) -> dict[str, Any]:
    """One module's line: parsed or not, and each failed section's message. Never raises."""
    import hloscope as hs
    from hloscope.report.data import collect_report_data
    from hloscope.report.html import render_html

    started = time.perf_counter()
    record = new_record(path)
    try:
        module = hs.load(path)
    except Exception as e:  # noqa: BLE001 - a refused text is a line, not a crash
        record.update(status="failed", errors=[{"step": "load", "message": f"{type(e).__name__}: {e}"[:500]}])
        return record
    data = collect_report_data(module, jobs=1)
    render_html(data)
    record["module"] = module.name
    record["errors"] = [{"step": k, "message": v.get("message", "")[:500]} for k, v in data.items()
                        if isinstance(v, dict) and v.get("status") == "error"]
    record.update(status="failed" if record["errors"] else "ok", seconds=time.perf_counter() - started)
    return record


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("modules", type=Path, help="a directory of HLO text files")
    p.add_argument("--results", type=Path, required=True, help="sweep records, one line per module (resumable)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds a module may take (default 60)")
    a = p.parse_args(argv)
    paths = find_modules(a.modules)
    sweep(paths, a.results, SweepOptions(timeout=a.timeout), jobs=a.jobs, job=report_job)
    records = [r for r in read_results(a.results).values() if r["path"] in {os.path.abspath(x) for x in paths}]
    statuses = collections.Counter(
        "not parsed" if [e["step"] for e in r["errors"]] == ["load"] else r["status"] for r in records)
    causes = collections.Counter((e["step"], e["message"].split(" (at ")[0][:200])
                                 for r in records if r["status"] != "ok" for e in r["errors"] if e["step"] != "load")
    def most_first(counts: collections.Counter[Any]) -> list[tuple[Any, int]]:
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))  # ties in name order

    print(f"{len(records)} modules: " + ", ".join(f"{n} {k}" for k, n in most_first(statuses)))
    for (step, message), n in most_first(causes):
        print(f"{n:6}  {step}: {message}")
    return 1 if statuses["crashed"] or statuses["timeout"] else 0


if __name__ == "__main__":
    sys.exit(main())

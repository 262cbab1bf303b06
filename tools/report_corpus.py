"""Build the report of every module in a directory (XLA's test corpus, as ``tools/xla_corpus.py
extract`` writes it) and list the sections that failed, grouped by their message.

A report runs every analysis and the page's own joins (op profile, timeline, collectives rows)
on one module; a module nobody here wrote that breaks one shows up as a failed section (its
message names the exception and where) or a crash. Each module runs in a worker process with a
time limit, one JSON line per module::

    python tools/report_corpus.py /tmp/xla_hlo/modules --results /tmp/reports.jsonl [--jobs 2]

Lines: ``[file, "ok" | "parse" | "error" | "crash", details]``. XLA's texts stay outside the
repository (Apache-2.0). Run on 2026-11-29 (10,079 texts): 9,193 parsed, none crashed, 8 had a
failing section. Five were fixed (reduce-window and select-and-scatter of scalars, a parser
check); two are invalid modules, whose failed sections now say so first
(``_why_sections_failed`` in ``report/data.py``); the last, a ``dot-start()`` without operands,
passes hloscope's verifier and crashes jaxlib's parser.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import sys
import traceback
from multiprocessing import Pool
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT / "src") not in sys.path:  # running from a checkout without installing
    sys.path.insert(0, str(_ROOT / "src"))

TIME_LIMIT = 60  # seconds a module may take


def build(path: str) -> list[Any]:
    """One module's line: parsed or not, and each failed section's message."""
    signal.alarm(TIME_LIMIT)
    try:
        import hloscope as hs
        from hloscope.report.data import collect_report_data
        from hloscope.report.html import render_html

        name = os.path.basename(path)
        try:
            module = hs.load(path)
        except Exception as e:  # noqa: BLE001 - a refused text is a line, not a crash
            return [name, "parse", type(e).__name__]
        data = collect_report_data(module, jobs=1)
        render_html(data)
        failed = {k: v.get("message", "")[:400] for k, v in data.items()
                  if isinstance(v, dict) and v.get("status") == "error"}
        return [name, "error" if failed else "ok", failed]
    except BaseException as e:  # noqa: BLE001 - the time limit's alarm included
        return [os.path.basename(path), "crash", f"{type(e).__name__}: {e}"[:300] + traceback.format_exc()[-600:]]
    finally:
        signal.alarm(0)


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"over {TIME_LIMIT} s")


def _init() -> None:
    signal.signal(signal.SIGALRM, _alarm)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("modules", type=Path, help="a directory of HLO text files")
    p.add_argument("--results", type=Path, required=True, help="JSON lines, one per module")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--limit", type=int, help="only the first N files")
    a = p.parse_args(argv)
    files = sorted(str(f) for f in a.modules.iterdir() if f.is_file())[: a.limit]
    kinds: collections.Counter[str] = collections.Counter()
    causes: collections.Counter[tuple[str, str]] = collections.Counter()
    with open(a.results, "w", encoding="utf-8") as out, Pool(a.jobs, initializer=_init, maxtasksperchild=50) as pool:
        for line in pool.imap_unordered(build, files, chunksize=4):
            out.write(json.dumps(line) + "\n")
            kinds[line[1]] += 1
            if line[1] == "error":
                for section, message in line[2].items():
                    causes[(section, message.split(" (at ")[0][:200])] += 1
            elif line[1] == "crash":
                causes[("crash", line[2].splitlines()[0][:160])] += 1
    print(f"{len(files)} modules: " + ", ".join(f"{n} {k}" for k, n in kinds.most_common()))
    for (section, message), n in causes.most_common():
        print(f"{n:6}  {section}: {message}")
    return 1 if kinds["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())

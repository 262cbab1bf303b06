"""A fuzzing campaign: many seeds checked, failures reduced and written out, a summary.
"""
from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hloscope.testing.fuzz.checks import Failure, Outcome, check_case
from hloscope.testing.fuzz.ops import generate
from hloscope.testing.fuzz.reduce import describe_repro, reduce_case
from hloscope.testing.xla_worker import XlaWorker


def note_class(note: str) -> str:
    """The class a note is counted under in the summary (XLA:CPU refusals by their reason)."""
    head, _, msg = note.partition(": ")
    if head.startswith("xla-cpu-refuses"):
        return head + ": " + msg.split(":")[2 if msg.startswith("XlaCompileError") else 0][:70].strip()
    return head


def campaign(seeds: range, checks: str, *, compile_verdict: bool = False, out_dir: Path | None = None,
             reduce: bool = False, verbose: bool = False) -> dict[str, Any]:
    """Check every seed; returns (and with ``out_dir`` writes) counts per check, the failures
    grouped by signature with their seeds, and XLA's aborts and refusals."""
    status: dict[str, Counter[str]] = {c: Counter() for c in checks}
    groups: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    notes: dict[str, list[int]] = {}
    started = time.monotonic()
    log = (out_dir / "failures.jsonl").open("w") if out_dir else None
    with XlaWorker() as worker:
        for n, seed in enumerate(seeds):
            case = generate(seed)
            try:
                out = check_case(case, worker, checks, compile_verdict=compile_verdict)
            except Exception as e:  # a bug of the fuzzer itself: report it, keep going
                out = Outcome([Failure("fuzz", "runner-error", "-", f"{type(e).__name__}: {e}")])
            for c in checks:
                status[c][out.status.get(c, "skip")] += 1
            for note in out.notes:
                notes.setdefault(note_class(note), []).append(seed)
            for f in out.failures:
                groups.setdefault(f.signature, []).append((seed, f.detail))
                if log:
                    log.write(json.dumps({"seed": seed, **dataclasses.asdict(f)}) + "\n")
                if verbose:
                    print(f"seed {seed}: {f}", flush=True)
            if (n + 1) % 100 == 0:
                print(f"... {n + 1} modules, {sum(len(v) for v in groups.values())} failures, "
                      f"{time.monotonic() - started:.0f} s", flush=True)
        summary = {
            "modules": len(seeds), "seconds": round(time.monotonic() - started, 1),
            "checks": {c: dict(v) for c, v in status.items()},
            "failures": [{"check": k[0], "kind": k[1], "where": k[2], "count": len(v),
                          "seeds": [s for s, _ in v[:10]], "example": v[0][1]}
                         for k, v in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1])))],
            "notes": {k: {"count": len(v), "seeds": v[:10]}
                      for k, v in sorted(notes.items(), key=lambda kv: -len(kv[1]))},
            "xla_aborts": worker.aborts,
        }
        if out_dir:  # before reducing, which may take long
            (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
        if reduce and out_dir:
            repro_dir = out_dir / "repros"
            repro_dir.mkdir(exist_ok=True)
            for k, (sig, items) in enumerate(sorted(groups.items())):
                seed = items[0][0]
                case = generate(seed)
                failure = next((f for f in check_case(case, worker, checks, compile_verdict=compile_verdict)
                                .failures if f.signature == sig), None) if sig[0] != "fuzz" else None
                if failure is None:
                    continue  # not reproducible (an XLA abort or timeout on the way)
                name = f"{k:03d}_{sig[0]}_{sig[1]}_{sig[2].split('(')[0]}.hlo"
                try:
                    small = reduce_case(case, failure, worker, compile_verdict=compile_verdict)
                    (repro_dir / name).write_text(describe_repro(small, failure, worker))
                except Exception as e:  # a reducer bug must not lose the campaign's results
                    print(f"could not reduce seed {seed} ({sig}): {type(e).__name__}: {e}")
    if log:
        log.close()
    if out_dir:
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary

"""Sweep hloscope's analyses against XLA:CPU on many small JAX programs: the command line of
``hloscope.testing.sweep`` (see there for the checks, the catalog and the usage)."""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT / "src") not in sys.path:  # running from a checkout without installing
    sys.path.insert(0, str(_ROOT / "src"))

from hloscope.testing.sweep import (  # noqa: E402
    catalog,
    ensure_host_devices,
    random_cases,
    random_graphs,
    run_case,
    summarize,
)

# Eight fake devices must be configured before jax is imported.
ensure_host_devices(8)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--only", help="regex over case names")
    p.add_argument("--random", type=int, default=40, help="random compositions to add (default 40)")
    p.add_argument("--graphs", type=int, default=40, help="random dataflow graphs to add (default 40)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-catalog", action="store_true")
    p.add_argument("-n", type=int, default=0, help="size parameter of every case (default: each case's own)")
    p.add_argument("--monotone", action="store_true", help="also compile at 2n and compare estimates")
    p.add_argument("--json", help="write every result here")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    cases = ([] if a.no_catalog else catalog()) + random_cases(a.random, a.seed) + random_graphs(a.graphs, a.seed)
    if a.only:
        cases = [c for c in cases if re.search(a.only, c.name)]
    if a.n:
        cases = [c.resized(a.n) for c in cases]
    results = []
    for i, case in enumerate(cases):
        r = run_case(case, a.monotone)
        results.append(r)
        if a.verbose or r["status"] != "ok":
            msg = "; ".join(r["mismatches"]) or r.get("error", "")
            print(f"[{i + 1}/{len(cases)}] {case.name}: {r['status']} {msg}", flush=True)
    print(summarize(results))
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0 if all(r["status"] != "mismatch" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The scaling benchmark (benchmarks/scale.py) runs its smallest configuration and prints its tables.

Only a smoke test: the figures are timings on a shared machine, so nothing here asserts on them.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "tests" / "data" / "seeds" / "000_31f0e50696cb742c.txt"


def test_scale_benchmark_prints_its_table_and_growth(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scale.py"), "--modules", "none", "--hlo", str(SEED),
         "--sizes", "1,10", "--commands", "load,cost,graph", "--no-xla", "--work", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.startswith(SEED.stem)]
    table = [r for r in rows if r[1] in ("1", "10")]
    assert [(r[1], r[4]) for r in table] == [("1", "load"), ("1", "cost"), ("1", "graph"),
                                             ("10", "load"), ("10", "cost"), ("10", "graph")]
    # The 10x module holds ten renamed copies plus an entry calling each (parameters, calls, tuple).
    n1, n10 = int(table[0][2]), int(table[3][2])
    assert n10 > 10 * n1
    for r in table:
        float(r[5]), float(r[6])  # work and CPU seconds were measured  # noqa: B018
        assert "failed" not in " ".join(r) and "exit" not in " ".join(r)
    growth = [r for r in rows if len(r) == 4 and r[2].endswith("x")]
    assert [r[1] for r in growth] == ["load", "cost", "graph"]

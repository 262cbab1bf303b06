"""A few hundred parser fuzz cases in CI (the full campaign: tests/text/fuzz_parser.py)."""
from __future__ import annotations

from tests.text.fuzz_parser import run


def test_mutated_seeds_only_raise_parse_errors() -> None:
    failures = run(cases=300, seed=1234)
    assert not failures, "\n".join(f"{n}: {type(e).__name__}: {e}" for _, n, e in failures[:5])

"""The analysis sweep (hloscope.testing.sweep, run by tools/analysis_sweep.py) stays runnable and
able to fail: a few of its programs, end to end.

The sweep itself (about 950 programs, minutes) is run by hand; see its docstring. Here a handful
of its cases go through every check against XLA:CPU, and one deliberately broken cost rule
must show up as a mismatch.
"""
from __future__ import annotations

import pytest

pytest.importorskip("jax")


@pytest.fixture(scope="module")
def sweep():
    from hloscope.testing import sweep as module

    return module


def _case(sweep, name):
    return next(c for c in sweep.catalog() if c.name == name)


def test_catalog_covers_every_family(sweep) -> None:
    names = [c.name for c in sweep.catalog()]
    assert len(names) == len(set(names)) > 500
    families = {n.split(".")[0] for n in names}
    assert families >= {"unary", "binary", "reduce", "move", "dot", "conv", "pool", "sort", "index", "fft",
                        "linalg", "control", "nn", "random", "shard", "donate", "exotic", "model"}


@pytest.mark.parametrize("name", ["unary.tanh.bfloat16", "index.scatter_add.float32", "control.fori_dus",
                                  "shard.shard_map.psum_scatter"])
def test_catalog_cases_agree_with_xla(sweep, name: str) -> None:
    result = sweep.run_case(_case(sweep, name), monotone=False)
    assert result["status"] == "ok", result["mismatches"]


def test_random_graphs_agree_with_xla(sweep) -> None:
    for case in sweep.random_graphs(3, seed=11):
        result = sweep.run_case(case, monotone=False)
        assert result["status"] == "ok", (case.name, result["mismatches"])


def test_a_wrong_rule_is_reported(sweep, monkeypatch) -> None:
    from hloscope.analysis import cost_rules
    from hloscope.ir import Opcode

    # tanh counted as FLOPs, not transcendentals (the kind of slip the sweep is for).
    monkeypatch.setattr(cost_rules, "TRANSCENDENTAL", cost_rules.TRANSCENDENTAL - {Opcode.TANH})
    result = sweep.run_case(_case(sweep, "unary.tanh.bfloat16"), monotone=False)
    assert result["status"] == "mismatch"
    kinds = {m.split(" ")[0] for m in result["mismatches"]}
    assert {"cost.post.flops", "cost.post.transcendentals", "cost.pre.transcendentals"} <= kinds

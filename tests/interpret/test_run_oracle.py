"""Every oracle program (tests/oracle/programs.py), run by hloscope, against XLA:CPU's outputs.

Both HLO texts of each program run: ``pre`` (as jax lowered it) and ``post`` (after XLA's
optimizations: fusions, scheduled, LAPACK custom calls, partitioned per device). Multi-device
programs run on the same device grid XLA used.
"""
from __future__ import annotations

import numpy as np
import pytest

try:  # the fixtures are a pytest plugin registered by tests/conftest.py
    from tests.oracle_fixtures import ORACLE_PROGRAM_NAMES, assert_values_close
except ImportError:  # tests/ is not a package
    from oracle_fixtures import ORACLE_PROGRAM_NAMES, assert_values_close  # type: ignore[no-redef]

import hloscope
from hloscope.interpret import run


def _squeeze_like(got, expected):
    """The corpus stores a replicated scalar's per-device value as shape (1,) (jax's shard);
    the module returns f32[]. Compare values, not that storage quirk."""
    if isinstance(got, (tuple, list)):
        return type(got)(_squeeze_like(g, e) for g, e in zip(got, expected, strict=True))
    g = np.asarray(got)
    if g.shape == () and np.shape(expected) == (1,):
        return g.reshape(1)
    return got


@pytest.mark.parametrize("stage", ["pre", "post"])
@pytest.mark.parametrize("name", ORACLE_PROGRAM_NAMES)
def test_program_matches_xla(oracle_corpus, name: str, stage: str) -> None:
    case = oracle_corpus.case(name)
    meta = case.meta
    if stage == "pre" and name.startswith("sharded_mlp_step"):
        pytest.xfail("an output's sharding here is chosen by XLA's sharding propagation (b1's update "
                     "is sharded like w1's columns); the pre text does not say it, and hloscope "
                     "only propagates through same-shaped elementwise operands")
    module = hloscope.parse(case.pre_text if stage == "pre" else case.post_text)
    out = run(module, case.inputs(), replicas=meta["num_replicas"], partitions=meta["num_partitions"])
    expected = case.outputs()
    assert_values_close(_squeeze_like(out, expected), expected, meta.get("rtol", 1e-5), meta.get("atol", 1e-6))

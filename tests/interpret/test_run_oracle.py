"""Every oracle program (hloscope/testing/oracle/programs*.py), run by hloscope, against XLA:CPU's outputs.

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
from hloscope.interpret import RunOptions, run


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
        pytest.xfail("per-device results need the outputs' shardings, and XLA's sharding propagation "
                     "chooses b1's (like w1's columns) without the pre text saying so; the global "
                     "result is checked by test_sharded_program_runs_as_one_global_program")
    module = hloscope.parse(case.pre_text if stage == "pre" else case.post_text)
    # The corpus holds each device's outputs; a global (pre) program gives its shards on request.
    out = run(module, case.inputs(), replicas=meta["num_replicas"], partitions=meta["num_partitions"],
              options=RunOptions(per_device=True))
    expected = case.outputs()
    assert_values_close(_squeeze_like(out, expected), expected, meta.get("rtol", 1e-5), meta.get("atol", 1e-6))


GLOBAL_PROGRAMS = [p.name for p in __import__("hloscope.testing.oracle.programs", fromlist=["PROGRAMS"]).PROGRAMS
                   if p.mode.startswith("jit_sharded8") and not p.name.startswith("manual_region")]


@pytest.mark.parametrize("name", GLOBAL_PROGRAMS)
def test_sharded_program_runs_as_one_global_program(oracle_corpus, name: str) -> None:
    """Before partitioning, a sharded jit program is one global program: run on a single device
    with the whole arrays, it equals the jax function's (global) result; sharding annotations
    change no values. This is how a user checks a partitioned module against its global form."""
    import jax

    from hloscope.testing.oracle.corpus import jax_config
    from hloscope.testing.oracle.programs import by_name

    prog = by_name()[name]
    case = oracle_corpus.case(name)
    with jax_config(prog.config):
        inputs = prog.make_inputs()
        kwargs = prog.jit_kwargs() if prog.jit_kwargs else {}
        expected = tuple(np.asarray(x) for x in jax.tree_util.tree_leaves(jax.jit(prog.fn, **kwargs)(*inputs)))
    args = [np.asarray(x) for x in jax.tree_util.tree_leaves(inputs)]
    got = run(hloscope.parse(case.pre_text), args, replicas=1, partitions=1)
    got = got if isinstance(got, tuple) else (got,)
    assert_values_close(got, expected, case.meta.get("rtol", 1e-5), case.meta.get("atol", 1e-6))


MANUAL_PROGRAMS = [p.name for p in __import__("hloscope.testing.oracle.programs", fromlist=["PROGRAMS"]).PROGRAMS
                   if p.mode in ("pmap8", "shard_map8")]


@pytest.mark.parametrize("name", MANUAL_PROGRAMS)
def test_manual_program_before_partitioning_returns_global_outputs(oracle_corpus, name: str) -> None:
    """A pmap or shard_map program before partitioning, run with its global inputs, returns the
    global arrays its signature declares (jax's results), not the devices' shards; the shards
    come with ``per_device=True``."""
    import jax

    from hloscope.testing.oracle.corpus import jax_config
    from hloscope.testing.oracle.programs import by_name

    prog = by_name()[name]
    case = oracle_corpus.case(name)
    meta = case.meta
    with jax_config(prog.config):
        inputs = prog.make_inputs()
        kwargs = prog.jit_kwargs() if prog.jit_kwargs else {}
        call = jax.pmap(prog.fn, **kwargs) if prog.mode == "pmap8" else jax.jit(prog.fn, **kwargs)
        expected = tuple(np.asarray(x) for x in jax.tree_util.tree_leaves(call(*inputs)))
    module = hloscope.parse(case.pre_text)
    args = [np.asarray(x) for x in jax.tree_util.tree_leaves(inputs)]
    got = run(module, args, replicas=meta["num_replicas"], partitions=meta["num_partitions"])
    got = got if isinstance(got, tuple) else (got,)
    declared = module.entry.root.shape
    shapes = [tuple(s.dimensions) for s in declared.elements] if declared.is_tuple else [tuple(declared.dimensions)]
    assert [np.shape(g) for g in got] == shapes
    assert_values_close(got, expected, meta.get("rtol", 1e-5), meta.get("atol", 1e-6))
    shards = run(module, args, replicas=meta["num_replicas"], partitions=meta["num_partitions"],
                 options=RunOptions(per_device=True))
    assert_values_close(_squeeze_like(shards, case.outputs()), case.outputs(), meta.get("rtol", 1e-5),
                        meta.get("atol", 1e-6))

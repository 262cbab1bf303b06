"""Shared test set-up.

XLA:CPU must see 8 devices for the sharded oracle programs; the flag has to be set before jax
initialises its backends, so it is set here, at import time of the test session.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
    _flags = (_flags + " --xla_force_host_platform_device_count=8").strip()
# Note [The oracle's instruction set]
#     XLA:CPU compiles for the host's instruction set, and its numbers change with it: on an
#     AVX-512 host it rounds f64 -> f16 once (elsewhere through f32, twice) and keeps f16
#     intermediates of a fusion in f32 (measured with jaxlib 0.10.2). The interpreter models
#     XLA:CPU on AVX2 (its complex formulas include AVX2's FMA contractions), so the oracle is
#     compiled for AVX2, a level every x86-64 CI host of the last decade has, and the expected
#     values are the same on every machine. The corpus cache is keyed by this level. (On AVX,
#     without FMA, complex abs differs; with AVX-512, the six programs above.)
if "xla_cpu_max_isa" not in _flags:
    _flags = (_flags + " --xla_cpu_max_isa=AVX2").strip()
os.environ["XLA_FLAGS"] = _flags

SEEDS_DIR = Path(__file__).parent / "data" / "seeds"
SEED_FILES = {
    "000": SEEDS_DIR / "000_31f0e50696cb742c.txt",
    "001": SEEDS_DIR / "001_8d2741cff48cd2ab.txt",
    "002": SEEDS_DIR / "002_d05a1149d5848d03.txt",
    "003": SEEDS_DIR / "003_83a80cec1e7cc5e6.txt",
    "004": SEEDS_DIR / "004_54e5854892ee064a.txt",
}
MODULE_SEEDS = ("000", "001", "003", "004")

# The JAX-program corpus (hloscope.testing.oracle) as fixtures: oracle_corpus, oracle_case.
pytest_plugins = ["tests.oracle_fixtures"]


@pytest.fixture(scope="session")
def ray_instance():
    """One local Ray instance (2 CPUs) for the session's Ray tests; the Ray executor and
    sweeps use a connection the process already has (Note [Ray executor])."""
    ray = pytest.importorskip("ray")
    started = False
    if not ray.is_initialized():
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        os.environ.setdefault("RAY_worker_niceness", "0")  # as the executor's own local instance
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR")
        started = True
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="session")
def xla_worker():
    """XLA in a child process (``hloscope.testing.xla_worker.XlaWorker``), one per test
    session (per xdist worker): tests that execute on XLA:CPU call it, so that an XLA crash
    fails one test instead of ending the run."""
    from hloscope.testing.xla_worker import XlaWorker

    with XlaWorker(timeout=600) as worker:
        yield worker

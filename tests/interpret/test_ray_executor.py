"""The Ray executor on a local Ray instance (Note [Ray executor]): the same bits as a local run
with different data per device, errors and dead workers ending the run at once, Ctrl-C
killing the actors, the memory guard refusing before anything runs.

Marked ``ray`` (deselect with ``-m 'not ray'``); one Ray instance serves the session."""
from __future__ import annotations

import _thread
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import hloscope as hs
from hloscope.errors import InterpretError
from hloscope.interpret import run
from hloscope.interpret.inputs import random_inputs
from tests.conftest import SEED_FILES
from tests.interpret.test_exchange import assert_identical

pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]


def ray_executor(devices_per_worker: int, **kwargs):
    from hloscope.interpret.ray_executor import RayExecutor

    return RayExecutor(None, devices_per_worker, **kwargs)


@pytest.mark.parametrize("seed,grid,per_worker", [("000", (8, 1), 3), ("001", (1, 4), 2), ("004", (4, 1), 2)])
def test_seeds_on_ray_workers_match_the_local_run(ray_instance, seed: str, grid: tuple[int, int],
                                                  per_worker: int) -> None:
    m = hs.load(SEED_FILES[seed])
    r, p = grid
    inputs = random_inputs(m, 7, "normal", r * p, per_device=True)
    expected = run(m, [list(x) for x in inputs], replicas=r, partitions=p)
    executor = ray_executor(per_worker)
    got = run(m, [list(x) for x in inputs], replicas=r, partitions=p, executor=executor)
    assert_identical(got, expected)
    stats = executor.last_run
    assert stats is not None and len(stats.workers) == -(-r * p // per_worker)
    assert all(w.exchange["meetings"] > 0 for w in stats.workers)  # the groups crossed workers


def test_a_model_with_all_to_all_on_ray_workers(ray_instance) -> None:
    pytest.importorskip("flax")
    from hloscope.testing.models import build

    case = build("moe_a2a8")
    m = hs.parse(case.post_text)
    r, p = case.meta["num_replicas"], case.meta["num_partitions"]
    expected = run(m, case.inputs(), replicas=r, partitions=p)
    assert_identical(run(m, case.inputs(), replicas=r, partitions=p, executor=ray_executor(4)), expected)


def test_cli_run_on_ray_draws_the_same_inputs_and_writes_the_same_outputs(ray_instance, tmp_path) -> None:
    """--per-device-inputs drawn by each worker for its own devices (nothing sent) give the
    outputs a local run writes."""
    from hloscope.cli.main import main

    seed = str(SEED_FILES["000"])
    assert main(["run", seed, "--per-device-inputs", "--random", "2", "--json", "--out",
                 str(tmp_path / "local.npz")]) == 0
    assert main(["run", seed, "--per-device-inputs", "--random", "2", "--json", "--executor", "ray",
                 "--devices-per-worker", "4", "--out", str(tmp_path / "ray.npz")]) == 0
    local, remote = np.load(tmp_path / "local.npz"), np.load(tmp_path / "ray.npz")
    assert sorted(local.files) == sorted(remote.files)
    assert len([k for k in local.files if k.startswith("d")]) == 8 * 6
    for key in local.files:
        assert local[key].tobytes() == remote[key].tobytes(), key


def test_an_error_in_a_worker_ends_the_run_with_that_error(ray_instance) -> None:
    m = hs.parse("""
HloModule elided, replica_count=2
ENTRY main {
  x = f32[3] parameter(0)
  c = f32[3] constant({...})
  ROOT y = f32[3] add(x, c)
}""")
    with pytest.raises(InterpretError, match=r"elided(.|\n)*on Ray worker [01], device [01]\)"):
        run(m, [np.ones(3, np.float32)], replicas=2, executor=ray_executor(1))


# A loop long enough to be killed in: millions of iterations of cheap ops, then an all-reduce.
SPIN = """
HloModule spin, replica_count=4

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(100000000)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  half = f32[4] constant({0.5, 0.5, 0.5, 0.5})
  y = f32[4] multiply(x, half)
  ROOT t = (s32[], f32[4]) tuple(j, y)
}

ENTRY main {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  r = f32[4] get-tuple-element(w), index=1
  ROOT total = f32[4] all-reduce(r), replica_groups={}, to_apply=add
}
"""


def _start_spin(executor) -> tuple[threading.Thread, dict]:
    """The spin module on 4 replicas in a thread; returns it and where its outcome lands."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = run(hs.parse(SPIN), [np.ones(4, np.float32)], replicas=4, executor=executor)
        except BaseException as e:  # noqa: BLE001 - the test looks at it
            outcome["error"] = e
        outcome["at"] = time.monotonic()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not executor.workers and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.1)
    assert executor.workers, outcome.get("error")
    return thread, outcome


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_a_killed_worker_ends_the_run_within_seconds_naming_it(ray_instance) -> None:
    executor = ray_executor(2)
    thread, outcome = _start_spin(executor)
    time.sleep(3.0)  # the workers are deep in the loop and have said where (once a second)
    victim, survivor = executor.workers[1], executor.workers[0]
    killed = time.monotonic()
    os.kill(victim["pid"], signal.SIGKILL)
    thread.join(timeout=30)
    assert not thread.is_alive(), "the run hangs after a worker died"
    assert outcome["at"] - killed < 10
    from hloscope.interpret.ray_executor import WorkerDiedError

    error = outcome["error"]
    assert isinstance(error, WorkerDiedError), error
    text = str(error)
    assert "Ray worker 1 (devices 2-3 of 4" in text and f"pid {victim['pid']}" in text
    # Sampled once a second: inside the body or condition, or between trips in the loop itself
    # (a fresh-clone CI run caught it there: "instruction w in computation main").
    assert "instruction" in text and any(at in text for at in ("computation body", "computation cond",
                                                                "instruction w in computation main")), text
    assert _gone(survivor["pid"], 10), "the other worker was left running"


def test_ctrl_c_kills_the_actors(ray_instance) -> None:
    executor = ray_executor(2)
    timer: list[threading.Timer] = []

    def interrupt_when_started() -> None:
        while not executor.workers:
            time.sleep(0.1)
        timer.append(threading.Timer(1.0, _thread.interrupt_main))
        timer[0].start()

    threading.Thread(target=interrupt_when_started, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run(hs.parse(SPIN), [np.ones(4, np.float32)], replicas=4, executor=executor)
    assert time.monotonic() - started < 120
    for worker in executor.workers:
        assert _gone(worker["pid"], 10), f"worker pid {worker['pid']} outlived Ctrl-C"


def test_the_memory_guard_refuses_before_anything_runs(ray_instance) -> None:
    from hloscope.interpret.ray_executor import WorkerMemoryError

    m = hs.load(SEED_FILES["000"])
    executor = ray_executor(4, per_device_bytes=1 << 50)  # a petabyte per device
    started = time.monotonic()
    with pytest.raises(WorkerMemoryError) as refused:
        run(m, random_inputs(m, 0), replicas=8, executor=executor)
    text = str(refused.value)
    assert "4 devices x" in text and "'memory' resource" in text and "--devices-per-worker" in text
    assert executor.workers == [] and time.monotonic() - started < 30


def test_an_unreachable_cluster_is_one_line() -> None:
    """Nothing listens on port 1: exit 1 with one line, in seconds (no Ray instance needed)."""
    done = subprocess.run([sys.executable, "-m", "hloscope", "run", str(SEED_FILES["000"]), "--executor", "ray",
                           "--ray-address", "127.0.0.1:1"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cannot reach a Ray cluster at 127.0.0.1:1"), done.stderr

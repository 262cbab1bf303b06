"""A device grid cut into slices that meet through the exchange board (Note [The exchange
board]), without Ray: each slice runs in a thread of this process, with the same local
executors and the same board a Ray run uses, and must give a local run's results bit for bit.
Also: Ray stays out of every path that does not choose it."""
from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import hloscope as hs
from hloscope.errors import InterpretError
from hloscope.interpret import RunOptions, run
from hloscope.interpret.exchange import Board, BoardExchange, InProcessBoard, Submission
from hloscope.interpret.executor import choose_local_executor
from hloscope.interpret.inputs import RandomInputs, random_inputs
from tests.conftest import SEED_FILES


def plan(num_devices: int, per_worker: int) -> list[range]:
    return [range(lo, min(lo + per_worker, num_devices)) for lo in range(0, num_devices, per_worker)]


def run_in_slices(module, inputs, replicas: int, partitions: int, per_worker: int, mode: str = "auto"):
    """``run`` with the grid cut into slices of ``per_worker`` devices, one thread each."""
    slices = plan(replicas * partitions, per_worker)
    owner = [w for w, s in enumerate(slices) for _ in s]
    shared = InProcessBoard(len(slices))
    options = RunOptions(mode=mode)
    out: list = [None] * len(slices)
    errors: list[BaseException] = []

    def work(w: int, held: range) -> None:
        try:
            exchange = BoardExchange(w, owner, shared.transport(w))
            executor = choose_local_executor(module, options, len(held))
            out[w] = executor.run_slice(module, [list(inputs[d]) for d in held], replicas, partitions, options,
                                        held, exchange)
            shared.finish(w)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=work, args=(w, s), daemon=True) for w, s in enumerate(slices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a slice hangs"
    if errors:
        raise errors[0]
    return [v for part in out for v in part]


def assert_identical(got, expected) -> None:
    """Same structure, dtypes, shapes and bytes."""
    if isinstance(expected, tuple | list):
        assert isinstance(got, tuple | list) and len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert_identical(g, e)
        return
    g, e = np.asarray(got), np.asarray(expected)
    assert (g.dtype, g.shape) == (e.dtype, e.shape)
    assert g.tobytes() == e.tobytes()


@pytest.mark.parametrize("seed,grid,per_worker,mode", [
    ("000", (8, 1), 3, "auto"),        # uneven slices 3 + 3 + 2, lockstep in each
    ("000", (8, 1), 4, "per-device"),
    ("001", (1, 4), 2, "auto"),        # partitions: the gather/scatter model
    ("001", (1, 4), 1, "per-device"),
])
def test_slices_match_the_local_run(seed: str, grid: tuple[int, int], per_worker: int, mode: str) -> None:
    m = hs.load(SEED_FILES[seed])
    r, p = grid
    inputs = random_inputs(m, 3, "normal", r * p, per_device=True)  # different data on every device
    expected = run(m, [list(x) for x in inputs], replicas=r, partitions=p)
    assert_identical(run_in_slices(m, inputs, r, p, per_worker, mode), expected)


@pytest.mark.parametrize("name", ["moe_a2a8", "vit_pmap8", "resnet_dp8"])
def test_slices_match_the_local_run_on_models(name: str) -> None:
    """Real training steps with their own per-device inputs: all-to-all (MoE), pmap psums."""
    pytest.importorskip("flax")
    from hloscope.testing.models import build

    case = build(name)
    m = hs.parse(case.post_text)
    r, p = case.meta["num_replicas"], case.meta["num_partitions"]
    expected = run(m, case.inputs(), replicas=r, partitions=p)
    assert_identical(run_in_slices(m, case.inputs(), r, p, 3), expected)


DISAGREE = """
HloModule disagree, replica_count=4

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

low {
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={}, to_apply=add
}

high {
  p = f32[2] parameter(0)
  ROOT ar2 = f32[2] all-reduce(p), replica_groups={}, to_apply=add
}

ENTRY main {
  x = f32[2] parameter(0)
  r = u32[] replica-id()
  two = u32[] constant(2)
  lt = pred[] compare(r, two), direction=LT
  ROOT out = f32[2] conditional(lt, x, x), true_computation=low, false_computation=high
}
"""


def test_a_deadlock_across_slices_is_reported_not_hung() -> None:
    """Replicas 0-1 (one slice) reach one all-reduce of all four, 2-3 (the other) another:
    no collective can complete, and both slices say where every device waits."""
    m = hs.parse(DISAGREE)
    inputs = [[np.ones(2, np.float32)] for _ in range(4)]
    with pytest.raises(InterpretError, match="collective deadlock") as local:
        run(m, [list(x) for x in inputs], replicas=4)
    assert "across" not in str(local.value)
    with pytest.raises(InterpretError, match="collective deadlock across workers") as sliced:
        run_in_slices(m, inputs, 4, 1, 2)
    text = str(sliced.value)
    assert "device 0 at ar (worker 0)" in text and "device 2 at ar2 (worker 1)" in text


def test_board_meets_when_every_worker_has_submitted() -> None:
    board = Board(3)
    board.post(1, [Submission(("k",), 0, (0, 1, 2), "h1")], [])
    assert board.take(0) == []
    board.post(0, [Submission(("k",), 0, (0, 1, 2), None)], [])
    assert board.take(0) == []  # worker 2 has not come
    board.post(2, [Submission(("k",), 0, (0, 1, 2), "h2")], [])
    (event,) = board.take(0)
    assert (event.kind, event.payload) == ("gather", {1: "h1", 2: "h2"})


def test_board_calls_a_deadlock_only_when_every_live_worker_waits_without_news() -> None:
    board = Board(2)
    board.block(0, {0: "ar"})
    assert board.take(0) == []
    board.finish(1)  # the only other worker is done: worker 0 can never be answered
    (event,) = board.take(0)
    assert event.kind == "deadlock" and "device 0 at ar (worker 0)" in event.payload
    assert "workers [1] finished" in event.payload


def test_random_inputs_recipe_draws_what_random_inputs_draws() -> None:
    m = hs.load(SEED_FILES["000"])
    for per_device in (False, True):
        recipe = RandomInputs(5, "uniform", per_device)
        whole = random_inputs(m, 5, "uniform", 8, per_device)
        common = None if per_device else recipe.materialize(m, 1)
        for d in (0, 6):
            assert_identical(recipe.for_device(m, d, common), whole[d] if per_device else whole)


def test_core_and_local_runs_never_import_ray() -> None:
    """Ray is an optional extra: loading, analysing and running locally (API and CLI) never
    import it; only choosing the Ray executor does."""
    code = f"""
import sys
import hloscope as hs
from hloscope.cli.main import main
m = hs.load({str(SEED_FILES['001'])!r})
hs.cost(m); hs.memory(m); hs.collectives(m); hs.estimate_time(m)
assert main(['run', {str(SEED_FILES['001'])!r}, '--json']) == 0
assert main(['summary', {str(SEED_FILES['001'])!r}]) == 0
bad = sorted(k for k in sys.modules if k == 'ray' or k.startswith('ray.') or k.endswith('ray_executor'))
assert not bad, bad
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]

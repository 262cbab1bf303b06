"""The memory section made in a forked child beside the report's other steps (Note [Memory
beside the rest] in report/background.py): the same data as in one process, and a child that
fails costs only time."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hloscope.report.background import Background
from hloscope.report.html import page_data
from tests.conftest import SEED_FILES

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")


def without_times(x):
    """The data with each step's measured seconds left out (they differ from run to run)."""
    if isinstance(x, dict):
        return {k: without_times(v) for k, v in x.items()
                if not (k in ("seconds", "collect_seconds") and isinstance(v, (int, float)))}
    if isinstance(x, list):
        return [without_times(v) for v in x]
    return x


def test_background_returns_the_childs_result():
    parent = os.getpid()
    job = Background(os.getpid)
    assert job.result() != parent  # made in another process
    with pytest.raises(RuntimeError):
        job.result()


def test_a_child_that_dies_leaves_the_work_to_the_parent():
    parent = os.getpid()

    def work():
        if os.getpid() != parent:
            os._exit(3)  # killed, out of memory: no result sent
        return "made here"

    assert Background(work).result() == "made here"


def test_a_child_whose_work_raises_leaves_it_to_the_parent():
    parent = os.getpid()

    def work():
        if os.getpid() != parent:
            raise MemoryError("the child's")
        return "made here"

    assert Background(work).result() == "made here"


def test_cancel_stops_a_running_child():
    job = Background(lambda: time.sleep(60))
    pid = job.pid
    started = time.perf_counter()
    job.cancel()
    assert time.perf_counter() - started < 10
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped, not a zombie


# The parity is checked in a clean interpreter: this test process has usually loaded JAX, and
# then the report does not fork (can_fork).
PARITY = r"""
import json, os, sys
import hloscope
import hloscope.analysis.memory.report as memory_report
from hloscope.report import report_html
from hloscope.report.background import can_fork
from hloscope.report.data import collect_report_data
from hloscope.report.html import page_data
from tests.report.test_background import without_times

assert can_fork()
out = []
for path, hardware in json.loads(sys.argv[1]):
    module = hloscope.load(path)
    one = collect_report_data(module, hardware=hardware, jobs=1)
    calls = []
    real = memory_report.analyze_memory
    memory_report.analyze_memory = lambda *a, **k: calls.append(a) or real(*a, **k)
    two = collect_report_data(module, hardware=hardware, jobs=2)
    memory_report.analyze_memory = real
    out.append({"calls_here": len(calls), "keys_same": list(one) == list(two),
                "same": without_times(one) == without_times(two), "status": one["memory"]["status"],
                "fresh": one["timing"]["data"]["fresh_page_seconds"]})
pages = [without_times(page_data(report_html(hloscope.load(json.loads(sys.argv[1])[1][0]), jobs=j))) for j in (1, 2)]
out.append(pages[0] == pages[1])
print(json.dumps(out))
"""


def test_the_data_is_the_same_in_one_process_or_two():
    # 003 on "cpu": the estimate waits for the child's allocations (fresh pages); seed 004 implies
    # a TPU profile and h100-sxm is a GPU: the memory section joins only at the end. Then the
    # page of 004, whose rows are packed while the child works (report_html's while_waiting).
    cases = [[str(SEED_FILES["003"]), "cpu"], [str(SEED_FILES["004"]), None], [str(SEED_FILES["001"]), "h100-sxm"]]
    got = subprocess.run([sys.executable, "-c", PARITY, json.dumps(cases)], capture_output=True, text=True,
                         cwd=ROOT, timeout=600)
    assert got.returncode == 0, got.stderr[-3000:]
    *sections, page_same = json.loads(got.stdout.strip().splitlines()[-1])
    for case, r in zip(cases, sections):
        assert r["status"] == "ok", case
        assert r["calls_here"] == 0, case  # made in the child (a call there is not seen here)
        assert r["keys_same"] and r["same"], case
    assert sections[0]["fresh"] > 0  # the estimate read the child's allocations
    assert page_same


def test_cli_report_with_jobs(tmp_path):
    out = tmp_path / "r.html"
    got = subprocess.run([sys.executable, "-m", "hloscope", "report", str(SEED_FILES["003"]), "-o", str(out),
                          "--jobs", "2"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "wrote" in got.stdout
    data = page_data(out.read_text(encoding="utf-8"))
    assert data["memory"]["status"] == "ok" and data["memory"]["data"]["peak_bytes"] > 0


def test_blocks_made_ahead_make_the_same_page():
    # What report_html encodes while the child works, then the rest: byte for byte the page.
    import hloscope
    from hloscope.report.data import collect_report_data
    from hloscope.report.html import pack_ahead, render_html

    data = collect_report_data(hloscope.load(SEED_FILES["003"]), jobs=1)
    ahead = pack_ahead(data, but=("memory",))
    assert ahead.rows is not None and "hloscope-timeline-events" in ahead.blocks
    assert not any(k.startswith("hloscope-memory") for k in ahead.blocks)
    assert render_html(data, ahead) == render_html(data)


def test_a_fork_that_fails_leaves_the_step_to_this_process(monkeypatch):
    import hloscope
    import hloscope.report.background as background
    from hloscope.report.data import collect_report_data

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(background, "can_fork", lambda: True)  # even where JAX is loaded
    monkeypatch.setattr(background.os, "fork", no_fork)
    data = collect_report_data(hloscope.load(SEED_FILES["001"]), jobs=2)
    assert data["memory"]["status"] == "ok"


def test_no_child_without_memory_to_spare(monkeypatch):
    import hloscope
    import hloscope.api
    import hloscope.report.background as background
    from hloscope.report import data as report_data

    module = hloscope.load(SEED_FILES["001"])
    need = background.CHILD_BYTES_PER_INSTRUCTION * module.instruction_count
    monkeypatch.setattr(background, "can_fork", lambda: True)
    made = []
    monkeypatch.setattr(background, "Background", lambda work: made.append(work) or None)
    monkeypatch.setattr(hloscope.api, "available_memory", lambda: need - 1)
    assert report_data._memory_in_background(module, 2, None) is None and not made
    monkeypatch.setattr(hloscope.api, "available_memory", lambda: need)
    report_data._memory_in_background(module, 2, None)
    assert len(made) == 1

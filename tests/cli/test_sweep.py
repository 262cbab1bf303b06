"""``hloscope sweep`` and the index page (Note [Sweeps] in hloscope/sweep.py): one line per
module with one schema, failures recorded per module, timeouts and dead job processes
recorded without stopping the rest, resuming after an interruption, the same lines from Ray
tasks, and an index that escapes what it shows."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.sweep import (
    RECORD_KEYS,
    SweepOptions,
    analyze_module,
    find_modules,
    read_results,
    sweep,
)
from tests.conftest import SEED_FILES


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    """A dump folder: two seed modules, one that does not parse, a buffer assignment (not a
    module) and a README."""
    d = tmp_path / "dump"
    (d / "sub").mkdir(parents=True)
    shutil.copy(SEED_FILES["000"], d / "module_0001.pmap_step.before_optimizations.txt")
    shutil.copy(SEED_FILES["001"], d / "sub" / "b.hlo")
    (d / "broken.hlo").write_text("HloModule broken\n\nENTRY main {\n  ROOT x = f32[2] nonsense()\n}\n")
    shutil.copy(SEED_FILES["002"], d / "module_0001.pmap_step.after_optimizations-buffer-assignment.txt")
    (d / "README.md").write_text("not a module\n")
    return d


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_sweep_writes_one_line_per_module_with_one_schema(dump: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "results.jsonl"
    index = tmp_path / "site" / "index.html"
    index.parent.mkdir()  # outputs go to folders that exist, as everywhere (test_bad_input)
    assert main(["sweep", str(dump), "-j", "2", "-o", str(out), "--report", str(index)]) == 0
    records = {Path(r["path"]).name: r for r in lines(out)}
    assert sorted(records) == ["b.hlo", "broken.hlo", "module_0001.pmap_step.before_optimizations.txt"]
    for r in records.values():
        assert tuple(r) == RECORD_KEYS
    seed = records["module_0001.pmap_step.before_optimizations.txt"]
    assert seed["status"] == "ok" and seed["stage"] == "before optimizations" and seed["errors"] == []
    assert (seed["replicas"], seed["collectives"], seed["hardware"]) == (8, 1, "h100-sxm")
    assert seed["flops"] > 0 and seed["peak_bytes"] > 0 and seed["estimate_seconds"] > 0
    broken = records["broken.hlo"]
    assert broken["status"] == "failed" and broken["errors"][0]["step"] == "load"
    assert "nonsense" in broken["errors"][0]["message"] and broken["flops"] is None
    page = index.read_text()
    assert page.count("<tr data-status=") == 3 and "reports/b.hlo-" in page
    assert "swept 3 module(s)" in capsys.readouterr().out


def test_a_sweep_resumes_where_it_stopped(dump: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    paths = find_modules(dump)
    assert sweep(paths[:1], out, jobs=1) == (1, 0)
    with open(out, "a") as f:  # a line torn by an interruption
        f.write('{"schema": 1, "key": "tor')
    assert sweep(paths, out, jobs=2) == (2, 1)  # the first module is not swept again
    assert len(lines(out)) == 3 and len(read_results(out)) == 3


def slow_or_dying_job(path: str, options: SweepOptions) -> dict:
    """A job that hangs on one module, kills its own process on another."""
    name = Path(path).name
    if name == "broken.hlo":
        time.sleep(600)
    if name == "b.hlo":
        os._exit(3)
    return analyze_module(path, options)


def test_timeouts_and_dead_job_processes_are_recorded_and_the_rest_goes_on(dump: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    started = time.monotonic()
    count, _ = sweep(find_modules(dump), out, SweepOptions(timeout=20), jobs=2, job=slow_or_dying_job)
    assert count == 3 and time.monotonic() - started < 60
    records = {Path(r["path"]).name: r for r in lines(out)}
    assert records["broken.hlo"]["status"] == "timeout"
    assert records["b.hlo"]["status"] == "crashed" and "exit code 3" in records["b.hlo"]["errors"][0]["message"]
    assert records["module_0001.pmap_step.before_optimizations.txt"]["status"] == "ok"


def test_report_of_a_directory_sweeps_it_and_writes_the_index(dump: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(dump), "-j", "1"]) == 0
    assert (tmp_path / "index.html").exists() and len(lines(tmp_path / "index.jsonl")) == 3
    assert main(["report", str(tmp_path / "index.jsonl"), "-o", str(tmp_path / "again.html")]) == 0
    assert (tmp_path / "again.html").read_text().count("<tr data-status=") == 3


def test_the_index_escapes_what_modules_say() -> None:
    from hloscope.report.index import ReportLink, render_index

    record = dict.fromkeys(RECORD_KEYS)
    record.update(key="k", path="/d/<script>x</script>.hlo", module="<img src=x onerror=alert(1)>", status="failed",
                  errors=[{"step": "load", "message": "</td><script>alert(2)</script>"}])
    page = render_index([record], links={"k": ReportLink('reports/a".html', False, "hloscope report '<x>'")})
    assert "<script>x" not in page and "<img" not in page and "<script>alert" not in page
    assert "&lt;img src=x" in page and 'reports/a&quot;.html' in page


@pytest.mark.ray
@pytest.mark.xdist_group("ray")
def test_ray_tasks_write_the_same_lines(dump: Path, tmp_path: Path, ray_instance) -> None:
    local, remote = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    paths = find_modules(dump)
    sweep(paths, local, jobs=1)
    assert sweep(paths, remote, use_ray=True) == (3, 0)
    drop = {"seconds"}
    a = {r["key"]: {k: v for k, v in r.items() if k not in drop} for r in lines(local)}
    b = {r["key"]: {k: v for k, v in r.items() if k not in drop} for r in lines(remote)}
    assert a == b


def test_every_hlo_file_is_swept_also_without_a_header(tmp_path: Path) -> None:
    # XLA's lit tests write computations only (the parser takes the last as the entry); a sweep
    # of XLA's test modules left 5 of 200 such files out without a line.
    d = tmp_path / "lit"
    d.mkdir()
    (d / "fusion.hlo").write_text("// RUN: some_tool %s\n\nfusion {\n  p = f32[4] parameter(0)\n"
                                  "  ROOT n = f32[4] negate(p)\n}\n")
    (d / "notes.txt").write_text("// not a module, and .txt files need a header\n")
    assert [p.name for p in find_modules(d)] == ["fusion.hlo"]

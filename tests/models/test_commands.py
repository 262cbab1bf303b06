"""Every command on every model of the tier, as a user runs it: on the module jax lowered
(``pre``) and the one XLA compiled (``post``), through the command line, each checked against
what jax itself says of the same program where jax says something.

The modules are written to files, because that is how users meet them (``--xla_dump_to``), and
each command runs in-process through ``hloscope.cli.main.main`` with its ``--json`` twin where
it has one, so a figure is read back as the user would read it.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hloscope as hs
from hloscope.cli.main import main
from hloscope.interpret.npz_io import device_values, load_npz, save_npz
from hloscope.ir import Opcode


@pytest.fixture
def module_file(model, stage, tmp_path: Path) -> Path:
    path = tmp_path / f"{model.name}.{stage}.hlo"
    path.write_text(model.pre_text if stage == "pre" else model.post_text)
    return path


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code = main(list(argv))
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def _within_float_sum(ours: float, xla: float, terms: int) -> bool:
    """XLA adds each instruction's figure into a float total: equal up to that rounding."""
    return abs(ours - xla) <= terms * 2.0 ** -24 * abs(xla) + 1


def test_summary(model, stage, module_file, capsys) -> None:
    data = _json(capsys, "summary", "--json", str(module_file))
    module = hs.load(str(module_file))
    assert data["instructions"] == module.instruction_count
    assert len(data["parameters"]) == len(module.entry.parameters)
    if stage == "post":
        assert data["parameter_bytes"] == model.json("memory.json")["argument_size_in_bytes"]


def test_verify(model, stage, module_file, capsys) -> None:
    data = _json(capsys, "verify", "--json", str(module_file))
    assert data["ok"] and not data["diagnostics"]


def test_print_is_read_back_by_xla_as_the_same_module(model, stage, module_file, tmp_path, capsys) -> None:
    from hloscope.xla.client import xla_canonical_text

    out = tmp_path / "printed.hlo"
    assert main(["print", str(module_file), "-o", str(out)]) == 0
    assert xla_canonical_text(out.read_text()) == xla_canonical_text(module_file.read_text())


def test_cost_is_xla_cost_analysis(model, stage, module_file, capsys) -> None:
    data = _json(capsys, "cost", "--json", str(module_file))
    xla = model.json("cost_pre.json") if stage == "pre" else model.json("cost_post.json")["compiled"]
    n = hs.load(str(module_file)).instruction_count
    for ours, theirs in (("flops", "flops"), ("transcendentals", "transcendentals"),
                         ("bytes_accessed", "bytes accessed")):
        assert _within_float_sum(data[ours], xla[theirs], n), (ours, data[ours], xla[theirs])


def test_memory_is_xla_memory_analysis(model, module_file, capsys) -> None:
    if module_file.name.endswith(".pre.hlo"):
        pytest.skip("XLA's memory analysis describes the compiled (post) module")
    data = _json(capsys, "memory", "--json", str(module_file))
    xla = model.json("memory.json")
    assert (data["argument_bytes"], data["output_bytes"], data["alias_bytes"], data["temp_bytes"]) == (
        xla["argument_size_in_bytes"], xla["output_size_in_bytes"], xla["alias_size_in_bytes"],
        xla["temp_size_in_bytes"])


_COLLECTIVES = {Opcode.ALL_REDUCE, Opcode.ALL_GATHER, Opcode.ALL_TO_ALL, Opcode.REDUCE_SCATTER,
                Opcode.COLLECTIVE_PERMUTE, Opcode.ALL_REDUCE_START, Opcode.ALL_GATHER_START,
                Opcode.COLLECTIVE_PERMUTE_START}


def test_collectives_lists_every_collective(model, stage, module_file, capsys) -> None:
    data = _json(capsys, "collectives", "--json", str(module_file))
    module = hs.load(str(module_file))
    count = sum(1 for c in module.computations for i in c.instructions if i.opcode in _COLLECTIVES)
    assert len(data["collectives"]) == count
    if model.num_devices > 1 and stage == "post":
        assert count > 0  # a multi-device step communicates


def test_estimate(model, stage, module_file, capsys) -> None:
    data = _json(capsys, "estimate", "--hardware", "cpu", "--json", str(module_file))
    assert np.isfinite(data["total_seconds"]) and data["total_seconds"] > 0
    names = {i.name for c in hs.load(str(module_file)).computations for i in c.instructions}
    assert data["longest"] and all(entry["instruction"] in names for entry in data["longest"])


def test_report(model, stage, module_file, tmp_path, capsys) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(module_file), "-o", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and model.name in page


def test_graph(model, stage, module_file, tmp_path) -> None:
    out = tmp_path / "graph.svg"
    assert main(["graph", str(module_file), "-o", str(out)]) == 0
    assert out.read_text().lstrip().startswith(("<svg", "<?xml"))


def test_diff_before_after(model, tmp_path, capsys) -> None:
    pre, post = tmp_path / "pre.hlo", tmp_path / "post.hlo"
    pre.write_text(model.pre_text)
    post.write_text(model.post_text)
    data = _json(capsys, "diff", "--json", str(pre), str(post))
    assert data["metrics"]


def test_run_gives_jax_outputs(model, stage, module_file, tmp_path, capsys) -> None:
    """``run --inputs`` with the program's own inputs gives jax's outputs: each device's for the
    compiled module, the whole arrays for the module before partitioning."""
    from tests.oracle_fixtures import assert_values_close

    meta = model.meta
    inputs, out = tmp_path / "in.npz", tmp_path / "out.npz"
    if stage == "post" or model.num_devices == 1:
        expected = model.outputs()
        save_npz(inputs, load_npz(model.path / "inputs.npz"))
    else:
        expected = model.global_outputs()
        save_npz(inputs, load_npz(model.path / "global_inputs.npz"))
    assert main(["run", str(module_file), "--inputs", str(inputs), "--out", str(out)]) == 0
    n = model.num_devices if stage == "post" else 1
    got = device_values(load_npz(out), "out", n)
    assert_values_close(got, expected, meta["rtol"], meta["atol"])

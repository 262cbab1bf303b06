"""The models tier run by hloscope as a user runs it: the step before XLA's optimizations is one
global program whose outputs are jax's, and ``hloscope run --check-xla`` agrees with XLA:CPU
on every model, before and after optimizations (each of these failed on the multi-device
steps: issue 25, item 1)."""
from __future__ import annotations

import json

import pytest

import hloscope as hs
from hloscope.cli.main import main
from hloscope.interpret import run
from hloscope.interpret.npz_io import save_npz
from tests.oracle_fixtures import assert_values_close


def test_step_before_optimizations_computes_jax_global_result(model) -> None:
    meta = model.meta
    out = run(hs.parse(model.pre_text), model.global_inputs(), replicas=meta["num_replicas"],
              partitions=meta["num_partitions"])
    assert_values_close(out, model.global_outputs(), meta["rtol"], meta["atol"])


@pytest.mark.xla_execute
def test_check_xla_agrees(model, stage: str, tmp_path, capsys) -> None:
    """``run FILE --check-xla`` on the module as jax wrote it, on the inputs jax ran (global
    arrays before optimizations, each device's shards after), exits 0 and every output is
    within the model's tolerance of XLA:CPU's."""
    meta = model.meta
    path = tmp_path / f"{stage}.hlo"
    path.write_text(model.pre_text if stage == "pre" else model.post_text)
    n = meta["num_replicas"] * meta["num_partitions"]
    if stage == "pre" or n == 1:
        inputs = {f"arg{i}": a for i, a in enumerate(model.global_inputs())}
    else:
        inputs = {f"d{k}.arg{i}": a for k, args in enumerate(model.inputs()) for i, a in enumerate(args)}
    save_npz(tmp_path / "in.npz", inputs)
    code = main(["run", str(path), "--check-xla", "--json", "--inputs", str(tmp_path / "in.npz"),
                 "--replicas", str(meta["num_replicas"]), "--partitions", str(meta["num_partitions"])])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["xla"]["error"] is None, report["xla"]
    assert bool(report.get("global_program")) == (stage == "pre" and n > 1)
    for key, out in report["outputs"].items():
        scale = max(abs(out.get("min", 0)), abs(out.get("max", 0)))
        assert out["max_abs_difference_vs_xla"] <= meta["atol"] + meta["rtol"] * scale, key
    assert report["xla"]["worst"]["outputs_compared"] == meta["num_outputs"] * (1 if stage == "pre" else n)

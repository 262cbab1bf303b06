"""`diff` of each model's module before vs after XLA's optimizations (issue 25, item 7): the
sides are named global / per device and the totals compared per device; constants pair by value."""
from __future__ import annotations

import json

import pytest

import hloscope as hs
from hloscope.cli.main import main
from hloscope.report.diff import diff_modules


def _metrics(d):
    return {m.name: m for m in d.metrics}


def test_before_vs_after_compares_like_with_like(model) -> None:
    pre, post = hs.parse(model.pre_text), hs.parse(model.post_text)
    d = diff_modules(pre, post)
    devices = model.meta["num_partitions"] * model.meta["num_replicas"]
    flops = _metrics(d)["flops"]
    if devices == 1:
        assert (d.before_view.kind, d.after_view.kind, d.basis) == ("single-device", "single-device", "as given")
        assert flops.before_as_given is None
        return
    assert (d.before_view.kind, d.before_view.devices) == ("global", devices)
    assert (d.after_view.kind, d.after_view.devices) == ("per-device", devices)
    assert d.basis == "per device"
    # The after side is as the cost analysis gives it (test_agreement checks it against XLA's); the global side's is brought to one device's.
    assert flops.after == flops.after_as_given
    assert flops.after == hs.cost(post).flops
    assert flops.before_as_given == pytest.approx(hs.cost(pre).flops)
    # Per device, partitioning adds work (replicated optimizer updates, collectives' reductions)
    # but does not remove seven eighths of it: as given, every model read -28.8% .. -86.9%.
    assert -0.05 < (flops.after - flops.before) / flops.before < 0.25, flops


def test_constants_pair_by_value(model) -> None:
    """No matched constant differs in value or shape; before the fix, constants without an
    op_name paired in program order (gpt_dp8: constant.94 -> constant.32.clone.1, 402 changed)."""
    pre, post = hs.parse(model.pre_text), hs.parse(model.post_text)
    d = diff_modules(pre, post, analyses=False)
    consts_after = {i.name: i for i in post.instructions() if i.opcode is hs.Opcode.CONSTANT}
    assert not [c for c in d.changed if c.before in consts_after or c.after in consts_after]


@pytest.mark.parametrize("name", ["gpt_dp8"])
def test_cli_names_the_sides_and_the_basis(name, tmp_path, capsys) -> None:
    from hloscope.testing.models import build

    case = build(name)
    pre, post = case.path / "pre.hlo", case.path / "post.hlo"
    assert main(["diff", str(pre), str(post)]) == 0
    out = capsys.readouterr().out
    assert "before: the global program over 8 devices" in out
    assert "after: one device's program (of 8)" in out
    assert "totals per device" in out and "as given 367,6" in out
    assert main(["diff", str(pre), str(post), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["basis"] == "per device"
    assert data["before_view"]["kind"] == "global" and data["after_view"]["kind"] == "per-device"
    flops = {m["name"]: m for m in data["metrics"]}["flops"]
    assert flops["before"] == pytest.approx(flops["before_as_given"] / 8)

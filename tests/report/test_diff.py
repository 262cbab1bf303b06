"""Module diffs: matching by name and by structure, and real changes in a JAX program."""
from __future__ import annotations

import json
import re

import pytest

import hloscope
from hloscope.cli.main import main
from hloscope.report.diff import diff_modules
from tests.conftest import SEED_FILES


def test_identical_modules_have_an_empty_diff():
    a, b = hloscope.load(SEED_FILES["001"]), hloscope.load(SEED_FILES["001"])
    d = diff_modules(a, b, analyses=False)
    assert d.is_empty and d.unchanged == a.instruction_count


def test_renamed_instruction_matches_by_structure():
    text = SEED_FILES["000"].read_text()
    assert "%tanh.15" in text
    renamed = hloscope.parse(text.replace("%tanh.15", "%tanh.renamed"))
    d = diff_modules(hloscope.parse(text), renamed, analyses=False)
    assert d.matched_by_structure == 1 and not d.added and not d.removed
    assert d.is_empty or all("fusion" not in c.changes for c in d.changed)


_FUSED = """HloModule m

fused {
  p = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(p)
}

other {
  q = f32[4]{0} parameter(0)
  ROOT e = f32[4]{0} exponential(q)
}

ENTRY main {
  a = f32[4]{0} parameter(0)
  f = f32[4]{0} fusion(a), kind=kLoop, calls=fused
  ROOT g = f32[4]{0} fusion(f), kind=kLoop, calls=other
}
"""


def test_a_renamed_fusion_keeps_its_body_unchanged_and_a_move_between_fusions_shows():
    before = hloscope.parse(_FUSED)
    renamed = diff_modules(before, hloscope.parse(_FUSED.replace(" f = ", " f.2 = ").replace("fusion(f)", "fusion(f.2)")),
                           analyses=False)
    assert renamed.matched_by_structure == 1
    assert all("fusion" not in c.changes for c in renamed.changed)
    # `n` now sits in the body of the fusion named g (the bodies swapped their roots).
    moved = _FUSED.replace("negate(p)", "exponential(p)").replace("ROOT n =", "ROOT e =")
    moved = moved.replace("exponential(q)", "negate(q)").replace("ROOT e = f32[4]{0} negate", "ROOT n = f32[4]{0} negate")
    d = diff_modules(before, hloscope.parse(moved), analyses=False)
    assert {c.before: c.changes["fusion"] for c in d.changed if "fusion" in c.changes} == {
        "n": ("f", "g"), "e": ("g", "f")}


@pytest.fixture(scope="module")
def mlp_modules():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def mlp(ws, x):
        for w in ws:
            x = jnp.tanh(x @ w)
        return x.sum()

    def compiled(dtype):
        ws = [jnp.ones((16, 32), dtype), jnp.ones((32, 8), dtype)]
        x = jnp.ones((4, 16), dtype)
        text = jax.jit(mlp).lower(ws, x).compile().as_text()
        try:
            return hloscope.parse(text)
        except hloscope.ParseError:
            # Workaround, reported to the parser's owner: the parser cannot read the header's
            # allow_spmd_sharding_propagation_to_*={true,...} yet. They do not affect the diff.
            return hloscope.parse(re.sub(r", allow_spmd_sharding_propagation_to_\w+=\{[^}]*\}", "", text))

    return compiled(jnp.float32), compiled(jnp.bfloat16)


def test_f32_vs_bf16_mlp_names_real_changes(mlp_modules):
    f32, bf16 = mlp_modules
    d = diff_modules(f32, bf16)
    assert not d.is_empty
    changed_shapes = {c.after: c.changes["shape"] for c in d.changed if "shape" in c.changes}
    # The parameters became bf16.
    params = [p.name for p in bf16.entry.parameters]
    assert params and all(p in changed_shapes for p in params)
    assert all(b.startswith("bf16") and a.startswith("f32") for a, b in (changed_shapes[p] for p in params))
    # bf16 brings converts (to f32 for the dots and back).
    assert any(r.opcode == "convert" or r.opcode == "fusion" for r in d.added)
    by_metric = {m.name: m for m in d.metrics}
    assert set(by_metric) == {"flops", "bytes_accessed", "live_range_peak", "collective_bytes"}
    # The diff's peak is the memory report's (one peak, computed without the buffer assignment).
    from hloscope.analysis.memory.report import analyze_memory

    peak = by_metric["live_range_peak"]
    assert (peak.before, peak.after) == (analyze_memory(f32).peak_bytes, analyze_memory(bf16).peak_bytes)
    assert peak.before > 0
    data = json.loads(json.dumps(d.to_json()))
    assert data["change_counts"]["shape"] >= len(params)


def test_cli_diff_json(tmp_path, mlp_modules, capsys):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(mlp_modules[0].to_text())
    b.write_text(mlp_modules[1].to_text())
    assert main(["diff", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["changed"] and "metrics" in data
    assert main(["diff", str(a), str(b)]) == 0
    assert "changed:" in capsys.readouterr().out


_CONSTANTS = """HloModule m

ENTRY main {
  p = f32[] parameter(0)
  c1 = f32[] constant(1)
  c2 = f32[] constant(2)
  a = f32[] add(p, c1)
  ROOT m = f32[] multiply(a, c2)
}
"""


def test_constants_match_by_value_not_by_name_or_order():
    # The names swapped: by name, c1 (1) would pair with c1 (2).
    swapped = _CONSTANTS.replace("c1 = f32[] constant(1)", "c1 = f32[] constant(2)").replace(
        "c2 = f32[] constant(2)", "c2 = f32[] constant(1)").replace("add(p, c1)", "add(p, c2)").replace(
        "multiply(a, c2)", "multiply(a, c1)")
    d = diff_modules(hloscope.parse(_CONSTANTS), hloscope.parse(swapped), analyses=False)
    assert (d.matched_by_structure, d.added, d.removed, d.changed) == (2, [], [], [])
    # Renamed and listed in the other order: program order would pair 1 with 2.
    renamed = _CONSTANTS.replace("  c1 = f32[] constant(1)\n  c2 = f32[] constant(2)\n",
                                 "  constant.7 = f32[] constant(2)\n  constant.9 = f32[] constant(1)\n")
    renamed = renamed.replace("add(p, c1)", "add(p, constant.9)").replace("multiply(a, c2)", "multiply(a, constant.7)")
    d = diff_modules(hloscope.parse(_CONSTANTS), hloscope.parse(renamed), analyses=False)
    assert d.matched_by_structure == 2 and d.is_empty


def test_a_constant_cloned_into_a_fusion_is_not_a_change():
    fused = """HloModule m

fused {
  q = f32[] parameter(0)
  c1.clone = f32[] constant(1)
  ROOT a = f32[] add(q, c1.clone)
}

ENTRY main {
  p = f32[] parameter(0)
  f = f32[] fusion(p), kind=kLoop, calls=fused
  c2 = f32[] constant(2)
  ROOT m = f32[] multiply(f, c2)
}
"""
    d = diff_modules(hloscope.parse(_CONSTANTS), hloscope.parse(fused), analyses=False)
    assert not [c for c in d.changed if c.opcode == "constant"]
    assert not [r for r in d.removed if r.opcode == "constant"]


_SHARDED = """HloModule m{header}

ENTRY main {{
  p = f32[{rows},4]{{1,0}} parameter(0), sharding={{devices=[4,1]<=[4]}}
  {body}
}}
"""


def _sharded(rows: int, header: str = "", body: str = "ROOT n = f32[{rows},4]{{1,0}} negate(p)") -> hloscope.Module:
    return hloscope.parse(_SHARDED.format(rows=rows, header=header, body=body.format(rows=rows)))


def test_program_views():
    from hloscope.report.program_view import compare_views, program_view

    shardy = _sharded(8, ", frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<[\"x\"=4]>}}")
    assert (program_view(shardy).kind, program_view(shardy).devices) == ("global", 4)
    partitioned = _sharded(2, ", num_partitions=4")
    assert (program_view(partitioned).kind, program_view(partitioned).devices) == ("per-device", 4)
    with_collective = hloscope.parse(_sharded(2).to_text().replace("ENTRY", (
        "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\nENTRY")).replace(
        "negate(p)", "all-reduce(p), replica_groups={}, to_apply=add"))
    assert program_view(with_collective).kind == "per-device"
    assert program_view(hloscope.parse(_CONSTANTS)).kind == "single-device"
    # Neither says: the parameter's shapes do (8 rows = 4 tiles of 2).
    a, b = compare_views(_sharded(8), _sharded(2))
    assert (a.kind, b.kind, a.devices) == ("global", "per-device", 4)
    a, b = compare_views(_sharded(2), _sharded(8))
    assert (a.kind, b.kind) == ("per-device", "global")


def test_global_vs_per_device_totals_are_compared_per_device():
    shardy = _sharded(8, ", frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<[\"x\"=4]>}}")
    d = diff_modules(shardy, _sharded(2, ", num_partitions=4"))
    flops = {m.name: m for m in d.metrics}["flops"]
    assert d.basis == "per device"
    assert (flops.before_as_given, flops.before, flops.after) == (32, 8, 8)
    assert flops.delta == 0 and "divided evenly over 4 devices" in flops.note

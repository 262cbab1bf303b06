"""``hloscope run --check-xla`` on the smallest modules that broke it in real training steps
(issue 25: the models tier's data-parallel, tensor-parallel, shard_map and pmap steps), each
compared with XLA:CPU in a child process (``hloscope.xla.worker``)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from hloscope.cli.main import main
from hloscope.interpret.npz_io import save_npz

pytest.importorskip("jax")

pytestmark = pytest.mark.xla_execute

_ADD = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""

# XLA combines two psums of a data-parallel step into one variadic all-reduce with a channel_id
# and flattened ids; compiled again it failed ("LogicalBuffer ar[] does not have a layout").
COMBINED_PSUMS = """HloModule combined, replica_count=8
""" + _ADD + """
ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = f32[] parameter(1)
  ar = (f32[4], f32[]) all-reduce(p0, p1), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=add
  g0 = f32[4] get-tuple-element(ar), index=0
  g1 = f32[] get-tuple-element(ar), index=1
  ROOT t = (f32[4], f32[]) tuple(g0, g1)
}
"""

# The same in a partitioned module (num_partitions=8, run as replicas by the XLA:CPU bridge).
COMBINED_PSUMS_PARTITIONED = COMBINED_PSUMS.replace("replica_count=8", "num_partitions=8")

# A tensor-parallel step's gathers and reductions over a 4x2 mesh, in the mesh and iota forms
# XLA prints ("'stablehlo.all_gather' op INVALID_ARGUMENT: Unknown axis axis_2").
MESH_GROUPS = """HloModule mesh_groups, num_partitions=8
""" + _ADD + """
ENTRY e {
  p = f32[2,3] parameter(0)
  ag = f32[4,3] all-gather(p), channel_id=1, replica_groups=mesh['axis_0'=1,'axis_1'=2,'axis_2'=4], device_ids=([4,2]T(1,0)) {'axis_1'}, dimensions={0}, use_global_device_ids=true
  ar = f32[4,3] all-reduce(ag), channel_id=2, replica_groups=[4,2]<=[8], use_global_device_ids=true, to_apply=add
  ar2 = f32[2,3] all-reduce(p), channel_id=3, replica_groups=mesh['axis_0'=4,'axis_1'=1,'axis_2'=1,'axis_3'=2] {'axis_0'}, use_global_device_ids=true, to_apply=add
  ROOT t = (f32[4,3], f32[2,3]) tuple(ar, ar2)
}
"""

# A sharded jit before partitioning (what jax lowers; the header names no device count): XLA
# wanted each device's shard ("array parameter 0 must be float32[2, 4], got float32[16, 4]").
GLOBAL_PROGRAM = """HloModule sharded_jit
""" + _ADD + """
ENTRY e {
  x = f32[16,4] parameter(0), sharding={devices=[8,1]<=[8]}
  w = f32[4] parameter(1), sharding={replicated}
  c = f32[] constant(0)
  b = f32[16,4] broadcast(w), dimensions={1}
  m = f32[16,4] multiply(x, b)
  s = f32[16] reduce(m, c), dimensions={1}, to_apply=add
  total = f32[] reduce(s, c), dimensions={0}, to_apply=add
  ROOT t = (f32[16], f32[]) tuple(s, total), sharding={{devices=[8]<=[8]}, {replicated}}
}
"""


def _check(tmp_path, capsys, text: str, *args: str) -> dict:
    mod = tmp_path / "m.hlo"
    mod.write_text(text)
    code = main(["run", str(mod), "--check-xla", "--json", *args])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["xla"]["error"] is None, report["xla"]
    return report


def _per_device_inputs(tmp_path, shapes, n: int = 8) -> str:
    """Small integers as floats, different on every device: sums are exact in any order."""
    rng = np.random.default_rng(0)
    path = tmp_path / "in.npz"
    save_npz(path, {f"d{k}.arg{i}": rng.integers(-8, 8, s).astype(np.float32)
                    for k in range(n) for i, s in enumerate(shapes)})
    return str(path)


@pytest.mark.parametrize("text", [COMBINED_PSUMS, COMBINED_PSUMS_PARTITIONED], ids=["replicas", "partitions"])
def test_combined_all_reduce_with_channel_id(tmp_path, capsys, text: str) -> None:
    report = _check(tmp_path, capsys, text, "--inputs", _per_device_inputs(tmp_path, [(4,), ()]))
    assert report["xla"]["worst"]["max_abs_difference"] == 0
    assert report["xla"]["worst"]["outputs_compared"] == 16


def test_mesh_and_iota_replica_groups(tmp_path, capsys) -> None:
    report = _check(tmp_path, capsys, MESH_GROUPS, "--inputs", _per_device_inputs(tmp_path, [(2, 3)]))
    assert report["xla"]["worst"]["max_abs_difference"] == 0
    assert "8 partitions run as replicas" in report["xla"]["rewrite"]


def test_global_program_compares_global_outputs(tmp_path, capsys) -> None:
    rng = np.random.default_rng(1)
    x, w = rng.integers(-8, 8, (16, 4)).astype(np.float32), rng.integers(-8, 8, 4).astype(np.float32)
    save_npz(tmp_path / "in.npz", {"arg0": x, "arg1": w})
    report = _check(tmp_path, capsys, GLOBAL_PROGRAM, "--partitions", "8", "--inputs", str(tmp_path / "in.npz"))
    assert report["global_program"] and report["xla"]["compared"] == "global outputs"
    assert report["outputs"]["out.0"]["shape"] == [16] and report["outputs"]["out.1"]["shape"] == []
    assert report["xla"]["worst"] == {"output": report["xla"]["worst"]["output"], "max_abs_difference": 0.0,
                                      "outputs_compared": 2}
    # The human table: the global outputs, then one line with the worst difference.
    assert main(["run", str(tmp_path / "m.hlo"), "--check-xla", "--partitions", "8",
                 "--inputs", str(tmp_path / "in.npz")]) == 0
    out = capsys.readouterr().out
    assert "a global program" in out and "(16,)" in out
    assert out.rstrip().splitlines()[-1].startswith("worst |hloscope - XLA| over 2 outputs: 0 (")


def test_global_program_given_per_device_shards(tmp_path, capsys) -> None:
    """Shards of a global program's inputs, one set per device, are put back together for
    XLA as for hloscope; with --per-device the devices' shards of the outputs are written."""
    rng = np.random.default_rng(2)
    x, w = rng.integers(-8, 8, (16, 4)).astype(np.float32), rng.integers(-8, 8, 4).astype(np.float32)
    save_npz(tmp_path / "in.npz", {**{f"d{k}.arg0": x[2 * k:2 * k + 2] for k in range(8)},
                                   **{f"d{k}.arg1": w for k in range(8)}})
    report = _check(tmp_path, capsys, GLOBAL_PROGRAM, "--partitions", "8", "--inputs", str(tmp_path / "in.npz"),
                    "--per-device")
    assert report["outputs"]["d3.out.0"]["shape"] == [2]
    assert report["outputs"]["d3.out.0"]["max_abs_difference_vs_xla"] == 0
    assert report["xla"]["worst"]["max_abs_difference"] == 0


def test_refusal_still_prints_hloscopes_results(tmp_path, capsys, monkeypatch) -> None:
    """When XLA:CPU refuses or dies, the outputs hloscope computed are printed (and written),
    with XLA's reason and exit code 1; the JSON twin says the same."""
    from hloscope.errors import HloscopeError
    from hloscope.xla import worker

    def crash(*args, **kwargs):
        raise HloscopeError("XLA:CPU could not run the module (killed by signal 6): F0000 Check failed")

    monkeypatch.setattr(worker, "run_on_xla", crash)
    mod = tmp_path / "m.hlo"
    mod.write_text(GLOBAL_PROGRAM)
    out_npz = tmp_path / "out.npz"
    assert main(["run", str(mod), "--check-xla", "--partitions", "8", "--out", str(out_npz)]) == 1
    captured = capsys.readouterr()
    assert "sharded_jit" in captured.out and "(16,)" in captured.out and out_npz.exists()
    assert "killed by signal 6" in captured.err and "nothing was compared" in captured.err
    assert main(["run", str(mod), "--check-xla", "--partitions", "8", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert "killed by signal 6" in report["xla"]["error"] and report["outputs"]["out.0"]["shape"] == [16]

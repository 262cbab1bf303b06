"""``hloscope run`` end to end: input/output files, device prefixes, errors, --check-xla."""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from hloscope.cli.main import main
from hloscope.interpret.npz_io import load_npz, save_npz
from tests.conftest import SEED_FILES

ADD = """HloModule add

ENTRY main {
  x = bf16[4]{0} parameter(0)
  t = (f32[2]{0}, s32[]) parameter(1)
  a = f32[2]{0} get-tuple-element(t), index=0
  c = f32[2]{0} constant({1, 2})
  s = f32[2]{0} add(a, c)
  ROOT r = (bf16[4]{0}, f32[2]{0}) tuple(x, s)
}
"""

ELIDED = """HloModule elided

ENTRY main {
  c = f32[3]{0} constant({...})
  p = f32[3]{0} parameter(0)
  ROOT r = f32[3]{0} add(c, p)
}
"""


def test_inputs_and_outputs_files_keep_xla_types(tmp_path, capsys) -> None:
    mod = tmp_path / "add.hlo"
    mod.write_text(ADD)
    x = np.array([1.5, -2, 3, 0.25], ml_dtypes.bfloat16)
    save_npz(tmp_path / "in.npz", {"arg0": x, "arg1.0": np.array([10, 20], np.float32),
                                   "arg1.1": np.array(7, np.int32)})
    assert main(["run", str(mod), "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "out.npz")]) == 0
    out = load_npz(tmp_path / "out.npz")
    assert out["out.0"].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out["out.0"], x)
    np.testing.assert_array_equal(out["out.1"], [11, 22])
    capsys.readouterr()


def test_wrong_input_shape_names_the_parameter(tmp_path, capsys) -> None:
    mod = tmp_path / "add.hlo"
    mod.write_text(ADD)
    save_npz(tmp_path / "in.npz", {"arg0": np.zeros(5, np.float32), "arg1.0": np.zeros(2, np.float32),
                                   "arg1.1": np.array(0, np.int32)})
    assert main(["run", str(mod), "--inputs", str(tmp_path / "in.npz")]) == 1
    err = capsys.readouterr().err
    assert "parameter 0 (x)" in err and "Traceback" not in err


def test_missing_and_unknown_inputs_are_clear(tmp_path, capsys) -> None:
    mod = tmp_path / "add.hlo"
    mod.write_text(ADD)
    save_npz(tmp_path / "in.npz", {"arg0": np.zeros(4, ml_dtypes.bfloat16)})
    assert main(["run", str(mod), "--inputs", str(tmp_path / "in.npz")]) == 1
    assert "no input for parameter 1 (t" in capsys.readouterr().err
    save_npz(tmp_path / "in2.npz", {"arg7": np.zeros(4, np.float32)})
    assert main(["run", str(mod), "--inputs", str(tmp_path / "in2.npz")]) == 1
    assert "names no parameter" in capsys.readouterr().err


def test_elided_constants_need_an_explicit_fill(tmp_path, capsys) -> None:
    mod = tmp_path / "e.hlo"
    mod.write_text(ELIDED)
    assert main(["run", str(mod)]) == 1
    assert "elided" in capsys.readouterr().err
    assert main(["run", str(mod), "--fill-elided", "zeros", "--json"]) == 0
    assert "out" in json.loads(capsys.readouterr().out)["outputs"]


def test_multi_device_outputs_are_prefixed(tmp_path, capsys) -> None:
    out = tmp_path / "o.npz"
    assert main(["run", str(SEED_FILES["001"]), "--out", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["replicas"], data["partitions"]) == (1, 4)
    keys = set(load_npz(out))
    assert {f"d{k}.out.1" for k in range(4)} <= keys


def test_per_device_input_overrides_shared_one(tmp_path, capsys) -> None:
    mod = tmp_path / "rid.hlo"
    mod.write_text("HloModule r, replica_count=2\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n"
                   "  ROOT n = f32[2]{0} negate(p)\n}\n")
    save_npz(tmp_path / "in.npz", {"arg0": np.array([1, 2], np.float32), "d1.arg0": np.array([5, 6], np.float32)})
    assert main(["run", str(mod), "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz")]) == 0
    o = load_npz(tmp_path / "o.npz")
    np.testing.assert_array_equal(o["d0.out"], [-1, -2])
    np.testing.assert_array_equal(o["d1.out"], [-5, -6])
    capsys.readouterr()


def test_check_xla_reports_the_difference(tmp_path, capsys) -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def f(x, w):
        return jnp.tanh(x @ w).sum(0), jnp.argsort(x[:, 0])

    mod = tmp_path / "j.hlo"
    mod.write_text(jax.jit(f).lower(jnp.ones((8, 4)), jnp.ones((4, 3))).compile().as_text())
    assert main(["run", str(mod), "--check-xla", "--json", "--random", "3"]) == 0
    outs = json.loads(capsys.readouterr().out)["outputs"]
    assert outs["out.0"]["max_abs_difference_vs_xla"] < 1e-5
    assert outs["out.1"]["max_abs_difference_vs_xla"] == 0


def test_unpartitioned_pmap_program_writes_global_outputs(oracle_corpus, tmp_path, capsys) -> None:
    # A pmap program before partitioning, given its global input f32[8,3,4], wrote eight
    # (1,3,4) shards d0.out.0 ... instead of the outputs its signature declares.
    case = oracle_corpus.case("pmap_reductions_axis_index")
    import hloscope
    from hloscope.interpret.spmd import is_global_program

    if not is_global_program(hloscope.parse(case.pre_text)):
        pytest.skip("this jax lowers pmap to a per-replica program (before 0.8), not a global one")
    mod = tmp_path / "pre.hlo"
    mod.write_text(case.pre_text)
    x = np.random.default_rng(0).standard_normal((8, 3, 4)).astype(np.float32)
    save_npz(tmp_path / "in.npz", {"arg0": x})
    out = tmp_path / "out.npz"
    assert main(["run", str(mod), "--inputs", str(tmp_path / "in.npz"), "--out", str(out), "--json"]) == 0
    got = load_npz(out)
    assert sorted(got) == [f"out.{i}" for i in range(6)]
    assert got["out.0"].shape == (8, 3, 4) and got["out.5"].shape == (8,)
    np.testing.assert_allclose(got["out.0"], np.broadcast_to(x.sum(0), (8, 3, 4)), rtol=1e-5)
    assert got["out.5"].tolist() == list(range(8))
    capsys.readouterr()
    assert main(["run", str(mod), "--inputs", str(tmp_path / "in.npz"), "--out", str(out), "--json",
                 "--per-device"]) == 0
    shards = load_npz(out)
    assert shards["d3.out.0"].shape == (1, 3, 4) and shards["d3.out.5"].tolist() == [3]


def test_run_refuses_what_verify_rejects_with_the_verifiers_message(tmp_path, capsys) -> None:
    mod = tmp_path / "bad.hlo"
    mod.write_text("HloModule bad\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[3] negate(a)\n}\n")
    assert main(["run", str(mod)]) == 3
    err = capsys.readouterr().err
    assert "b" in err and "f32[3]" in err and "verifier" in err


def test_random_inputs_for_an_unbounded_dimension(tmp_path, capsys) -> None:
    # --random drew a zero-size dimension for f32[?,784] and then refused its own input.
    mod = tmp_path / "dyn.hlo"
    mod.write_text("HloModule dyn\nENTRY e {\n  a = f32[?,784] parameter(0)\n  ROOT n = f32[?,784] negate(a)\n}\n")
    out = tmp_path / "o.npz"
    assert main(["run", str(mod), "--random", "1", "--out", str(out), "--json"]) == 0
    assert load_npz(out)["out"].shape == (4, 784)


def test_gather_without_device_count_says_what_grid_it_runs_on(tmp_path, capsys) -> None:
    mod = tmp_path / "g.hlo"
    mod.write_text("HloModule g\nENTRY e {\n  a = f32[4,16] parameter(0)\n"
                   "  ROOT b = f32[32,16] all-gather(a), dimensions={0}\n}\n")
    assert main(["run", str(mod)]) == 0
    assert "runs on 8 replicas" in capsys.readouterr().err
    assert main(["run", str(mod), "--replicas", "1"]) == 3
    assert "gathers 8 shards" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["moe_a2a8", "gpt_dp8"])
def test_per_device_outputs_have_jaxs_shapes_on_a_real_model(name, tmp_path, capsys) -> None:
    # run --per-device on the shard_map MoE step before partitioning wrote its replicated
    # scalars (the loss, the optimizer's step count) as shape (1,) where jax gives ().
    pytest.importorskip("flax")
    from hloscope.interpret.npz_io import device_values
    from hloscope.testing.models import build
    from tests.oracle_fixtures import assert_values_close

    model = build(name)
    mod = tmp_path / "pre.hlo"
    mod.write_text(model.pre_text)
    out = tmp_path / "out.npz"
    n = model.num_devices
    assert main(["run", str(mod), "--inputs", str(model.path / "global_inputs.npz"), "--partitions", str(n),
                 "--per-device", "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    got = device_values(load_npz(out), "out", n)
    expected = model.outputs()  # jax's outputs, device by device
    scalars = [i for i, x in enumerate(expected[0]) if np.ndim(x) == 0]
    assert scalars, "the step returns a replicated scalar (the loss)"
    for k in range(n):
        assert [np.shape(x) for x in got[k]] == [np.shape(x) for x in expected[k]]
    assert_values_close(got, expected, model.meta["rtol"], model.meta["atol"])

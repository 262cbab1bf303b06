"""Sharded modules not partitioned yet run as one global program (Note [Global programs] in
interpret/spmd.py): which modules are such programs, and manual regions written inline."""
from __future__ import annotations

import numpy as np
import pytest

import hloscope
from hloscope.interpret import run
from hloscope.interpret.spmd import has_inline_regions, is_global_program, outline_inline_regions
from hloscope.ir import Opcode
from tests.conftest import MODULE_SEEDS, SEED_FILES

_ADD = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""

SHARDED_JIT = """HloModule sharded
""" + _ADD + """
ENTRY e {
  x = f32[16,4] parameter(0), sharding={devices=[8,1]<=[8]}
  c = f32[] constant(0)
  ROOT s = f32[16] reduce(x, c), dimensions={1}, to_apply=add
}
"""


@pytest.mark.parametrize("seed", MODULE_SEEDS)
def test_seeds_are_per_device_programs(seed: str) -> None:
    assert not is_global_program(hloscope.load(SEED_FILES[seed]))


def test_what_makes_a_global_program() -> None:
    """Note [Recognising a global program]: sharding annotations and no partitioner output."""
    assert is_global_program(hloscope.parse(SHARDED_JIT))
    assert is_global_program(hloscope.parse(SHARDED_JIT.replace("devices=[8,1]<=[8]", "replicated")))
    assert not is_global_program(hloscope.parse(SHARDED_JIT.replace(", sharding={devices=[8,1]<=[8]}", "")))
    # What XLA's partitioner leaves: a collective, partition-id, a schedule, fusions.
    reduced = SHARDED_JIT.replace(
        "ROOT s = f32[16] reduce(x, c), dimensions={1}, to_apply=add",
        "r = f32[16] reduce(x, c), dimensions={1}, to_apply=add\n"
        "  ROOT s = f32[16] all-reduce(r), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, "
        "use_global_device_ids=true, to_apply=add")
    assert not is_global_program(hloscope.parse(reduced))
    pid = SHARDED_JIT.replace("c = f32[] constant(0)", "c = f32[] constant(0)\n  i = u32[] partition-id()")
    assert not is_global_program(hloscope.parse(pid))
    assert not is_global_program(hloscope.parse(SHARDED_JIT.replace("HloModule sharded", "HloModule sharded, is_scheduled=true")))


def test_an_unpartitioned_sharded_jit_returns_its_global_outputs() -> None:
    """It ran as 8 copies of the global program (a list of 8 results)."""
    x = np.arange(64, dtype=np.float32).reshape(16, 4)
    out = run(hloscope.parse(SHARDED_JIT), [x], partitions=8)
    np.testing.assert_array_equal(out, x.sum(1))


# --- manual regions written inline (Note [Manual regions written inline]) ----------------------

# XLA's module after its CallInliner (--xla_dump_hlo_pass_re=call-inliner) for
#   jax.jit(lambda a: shard_map(lambda a: psum(a * 2, "x") + a, mesh, P("x"), P("x"))(a + 1) * 3)
# lowered with jax_use_shardy_partitioner=False (jax 0.10.2; metadata left out).
INLINE = """HloModule jit__lambda, num_partitions=8

%region_0.1 (psum_invariant.2: f32[], psum_invariant.3: f32[]) -> f32[] {
  %psum_invariant.2 = f32[] parameter(0)
  %psum_invariant.3 = f32[] parameter(1)
  ROOT %add.3 = f32[] add(%psum_invariant.2, %psum_invariant.3)
}

ENTRY %main.3 (a.1: f32[16,2]) -> f32[16,2] {
  %a.1 = f32[16,2]{1,0} parameter(0)
  %constant.5 = f32[] constant(1)
  %add.6 = f32[16,2]{1,0} broadcast(%constant.5), dimensions={}
  %add.7 = f32[16,2]{1,0} add(%a.1, %add.6)
  %shard_map.5 = f32[16,2]{1,0} custom-call(%add.7), custom_call_target="Sharding", sharding={devices=[8,1]<=[8]}
  %shard_map.6 = f32[2,2]{1,0} custom-call(%shard_map.5), custom_call_target="SPMDFullToShardShape", sharding={manual}
  %constant.0 = f32[] constant(2)
  %broadcast.0 = f32[2,2]{1,0} broadcast(%constant.0), dimensions={}
  %mul.0 = f32[2,2]{1,0} multiply(%shard_map.6, %broadcast.0)
  %psum_invariant.0 = f32[2,2]{1,0} all-reduce(%mul.0), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%region_0.1
  %add.0 = f32[2,2]{1,0} add(%psum_invariant.0, %shard_map.6)
  %shard_map.8 = f32[2,2]{1,0} custom-call(%add.0), custom_call_target="Sharding", sharding={manual}
  %shard_map.9 = f32[16,2]{1,0} custom-call(%shard_map.8), custom_call_target="SPMDShardToFullShape", sharding={devices=[8,1]<=[8]}
  %constant.4 = f32[] constant(3)
  %mul.4 = f32[16,2]{1,0} broadcast(%constant.4), dimensions={}
  ROOT %mul.5 = f32[16,2]{1,0} multiply(%shard_map.9, %mul.4)
}
"""


def test_an_inline_region_runs_like_the_called_form() -> None:
    """It stopped with "hloscope evaluates a manual region only as a called computation"."""
    m = hloscope.parse(INLINE)
    text = m.to_text()
    assert is_global_program(m) and has_inline_regions(m)
    x = np.arange(32, dtype=np.float32).reshape(16, 2)
    out = run(m, [x], partitions=8)
    a = (x + 1).reshape(8, 2, 2)
    np.testing.assert_array_equal(out, ((a * 2).sum(0) + a).reshape(16, 2) * 3)
    assert m.to_text() == text  # the caller's module is left as it was
    outlined = outline_inline_regions(m)
    assert not has_inline_regions(outlined)
    (call,) = [i for i in outlined.entry.instructions if i.opcode is Opcode.CALL]
    body = call.attrs["to_apply"]
    # The region's own constants went with it; its all-reduce is per device there.
    assert {i.opcode for i in body.instructions} >= {Opcode.CONSTANT, Opcode.ALL_REDUCE, Opcode.MULTIPLY}
    assert [o.name for o in call.operands] == ["shard_map.6"]
    np.testing.assert_array_equal(run(outlined, [x], partitions=8), out)
    shards = run(m, [x], partitions=8, options=hloscope.RunOptions(per_device=True))
    np.testing.assert_array_equal(shards[3], out[6:8])


def test_a_called_region_is_not_outlined_again(oracle_corpus) -> None:
    m = hloscope.parse(oracle_corpus.case("manual_region_gspmd").pre_text)
    assert is_global_program(m) and not has_inline_regions(m)
    assert outline_inline_regions(m) is m


def _after_call_inliner(fn, *args):
    """XLA's module after CallInliner for ``jax.jit(fn)`` lowered with GSPMD (the manual
    regions written inline), and jax's outputs (XLA:CPU's) for ``args``."""
    import glob
    import tempfile

    import jax

    from hloscope.xla.lowering import use_shardy

    with tempfile.TemporaryDirectory() as d, use_shardy(False):
        compiled = jax.jit(fn).lower(*args).compile(compiler_options={
            "xla_dump_to": d, "xla_dump_hlo_pass_re": "call-inliner", "xla_dump_hlo_as_text": True})
        path = sorted(glob.glob(f"{d}/*after_call-inliner*.txt"))[0]
        with open(path) as f:
            text = f.read()
    out = compiled(*args)
    return text, [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


def _two_regions():
    """Two inline regions over a 4x2 mesh, one after the other: partition-id (axis_index),
    reductions over each axis, an all-gather, a tuple and values read from outside."""
    import jax
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("x", "y"))

    def body(a, b):
        return jax.lax.psum(a * b, "y") + jax.lax.axis_index("x"), jax.lax.pmax(b, "x")

    first = jax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P(None, "y")),
                          out_specs=(P("x", "y"), P(None, "y")))
    second = jax.shard_map(lambda u: jax.lax.all_gather(u, "x", tiled=True), mesh=mesh,
                           in_specs=P("x", "y"), out_specs=P(None, "y"), check_vma=False)

    def step(a, b):
        u, v = first(a + 1, b)
        return second(u * 2), v

    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    b = (np.arange(16, dtype=np.float32) / 7).reshape(2, 8)
    return step, (a, b)


def _operand_less():
    import jax
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    ids = jax.shard_map(lambda: jax.lax.axis_index("x").reshape(1) * 10, mesh=mesh, in_specs=(),
                        out_specs=P("x"))

    def step(a):
        return a + ids()

    return step, (np.arange(8, dtype=np.int32),)


@pytest.mark.parametrize("program", [_two_regions, _operand_less], ids=["two_regions", "no_operands"])
def test_inline_regions_from_xla_compute_what_xla_computes(program) -> None:
    pytest.importorskip("jax")
    fn, args = program()
    text, expected = _after_call_inliner(fn, *args)
    m = hloscope.parse(text)
    assert has_inline_regions(m)
    got = run(m, list(args), partitions=8)
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)


@pytest.mark.xla_execute
def test_check_xla_on_an_inline_region(tmp_path, capsys) -> None:
    import json

    from hloscope.cli.main import main
    from hloscope.interpret.npz_io import save_npz

    pytest.importorskip("jax")
    fn, args = _two_regions()
    text, _ = _after_call_inliner(fn, *args)
    (tmp_path / "m.hlo").write_text(text)
    save_npz(tmp_path / "in.npz", {f"arg{i}": a for i, a in enumerate(args)})
    assert main(["run", str(tmp_path / "m.hlo"), "--check-xla", "--json", "--inputs", str(tmp_path / "in.npz")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["global_program"] and report["xla"]["error"] is None
    assert report["xla"]["worst"]["max_abs_difference"] == 0

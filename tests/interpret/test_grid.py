"""The device grid a module runs on when it names none, and shapes that must fit that grid."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hloscope
from hloscope.errors import InterpretError
from hloscope.interpret import run
from hloscope.interpret.run import infer_grid
from hloscope.ir.verifier import verify

GATHER = """HloModule m
ENTRY e {
  a = s4[4,16] parameter(0)
  ROOT b = s4[32,16] all-gather(a), dimensions={0}
}"""


def test_gather_without_device_count_runs_on_the_devices_its_shapes_imply() -> None:
    m = hloscope.parse(GATHER)
    r, p, note = infer_grid(m)
    assert (r, p) == (8, 1) and "8 shards" in note and "b" in note
    x = (np.arange(64) % 7).reshape(4, 16).astype(ml_dtypes.int4)
    out = run(m, [x])
    assert len(out) == 8 and all(o.shape == (32, 16) for o in out)
    assert np.array_equal(out[3].astype(np.int8), np.tile(x.astype(np.int8), (8, 1)))


def test_gather_on_one_device_stops_naming_the_instruction_and_both_shapes() -> None:
    # It returned s4[4,16] for b = s4[32,16]: a value of another shape than declared.
    x = np.zeros((4, 16), ml_dtypes.int4)
    with pytest.raises(InterpretError, match=r"all-gather b gathers 8 shards .*s4\[4,16\] -> s4\[32,16\]"):
        run(hloscope.parse(GATHER), [x], replicas=1)


def test_verifier_checks_gathers_against_the_grid_it_is_given() -> None:
    m = hloscope.parse(GATHER)
    assert verify(m) == []  # no device count known: as XLA's verifier, nothing to check
    assert verify(m, replicas=8) == []
    (d,) = verify(m, replicas=1)
    assert d.severity == "error" and d.instruction == "b" and "s4[4,16] -> s4[32,16]" in d.message
    (d,) = verify(m, replicas=2, partitions=2)
    assert "groups have 2 device(s)" in d.message


CHANNEL_NO_GLOBAL_IDS = """HloModule m
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[3] parameter(0)
  ROOT r = f32[3] all-reduce(a), channel_id=1, replica_groups={{0,1},{2,3}}, to_apply=sum
}"""


def test_channel_ids_without_global_device_ids_are_replicas_as_on_xla() -> None:
    # XLA's collective-op group mode for channel_id without use_global_device_ids is
    # cross-replica-and-partition: the ids are replica ids. They were taken for partitions.
    client = pytest.importorskip("hloscope.xla.client")
    m = hloscope.parse(CHANNEL_NO_GLOBAL_IDS)
    assert infer_grid(m)[:2] == (4, 1)
    xs = [[np.full(3, k + 1, np.float32)] for k in range(4)]
    ours = run(m, xs)
    theirs = client.compile_and_run(CHANNEL_NO_GLOBAL_IDS, xs, replicas=4, partitions=1)
    for o, t in zip(ours, theirs, strict=True):
        assert np.array_equal(o, np.asarray(t))
    assert [float(o[0]) for o in ours] == [3, 3, 7, 7]
    from hloscope.errors import XlaCompileError

    with pytest.raises(XlaCompileError, match="replica_id < replica_count"):  # the partitions reading
        client.compile_and_run(CHANNEL_NO_GLOBAL_IDS, xs, replicas=1, partitions=4, spmd_partition=True)


def test_a_header_naming_one_count_means_one_of_the_other() -> None:
    # XLA prints replica_count and num_partitions only when they are not 1; the flattened ids
    # below were taken for 8 partitions besides the header's 8 replicas (a 64-device run).
    m = hloscope.parse(CHANNEL_NO_GLOBAL_IDS.replace("HloModule m", "HloModule m, replica_count=8").replace(
        "channel_id=1, replica_groups={{0,1},{2,3}}",
        "channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true"))
    assert infer_grid(m) == (8, 1, None)
    assert infer_grid(hloscope.parse(GATHER.replace("HloModule m", "HloModule m, num_partitions=2")))[:2] == (1, 2)


def test_verify_command_takes_the_device_count(tmp_path, capsys) -> None:
    from hloscope.cli.main import main

    mod = tmp_path / "g.hlo"
    mod.write_text(GATHER)
    assert main(["verify", str(mod)]) == 0
    assert main(["verify", str(mod), "--replicas", "8"]) == 0
    assert main(["verify", str(mod), "--replicas", "1"]) == 3
    assert "gathers 8 shards" in capsys.readouterr().err


def test_gather_without_channel_sets_the_replicas_when_partitions_are_known() -> None:
    # The permute's channel ids make 2 partitions; the gather without channel_id groups every
    # replica of a partition, so its 3 shards mean 3 replicas (it ran on 1 x 2 and refused).
    m = hloscope.parse("""HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  cp = f32[2] collective-permute(a), channel_id=1, source_target_pairs={{0,1},{1,0}}
  ROOT g = f32[6] all-gather(cp), dimensions={0}
}""")
    assert infer_grid(m)[:2] == (3, 2)
    xs = [[np.array([d, 10 * d], np.float32)] for d in range(6)]  # device d = replica * 2 + partition
    out = run(m, xs)
    for d in range(6):
        other = 1 - d % 2  # the permute brings the other partition's value
        expected = np.concatenate([xs[r * 2 + other][0] for r in range(3)])
        np.testing.assert_array_equal(out[d], expected)


def test_async_reduce_scatter_sugar_implies_the_replicas_too() -> None:
    # reduce-scatter-start wraps its collective in a computation outside the module's list:
    # the grid is read from the collective it wraps (an XLA test module had this form).
    m = hloscope.parse("""HloModule rs_async
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[6] parameter(0)
  s = ((f32[6]), f32[2]) reduce-scatter-start(x), to_apply=sum, dimensions={0}
  ROOT d = f32[2] reduce-scatter-done(s)
}
""")
    assert infer_grid(m)[:2] == (3, 1)
    x = np.arange(6, dtype=np.float32)
    out = run(m, [x])
    assert [o.tolist() for o in out] == [[0.0, 3.0], [6.0, 9.0], [12.0, 15.0]]  # 3 x the shard

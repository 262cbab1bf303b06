"""Decoding of the attribute values hloscope keeps as text: shardings, frontend attributes,
replica groups, metadata."""
from __future__ import annotations

import pytest

from hloscope.ir.attributes import FrontendAttributes, OpMetadata, ReplicaGroups
from hloscope.ir.sharding import parse_sharding


@pytest.mark.parametrize("text, kind, dims, devices, rep, last", [
    ("{replicated}", "replicated", (), (), False, ()),
    ("{manual}", "manual", (), (), False, ()),
    ("{devices=[4,1]0,1,2,3}", "tiled", (4, 1), (0, 1, 2, 3), False, ()),
    ("{devices=[2,4]<=[8]}", "tiled", (2, 4), tuple(range(8)), False, ()),
    ("{devices=[2,4]<=[4,2]T(1,0)}", "tiled", (2, 4), (0, 2, 4, 6, 1, 3, 5, 7), False, ()),
    ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", "tiled", (2, 1, 4), tuple(range(8)), True, ()),
    ("{devices=[2,2,2]0,1,2,3,4,5,6,7 last_tile_dims={manual}}", "tiled", (2, 2, 2), tuple(range(8)), False,
     ("manual",)),
    ("{devices=[1,2,2,2]<=[8] last_tile_dims={manual, replicated}}", "tiled", (1, 2, 2, 2), tuple(range(8)),
     False, ("manual", "replicated")),
])
def test_sharding_forms(text, kind, dims, devices, rep, last) -> None:
    s = parse_sharding(text)
    assert (s.kind, s.tile_assignment_dims, s.tile_assignment_devices, s.replicate_on_last_tile_dim,
            s.last_tile_dims) == (kind, dims, devices, rep, last)


def test_maximal_and_tuple_shardings_with_index_comments() -> None:
    s = parse_sharding("{{replicated}, {maximal device=3}, {manual}, {replicated}, {replicated}, "
                       "/*index=5*/{devices=[2]0,1}}")
    assert s.kind == "tuple"
    assert [e.kind for e in s.tuple_elements] == ["replicated", "maximal", "manual", "replicated",
                                                  "replicated", "tiled"]
    assert s.tuple_elements[1].device == 3


def test_sharding_metadata_is_kept_apart() -> None:
    s = parse_sharding('{devices=[2,1]0,1 metadata={op_name="a"}}')
    assert s.kind == "tiled" and "op_name" in s.extra


def test_replica_group_forms() -> None:
    assert ReplicaGroups(groups=((0, 1), (2, 3))).expanded() == [[0, 1], [2, 3]]
    assert ReplicaGroups(iota_shape=(2, 4), iota_reshape=(8,)).expanded() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    rg = ReplicaGroups(iota_shape=(2, 4), iota_reshape=(4, 2), iota_transpose=(1, 0))
    assert rg.expanded() == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert str(rg) == "[2,4]<=[4,2]T(1,0)"


def test_frontend_attributes_quoted_and_braced_values() -> None:
    fa = FrontendAttributes('{xla.sdy.meshes={mesh = #sdy.mesh<["i"=8]>}, a="b,c\\"d", n="1"}')
    assert fa.map == {"xla.sdy.meshes": '{mesh = #sdy.mesh<["i"=8]>}', "a": 'b,c"d', "n": "1"}


def test_metadata_fields_decode_on_demand() -> None:
    md = OpMetadata('{op_type="dot" op_name="jit(f)/dot_general" source_file="/a b/c.py" source_line=12 '
                    'stack_frame_id=3}')
    assert (md.op_type, md.op_name, md.source_file, md.source_line, md.stack_frame_id) == (
        "dot", "jit(f)/dot_general", "/a b/c.py", 12, 3)


def test_stack_frames_read_each_table_entry_once_however_many_frames_are_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    # The memory report asks every value's frame; reading the tables per ask was quadratic
    # (XLA's torax benchmark module, 12k frames: `memory --json` took 5 minutes).
    from hloscope.ir import attributes

    n = 50
    index = attributes.StackFrameIndex(
        file_names=((1, "a.py"),), function_names=((1, "f"), (2, "g")),
        file_locations=tuple((k, f"{{file_name_id=1 function_name_id={1 + k % 2} line={k}}}") for k in range(1, n + 1)),
        stack_frames=tuple((k, f"{{file_location_id={k} parent_frame_id={k - 1}}}") for k in range(1, n + 1)))
    reads = []
    real = attributes.re.findall
    monkeypatch.setattr(attributes.re, "findall", lambda *a: reads.append(a) or real(*a))
    stacks = [index.frame(k) for k in range(1, n + 1)]
    assert len(reads) == 2 * n  # each location and each frame once
    assert stacks[2] == [("a.py", "g", 3), ("a.py", "f", 2), ("a.py", "g", 1)]
    assert [len(s) for s in stacks] == list(range(1, n + 1))

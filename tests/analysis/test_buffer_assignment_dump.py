"""XLA BufferAssignment dumps read into analysis.buffers types: seed 002, live XLA:CPU dumps, errors."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from hloscope.errors import InputError, ParseError
from hloscope.ir.buffer_assignment import (
    Allocation,
    Assigned,
    BufferAssignment,
    BufferValue,
    LiveRange,
    compute_peak,
)
from hloscope.text.buffer_assignment_dump import (
    SPLIT_SUFFIXES,
    format_buffer_assignment,
    load_buffer_assignment,
    parse_buffer_assignment,
)

SEED_002 = Path(__file__).parents[1] / "data" / "seeds" / "002_d05a1149d5848d03.txt"

# The 39 lines under "Live ranges at 69 (peak):" in seed 002, as printed (name: bytes), in order.
SEED_002_PEAK_LISTED = [
    ("arg0.1", 16384),
    ("arg1.2", 100352),
    ("arg2.3", 32),
    ("arg3.4", 8),
    ("arg4.5", 4),
    ("arg5.6", 4),
    ("arg6.7", 4),
    ("arg7.8", 512),
    ("arg8.9", 401408),
    ("arg9.10", 40),
    ("arg10.11", 5120),
    ("arg11.12", 40),
    ("arg12.13", 40),
    ("arg13.14", 5120),
    ("arg14.15", 5120),
    ("arg15.16", 4),
    ("arg16.17", 4),
    ("arg17.18", 401408),
    ("arg18.19", 401408),
    ("arg19.20", 512),
    ("arg20.21", 512),
    ("cublas-gemm.11", 401408),
    ("fusion.1", 24),
    ("fusion.1", 24),
    ("fusion.1", 24),
    ("fusion.4", 24),
    ("fusion.4", 24),
    ("fusion.4", 24),
    ("fusion.7", 24),
    ("fusion.7", 24),
    ("fusion.7", 24),
    ("fusion.7", 24),
    ("fusion.10", 24),
    ("fusion.10", 24),
    ("fusion.10", 24),
    ("fusion.12", 4),
    ("fusion.25", 16),
    ("fusion.25", 16),
    ("copy", 4),
]
# The same values with the shape index the BufferLiveRange list gives them.
SEED_002_PEAK_KEYS = {f"arg{i}.{i + 1}{{}}" for i in range(21)} | {
    "cublas-gemm.11{}",
    "fusion.1{0}",
    "fusion.1{1}",
    "fusion.1{2}",
    "fusion.4{0}",
    "fusion.4{1}",
    "fusion.4{2}",
    "fusion.7{}",
    "fusion.7{0}",
    "fusion.7{1}",
    "fusion.7{2}",
    "fusion.10{0}",
    "fusion.10{1}",
    "fusion.10{2}",
    "fusion.12{}",
    "fusion.25{0}",
    "fusion.25{1}",
    "copy{}",
}


@pytest.fixture(scope="module")
def seed002() -> BufferAssignment:
    return load_buffer_assignment(SEED_002)


# -- seed 002 -------------------------------------------------------------------------------


def test_seed002_allocations_and_total(seed002: BufferAssignment) -> None:
    assert seed002.allocation_count == 68
    assert [a.index for a in seed002.allocations] == list(range(68))
    assert seed002.total_bytes == 2_564_824
    assert seed002.count_by_kind == {
        "parameter": 21,
        "constant": 4,
        "thread-local": 26,
        "maybe-live-out": 16,
        "preallocated-temp": 1,
    }
    assert seed002.bytes_by_kind == {
        "parameter": 1_338_036,
        "constant": 16,
        "thread-local": 128,
        "maybe-live-out": 1_221_372,
        "preallocated-temp": 5_272,
    }
    assert sum(seed002.bytes_by_kind.values()) == seed002.total_bytes


def test_seed002_allocation_details(seed002: BufferAssignment) -> None:
    a3 = seed002.allocations[3]
    assert (
        a3.kind,
        a3.size,
        a3.parameter_number,
        a3.parameter_shape,
        a3.parameter_shape_index,
    ) == ("parameter", 401408, 8, "f32[784,128]", ())
    assert a3.address == "0x7f56c03b08e0"
    assert [(x.value.key, x.offset, x.size) for x in a3.assigned] == [("arg8.9{}", 0, 401408)]

    out = seed002.allocations[20]
    assert out.kind == "maybe-live-out" and out.is_tuple and out.size == 120
    assert out.output_shape is not None and out.output_shape.startswith(
        "(f32[], f32[128], f32[784,128]"
    )

    temp = seed002.allocations[67]
    assert temp.kind == "preallocated-temp" and temp.size == 5272
    assert [(x.value.id, x.offset, x.size) for x in temp.assigned] == [
        (56, 4352, 16),
        (66, 4864, 24),
        (70, 4992, 24),
        (74, 5120, 24),
        (78, 5248, 24),
        (82, 4096, 4),
        (84, 4736, 16),
        (86, 0, 4096),
        (87, 4480, 16),
        (90, 4608, 16),
        (93, 4224, 16),
    ]
    assert all(x.offset + x.size <= temp.size for x in temp.assigned)
    assert seed002.allocation_of(86).index == 67
    assert temp.slice_of(86).end == 4096


def test_seed002_values(seed002: BufferAssignment) -> None:
    assert len(seed002.values) == 98
    assert [v.id for v in seed002.values] == list(range(98))
    arg1 = seed002.value("arg1.2{}")
    assert arg1.id == 27 and arg1.shape == "f32[32,28,28]{2,1,0}" and arg1.size == 100352
    assert [(p.instruction, p.index) for p in arg1.positions] == [("arg1.2", ()), ("bitcast.1", ())]
    assert [(u.instruction, u.operand_number) for u in arg1.uses] == [
        ("bitcast.1", 0),
        ("cublas-gemm.3", 0),
        ("cublas-gemm.11", 0),
    ]
    assert arg1.instruction_text is not None and arg1.instruction_text.startswith(
        "%arg1.2 = f32[32,28,28]"
    )
    gte_source = seed002.value(6)  # fusion{0}: positions in a tuple, then a get-tuple-element
    assert gte_source.key == "fusion{0}" and gte_source.short_string() == "<6 fusion{0} @0>"
    assert [(p.instruction, p.index) for p in gte_source.positions] == [
        ("fusion", (0,)),
        ("tuple.74", (1,)),
        ("get-tuple-element", ()),
    ]
    assert seed002.value(5).uses[0].operand_index == ()
    assert seed002.value(4).uses == ()


def test_seed002_peak(seed002: BufferAssignment) -> None:
    assert seed002.schedule_end_time == 74
    assert len(seed002.instruction_sequence) == 74
    assert seed002.instruction_sequence[69] == "fusion.7"
    assert len(seed002.live_ranges) == 72
    assert seed002.live_ranges["fusion.7{0}"] == LiveRange(69, 74)
    assert seed002.peak_time == 69
    peak = seed002.peak
    assert peak is not None
    assert [(e.instruction, e.bytes) for e in peak.entries] == SEED_002_PEAK_LISTED
    assert {e.key for e in peak.entries} == SEED_002_PEAK_KEYS
    assert len(peak.entries) == len(SEED_002_PEAK_KEYS) == 39
    # The dump states no peak total; the peak is the sum of what it lists (the printed sizes
    # are whole-instruction sizes, so each tuple element counts as a 24-byte tuple).
    assert peak.stated_bytes is None
    assert seed002.peak_bytes == 1_739_796
    assert [e.bytes for e in seed002.peak_buffers[:5]] == [401408] * 4 + [100352]
    assert all(seed002.live_ranges[k].contains(69) for k in SEED_002_PEAK_KEYS)


def test_seed002_value_sized_peak(seed002: BufferAssignment) -> None:
    """Recomputing the peak from value sizes finds the same moment and the same live set."""
    peak = compute_peak(seed002.values, seed002.live_ranges)
    assert peak is not None
    assert peak.time == 69
    assert {e.key for e in peak.entries} == SEED_002_PEAK_KEYS
    assert peak.bytes == sum(seed002.value(k).size for k in SEED_002_PEAK_KEYS) == 2_960_724


def test_seed002_to_json(seed002: BufferAssignment) -> None:
    data = json.loads(json.dumps(seed002.to_json()))
    assert data["allocation_count"] == 68 and data["total_bytes"] == 2_564_824
    assert data["peak_time"] == 69 and data["peak_bytes"] == 1_739_796
    assert data["allocations"][67]["kind"] == "preallocated-temp"


# -- writer round trip ---------------------------------------------------------------------


def test_format_round_trips_seed002(seed002: BufferAssignment) -> None:
    text = format_buffer_assignment(seed002)
    assert "\nTotal bytes used: 2564824 (2.45MiB)\n" in text  # as XLA spells it
    back = parse_buffer_assignment(text, "formatted")
    assert back.allocations == seed002.allocations
    assert back.values == seed002.values
    assert back.total_bytes == 2_564_824
    assert dict(back.live_ranges) == dict(seed002.live_ranges)
    assert back.instruction_sequence == seed002.instruction_sequence
    assert back.peak == seed002.peak
    assert (back.peak_time, back.peak_bytes) == (69, 1_739_796)
    assert format_buffer_assignment(back) == text


def test_format_our_own_assignment() -> None:
    """An assignment built in code (as our planner will) writes and reads back unchanged."""
    p = BufferValue(0, "p", (), "f32[4]{0}", 16)
    t = BufferValue(1, "t", (), "(f32[4], f32[4])", 16)
    a = BufferValue(2, "t", (0,), "f32[4]{0}", 16)
    ba = BufferAssignment(
        allocations=(
            Allocation(
                0,
                16,
                is_entry_parameter=True,
                parameter_number=0,
                parameter_shape="f32[4]",
                assigned=(Assigned(p, 0, 16),),
            ),
            Allocation(
                1,
                32,
                is_preallocated_temp=True,
                color=1,
                assigned=(Assigned(t, 0, 16), Assigned(a, 16, 16)),
            ),
        ),
        total_bytes=48,
        values=(p, t, a),
        live_ranges={"p{}": LiveRange(0, 2), "t{}": LiveRange(1, 2), "t{0}": LiveRange(1, 1)},
        instruction_sequence=("p", "t"),
        schedule_end_time=2,
    )
    assert (
        ba.peak is None and ba.peak_time == 1 and ba.peak_bytes == 48
    )  # computed from live ranges
    text = format_buffer_assignment(ba)
    assert "allocation 1: size 32, color 1, preallocated-temp:\n" in text
    assert " value: <1 t{} @0> (size=16,offset=0): (f32[4], f32[4])\n" in text
    back = parse_buffer_assignment(text)
    assert back.allocations == ba.allocations
    assert dict(back.live_ranges) == ba.live_ranges
    assert back.count_by_kind == {"parameter": 1, "preallocated-temp": 1}


# -- live XLA:CPU dumps ----------------------------------------------------------------------


def _mlp_step_dump(directory: Path) -> None:
    import jax
    import jax.numpy as jnp

    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    def step(p, x, y):
        g = jax.grad(loss)(p, x, y)
        return jax.tree.map(lambda a, b: a - 0.1 * b, p, g)

    f32 = jnp.float32
    p = {
        "w1": jax.ShapeDtypeStruct((16, 32), f32),
        "b1": jax.ShapeDtypeStruct((32,), f32),
        "w2": jax.ShapeDtypeStruct((32, 4), f32),
        "b2": jax.ShapeDtypeStruct((4,), f32),
    }
    x, y = jax.ShapeDtypeStruct((8, 16), f32), jax.ShapeDtypeStruct((8, 4), f32)
    options = {"xla_dump_to": str(directory), "xla_dump_hlo_as_text": True}
    jax.jit(step).lower(p, x, y).compile(compiler_options=options)


def _other_dump(directory: Path) -> None:
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((64,), jnp.float32)
    options = {"xla_dump_to": str(directory), "xla_dump_hlo_as_text": True}
    jax.jit(lambda v: jnp.sin(v) * 2.0).lower(x).compile(compiler_options=options)


@pytest.fixture(scope="module")
def cpu_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("jax")
    directory = tmp_path_factory.mktemp("xla_dump")
    _mlp_step_dump(directory)
    return directory


def _prefix(directory: Path) -> str:
    (main,) = directory.glob("*" + SPLIT_SUFFIXES[0])
    return str(main)[: -len(SPLIT_SUFFIXES[0])]


def _figures(ba: BufferAssignment) -> tuple:
    return (
        ba.allocations,
        ba.total_bytes,
        ba.values,
        dict(ba.live_ranges),
        ba.peak,
        ba.instruction_sequence,
    )


def test_cpu_dump_file_names(cpu_dump: Path) -> None:
    """jax 0.10.2's XLA:CPU writes the split layout, one file per section."""
    prefix = Path(_prefix(cpu_dump)).name
    assert re.fullmatch(r"module_\d{4}\.jit_step\.cpu_after_optimizations", prefix)
    for suffix in SPLIT_SUFFIXES:
        assert (cpu_dump / (prefix + suffix)).is_file(), suffix


def test_cpu_dump_split_form(cpu_dump: Path) -> None:
    ba = load_buffer_assignment(cpu_dump)
    assert ba.module_name == "jit_step"
    report = (Path(_prefix(cpu_dump) + "-memory-usage-report.txt")).read_text()
    stated_total = int(re.search(r"^Total bytes: (\d+)", report, re.M)[1])  # type: ignore[index]
    assert ba.total_bytes == stated_total == sum(a.size for a in ba.allocations)
    params = [a for a in ba.allocations if a.kind == "parameter"]
    assert sorted(a.parameter_number for a in params) == list(range(6))  # b1, b2, w1, w2, x, y
    assert sorted(a.size for a in params) == sorted(
        [16 * 32 * 4, 32 * 4, 32 * 4 * 4, 4 * 4, 8 * 16 * 4, 8 * 4 * 4]
    )
    assert ba.count_by_kind["preallocated-temp"] == 1
    assert any(a.output_shape for a in ba.allocations)
    # The live-range file names its peak with a stated total; value sizes reproduce it.
    assert ba.peak is not None and ba.peak.stated_bytes is not None
    assert ba.peak_bytes == ba.peak.stated_bytes == sum(e.bytes for e in ba.peak.entries)
    computed = compute_peak(ba.values, ba.live_ranges)
    assert computed is not None and (computed.time, computed.bytes) == (ba.peak_time, ba.peak_bytes)
    assert len(ba.instruction_sequence) == ba.schedule_end_time
    assert all(v.positions and v.instruction_text for v in ba.values)


def test_cpu_dump_any_file_or_prefix_reads_the_same(cpu_dump: Path) -> None:
    reference = _figures(load_buffer_assignment(cpu_dump))
    prefix = _prefix(cpu_dump)
    for suffix in SPLIT_SUFFIXES:
        assert _figures(load_buffer_assignment(prefix + suffix)) == reference, suffix
    assert _figures(load_buffer_assignment(prefix)) == reference
    assert (
        _figures(load_buffer_assignment(str(cpu_dump / "module_"))) == reference
    )  # partial prefix


def test_cpu_dump_joined_form(cpu_dump: Path, tmp_path: Path) -> None:
    """Concatenated as seed 002 is laid out, the split files read as the same assignment."""
    prefix = _prefix(cpu_dump)
    parts = [Path(prefix + s).read_text() for s in SPLIT_SUFFIXES[:3]]
    joined = tmp_path / "joined.txt"
    joined.write_text(parts[0] + parts[1] + "\n" + parts[2])
    ba = load_buffer_assignment(joined)
    assert _figures(ba) == _figures(load_buffer_assignment(cpu_dump))
    back = parse_buffer_assignment(format_buffer_assignment(ba))
    assert _figures(back) == _figures(ba)


def test_directory_with_several_modules(cpu_dump: Path, tmp_path: Path) -> None:
    for f in cpu_dump.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    _other_dump(tmp_path)
    with pytest.raises(InputError) as info:
        load_buffer_assignment(tmp_path)
    message = str(info.value)
    assert "2 buffer-assignment dumps, pass module=<name> to pick one" in message
    assert (
        ".jit_step.cpu_after_optimizations" in message
        and ".jit__lambda.cpu_after_optimizations" in message
    )
    assert load_buffer_assignment(tmp_path, module="jit_step").module_name == "jit_step"
    assert load_buffer_assignment(tmp_path, module="jit__lambda").module_name == "jit__lambda"
    with pytest.raises(InputError, match="none matches module='jit_nothing'"):
        load_buffer_assignment(tmp_path, module="jit_nothing")


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory"):
        load_buffer_assignment(tmp_path / "missing" / "x.txt")
    with pytest.raises(
        InputError, match="no '\\*-buffer-assignment.txt' buffer-assignment dump found"
    ):
        load_buffer_assignment(tmp_path)
    lonely = tmp_path / "m-buffer-assignment-values.txt"
    lonely.write_text("\nTotal bytes used: 0 (0B)\n")
    with pytest.raises(InputError, match="m-buffer-assignment.txt: not found"):
        load_buffer_assignment(lonely)


# -- error goldens -------------------------------------------------------------------------

SMALL = """\
BufferAssignment:
allocation 0: size 64, parameter 0, shape |f32[16]| at ShapeIndex {}:
 value: <0 p.1 @0> (size=64,offset=0): f32[16]{0}
allocation 1: size 64, maybe-live-out:
 value: <1 exp.2 @0> (size=64,offset=0): f32[16]{0}

Total bytes used: 128 (128B)

Used values:
<0 p.1 @0>
 positions:
  p.1
 uses:
  exp.2, operand 0
 from instruction: %p.1 = f32[16]{0} parameter(0)
<1 exp.2 @0>
 positions:
  exp.2
 uses:
  (none)
 from instruction: %exp.2 = f32[16]{0} exponential(%p.1)

HloLiveRange (max 2):
  InstructionSequence:
    0:p.1
    1:exp.2
  BufferLiveRange:
    p.1{}:0-2
    exp.2{}:1-2
  Live ranges at 1 (peak):
    exp.2{}: 64 bytes (cumulative: 64 bytes)
    p.1{}: 64 bytes (cumulative: 128 bytes)
"""


def test_small_dump_reads() -> None:
    ba = parse_buffer_assignment(SMALL)
    assert (ba.allocation_count, ba.total_bytes, ba.peak_time, ba.peak_bytes) == (2, 128, 1, 128)
    assert ba.count_by_kind == {"parameter": 1, "maybe-live-out": 1}
    assert format_buffer_assignment(ba) == SMALL  # written in current XLA's spelling


ERROR_CASES = [
    pytest.param(
        "(size=64,offset=0): f32[16]{0}\nallocation 1",
        "(size=64,offset=O): f32[16]{0}\nallocation 1",
        "small.txt:3:36: error: expected an offset in bytes\n"
        " value: <0 p.1 @0> (size=64,offset=O): f32[16]{0}\n"
        "                                   ^",
        id="bad-offset",
    ),
    pytest.param(
        "allocation 1: size 64",
        "allocation 1: size 6x4",
        "small.txt:4:20: error: expected an allocation size in bytes\n"
        "allocation 1: size 6x4, maybe-live-out:\n"
        "                   ^~~",
        id="bad-size",
    ),
    pytest.param(
        "allocation 1:",
        "allocation 2:",
        "small.txt:4:12: error: expected allocation 1, found allocation 2\n"
        "allocation 2: size 64, maybe-live-out:\n"
        "           ^",
        id="skipped-index",
    ),
    pytest.param(
        "<1 exp.2 @0> (size=64,offset=0)",
        "<1 exp.2 @0> (size=64,offset=8)",
        "small.txt:5:23: error: value 1 at offset 8 with size 64 ends past the end of allocation 1 (size 64)\n"
        " value: <1 exp.2 @0> (size=64,offset=8): f32[16]{0}\n"
        "                      ^" + "~" * 15,
        id="value-past-end",
    ),
    pytest.param(
        "Total bytes used: 128",
        "Total bytes used: 192",
        "small.txt:7:19: error: 'Total bytes used' is 192 but the allocations add up to 128\n"
        "Total bytes used: 192 (128B)\n"
        "                  ^~~",
        id="total-mismatch",
    ),
    pytest.param(
        "  exp.2, operand 0",
        "  exp.2, operand #0",
        "small.txt:14:18: error: expected an operand number\n"
        "  exp.2, operand #0\n"
        "                 ^~",
        id="bad-use",
    ),
    pytest.param(
        "    exp.2{}:1-2",
        "    exp.2{}:2-1",
        "small.txt:29:13: error: live range ends (1) before it starts (2)\n"
        "    exp.2{}:2-1\n"
        "            ^~~",
        id="backwards-live-range",
    ),
    pytest.param(
        "(cumulative: 128 bytes)",
        "(cumulative: 129 bytes)",
        "small.txt:32:34: error: cumulative bytes 129 do not match the running total 128\n"
        "    p.1{}: 64 bytes (cumulative: 129 bytes)\n"
        "                                 ^~~",
        id="cumulative-mismatch",
    ),
    pytest.param(
        "<1 exp.2 @0>\n positions:",
        "<2 exp.2 @0>\n positions:",
        "small.txt:16:1: error: value 2 is listed under 'Used values' but assigned to no allocation\n"
        "<2 exp.2 @0>\n"
        "^~~~~~~~~~~~",
        id="unassigned-value",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), ERROR_CASES)
def test_error_golden(old: str, new: str, expected: str) -> None:
    assert SMALL.count(old) == 1
    with pytest.raises(ParseError) as info:
        parse_buffer_assignment(SMALL.replace(old, new), "small.txt")
    assert str(info.value) == expected


def test_error_in_seed002_names_the_file_line_and_column() -> None:
    text = SEED_002.read_text().replace(" value: <34 arg8.9 @0>", " value: <34 arg8.9 @0", 1)
    with pytest.raises(ParseError) as info:
        parse_buffer_assignment(text, SEED_002.name)
    assert str(info.value) == (
        f"{SEED_002.name}:16:22: error: expected '> (size='\n"
        " value: <34 arg8.9 @0 (size=401408,offset=0): f32[784,128]{1,0}\n"
        "                     ^"
    )


def test_not_a_dump() -> None:
    with pytest.raises(ParseError) as info:
        parse_buffer_assignment("HloModule m\n", "m.hlo")
    assert str(info.value) == (
        "m.hlo:1:1: error: no 'allocation N: size ...' lines: this is not a BufferAssignment dump\n"
        "HloModule m\n"
        "^"
    )


def test_unknown_lines_and_flags_are_tolerated() -> None:
    text = SMALL.replace("maybe-live-out:\n", "maybe-live-out, fancy-new-flag:\n").replace(
        "Used values:\n", "Some future section:\n  with lines\nUsed values:\n"
    )
    ba = parse_buffer_assignment(text)
    assert ba.allocations[1].unknown_flags == ("fancy-new-flag",)
    assert ba.allocations[1].kind == "maybe-live-out"
    assert Counter(len(v.uses) for v in ba.values) == Counter({1: 1, 0: 1})
    assert "maybe-live-out, fancy-new-flag:" in format_buffer_assignment(ba)


def test_live_range_not_available() -> None:
    """XLA writes this sentence instead of a live range when the assignment was finalized."""
    head = SMALL.split("\nHloLiveRange")[0]
    ba = parse_buffer_assignment(
        head + "\nHloLiveRange not available (finalized or constructed from proto)"
    )
    assert ba.peak is None and ba.schedule_end_time is None and not ba.live_ranges
    assert (ba.peak_time, ba.peak_bytes, ba.peak_buffers) == (None, None, ())

"""Every module of the JAX-program corpus (before and after XLA:CPU's optimizations, single
device, pmap, shard_map, and jit-sharded with both the Shardy and GSPMD partitioners) prints back
byte-identical, parses back equal, and XLA's parser accepts the printed text."""
from __future__ import annotations

import pytest

import hloscope as hs
from hloscope.ir.equality import first_difference
from tests.oracle_fixtures import ORACLE_PROGRAM_NAMES


@pytest.mark.parametrize("stage", ["pre", "post"])
@pytest.mark.parametrize("program", ORACLE_PROGRAM_NAMES)
def test_corpus_module_round_trips(oracle_corpus, program: str, stage: str) -> None:
    from hloscope.xla import client as xla

    case = oracle_corpus.case(program)
    text = case.pre_text if stage == "pre" else case.post_text
    m = hs.parse(text, f"{program}.{stage}.hlo")
    printed = m.to_text()
    assert printed == text
    assert first_difference(m, hs.parse(printed)) is None
    assert not [d for d in hs.verify(m) if d.severity == "error"]
    assert m.to_text(hs.PrintOptions.canonical()) == xla.short_parsable_text(text)
    theirs = xla.instruction_opcodes(printed)
    for comp in m.computations:
        assert sorted(i.opcode.text for i in comp.instructions) == sorted(o for _, o in theirs[comp.name])


@pytest.mark.parametrize("program", ORACLE_PROGRAM_NAMES)
def test_xla_dump_files_round_trip(oracle_corpus, program: str) -> None:
    """The files --xla_dump_to writes (before and after optimizations) print back unchanged."""
    case = oracle_corpus.case(program)
    dumped = {n: p for n, p in case.dump_files().items() if n.endswith("optimizations.txt")}
    assert any("after_optimizations" in n for n in dumped), sorted(case.dump_files())
    for name, path in dumped.items():
        text = path.read_text()
        m = hs.parse(text, name)
        assert m.to_text() == text, name
        assert first_difference(m, hs.parse(m.to_text())) is None


def test_corpus_covers_sharded_programs_of_both_partitioners() -> None:
    from hloscope.testing.oracle.programs import PROGRAMS

    modes = {p.mode for p in PROGRAMS}
    assert {"jit_sharded8_shardy", "jit_sharded8_gspmd", "pmap8", "shard_map8"} <= modes
    assert len(PROGRAMS) >= 30

"""Round-trip invariants: parse(print(m)) == m on every input we own, byte-identical where the
input is canonical, and XLA's own parser accepts what we print with the same instructions."""
from __future__ import annotations

from pathlib import Path

import pytest

import hloscope as hs
from hloscope.ir.equality import first_difference
from tests.conftest import MODULE_SEEDS, SEED_FILES

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
ROUNDTRIP = sorted((GOLDEN / "roundtrip").glob("*.hlo"))
NON_ROUNDTRIP = sorted(p for p in (GOLDEN / "non_roundtrip").glob("*.hlo") if not p.name.endswith(".expected.hlo"))


def _xla():
    xla = pytest.importorskip("hloscope.xla.client")
    if not xla.available():
        pytest.skip("jaxlib's HLO parser is not available")
    return xla


def _spelling(inst) -> str:
    """The opcode as written: XLA's async sugar (`call-start`) names the wrapped opcode."""
    wrapped = inst.attrs.get("async_wrapped_opcode")
    return inst.opcode.text if wrapped is None else wrapped.text + "-" + inst.opcode.text.split("-")[1]


def _same_instructions(xla, ours: hs.Module, printed: str) -> None:
    """XLA parses ``printed`` into the same computations with the same instruction opcodes."""
    theirs = xla.instruction_opcodes(printed)
    names = [i.name for i in ours.instructions()]
    # XLA makes instruction names unique across the module, renaming repeats; compare the
    # names only when ours are already unique.
    unique = len(names) == len(set(names))
    for comp in ours.computations:
        assert comp.name in theirs, f"XLA lost computation {comp.name}"
        if unique:
            assert sorted((i.name, _spelling(i)) for i in comp.instructions) == sorted(theirs[comp.name]), comp.name
        else:
            assert sorted(_spelling(i) for i in comp.instructions) == sorted(o for _, o in theirs[comp.name]), comp.name


@pytest.mark.parametrize("seed", MODULE_SEEDS)
def test_seed_prints_back_byte_identical(seed: str) -> None:
    text = SEED_FILES[seed].read_text()
    m = hs.parse(text, SEED_FILES[seed].name)
    printed = m.to_text()
    assert printed == text
    assert first_difference(m, hs.parse(printed)) is None


@pytest.mark.parametrize("seed", MODULE_SEEDS)
def test_seed_printed_is_accepted_by_xla(seed: str) -> None:
    xla = _xla()
    m = hs.load(SEED_FILES[seed])
    for opts in (hs.PrintOptions(), hs.PrintOptions.canonical(), hs.PrintOptions.short()):
        printed = m.to_text(opts)
        _same_instructions(xla, m, printed)
        assert first_difference(hs.parse(m.to_text(hs.PrintOptions())), hs.parse(m.to_text())) is None


@pytest.mark.parametrize("path", ROUNDTRIP, ids=lambda p: p.stem)
def test_golden_roundtrip(path: Path) -> None:
    text = path.read_text()
    m = hs.parse(text, path.name)
    assert m.to_text() == text
    _same_instructions(_xla(), m, m.to_text())


@pytest.mark.parametrize("path", NON_ROUNDTRIP, ids=lambda p: p.stem)
def test_golden_non_roundtrip(path: Path) -> None:
    reason = path.with_suffix(".reason").read_text().strip()
    assert reason, "every non-round-trip golden states why"
    expected = path.with_suffix(".expected.hlo").read_text()
    m = hs.parse(path.read_text(), path.name)
    assert m.to_text() == expected
    assert first_difference(m, hs.parse(expected)) is None
    _same_instructions(_xla(), m, expected)


def test_new_and_old_style_print_the_same_module() -> None:
    m = hs.load(SEED_FILES["000"])
    new = m.to_text(hs.PrintOptions())
    old = m.to_text(hs.PrintOptions(percent=True, operand_shapes=True, signatures=True))
    assert "%" not in new.split("\n", 2)[2][:200]
    assert first_difference(hs.parse(new), hs.parse(old)) is None


@pytest.mark.parametrize("path", ROUNDTRIP + [SEED_FILES[s] for s in MODULE_SEEDS], ids=lambda p: p.stem)
def test_canonical_form_is_xlas_short_parsable_form(path: Path) -> None:
    xla = _xla()
    text = path.read_text()
    assert hs.parse(text).to_text(hs.PrintOptions.canonical()) == xla.short_parsable_text(text)

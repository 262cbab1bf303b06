"""Every opcode has, in every stage, a rule or an explicit reason why not (habit 2), and every
per-opcode table is an ``OpTable`` this file knows about."""
from __future__ import annotations

import json

import pytest

import hloscope.analysis.cost  # noqa: F401  (each import makes its stage's tables)
import hloscope.analysis.memory.dataflow  # noqa: F401
import hloscope.interpret  # noqa: F401
import hloscope.ir.shape_inference  # noqa: F401
import hloscope.ir.verifier  # noqa: F401
from hloscope.cli.main import main
from hloscope.cli.status import opcode_coverage
from hloscope.ir.op_table import DuplicateRuleError, OpTable, op_tables
from hloscope.ir.opcode import OPCODES_BY_TEXT, Opcode

# Every per-opcode table of every stage: its name, and whether it must cover every opcode with
# a rule or an UNSUPPORTED reason (True) or has a stated fallback for the rest (False).
TABLES: dict[str, bool] = {
    "shape rules": True,  # hloscope.ir.shapes.rules.SHAPE_RULES, reasons in NOT_INFERABLE
    "shape checks": False,  # partial checks of NOT_INFERABLE opcodes
    "verifier call signatures": False,  # hloscope.ir.verifier
    "interpreter": True,  # hloscope.interpret.registry.HANDLERS, reasons in UNSUPPORTED
    "lockstep": False,  # hloscope.interpret.lockstep.STACKED
    "dynamic sizes": False,  # hloscope.interpret.dynamic.SIZE_RULES
    "dynamic semantics": False,  # hloscope.interpret.dynamic.SEMANTICS
    "cost": True,  # hloscope.analysis.cost.COST_RULES (NO_COST opcodes get the default rule)
    "dataflow": False,  # hloscope.analysis.memory.dataflow.DATAFLOW_RULES
}


def _stage_tables() -> dict[str, OpTable[object]]:
    return {t.name: t for t in op_tables()}


def test_opcode_table_is_a_bijection() -> None:
    assert len(OPCODES_BY_TEXT) == len(Opcode)
    assert all(OPCODES_BY_TEXT[op.text] is op for op in Opcode)


def test_every_table_is_listed_here() -> None:
    tables = _stage_tables()
    assert sorted(tables) == sorted(TABLES), "a per-opcode table was added or renamed: list it in TABLES"
    for name, must_cover in TABLES.items():
        assert (tables[name].fallback is None) == must_cover, name


@pytest.mark.parametrize("name", [n for n, must in TABLES.items() if must])
def test_no_table_has_an_unexplained_gap(name: str) -> None:
    table = _stage_tables()[name]
    assert [op.text for op in table.gaps()] == []


@pytest.mark.parametrize("name", list(TABLES))
def test_no_opcode_has_both_a_rule_and_a_reason(name: str) -> None:
    table = _stage_tables()[name]
    assert sorted(op.text for op in table if op in table.unsupported) == []


def test_lockstep_and_dataflow_rules_are_for_real_opcodes() -> None:
    tables = _stage_tables()
    evaluated = set(tables["interpreter"])
    # A lockstep rule for an opcode the interpreter cannot evaluate would be dead code.
    assert sorted(op.text for op in tables["lockstep"] if op not in evaluated) == []
    assert set(tables["shape checks"]) <= set(tables["shape rules"].unsupported)
    assert len(tables["dataflow"]) > 0


def test_no_stage_has_an_unexplained_gap_in_status() -> None:
    gaps = [(r.opcode.text, stage) for r in opcode_coverage()
            for stage in ("parse", "verify", "evaluate", "cost") if getattr(r, stage).status == "GAP"]
    assert gaps == []


def test_status_command_json(capsys) -> None:
    assert main(["status", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == len(Opcode)
    add = next(r for r in rows if r["opcode"] == "add")
    assert all(add[s]["status"] == "yes" for s in ("parse", "verify", "evaluate", "cost"))
    infeed = next(r for r in rows if r["opcode"] == "infeed")
    assert infeed["evaluate"]["status"] == "no" and "host" in infeed["evaluate"]["reason"]


def test_one_rule_for_duplicates() -> None:
    table: OpTable[str] = OpTable("test duplicates", unsupported={Opcode.INFEED: "no host stream"},
                                  listed=False)
    table.register(Opcode.ADD)("first")
    with pytest.raises(DuplicateRuleError, match="add already has the rule"):
        table.register(Opcode.ADD)("second")
    with pytest.raises(DuplicateRuleError, match="listed as unsupported"):
        table.add(Opcode.INFEED, "x")
    assert table[Opcode.ADD] == "first"
    table.register(Opcode.ADD, replace=True)("second")
    assert table[Opcode.ADD] == "second"
    with table.override(Opcode.INFEED, "planted"):
        assert table.get(Opcode.INFEED) == "planted" and table.reason(Opcode.INFEED) is None
    assert Opcode.INFEED not in table and table.reason(Opcode.INFEED) == "no host stream"
    assert table.gaps() == [op for op in Opcode if op not in (Opcode.ADD, Opcode.INFEED)]
    assert table not in op_tables()

"""Every opcode has, in every stage, a rule or an explicit reason why not (habit 2)."""
from __future__ import annotations

import json

from hloscope.cli.main import main
from hloscope.cli.status import opcode_coverage
from hloscope.ir.opcode import OPCODES_BY_TEXT, Opcode


def test_opcode_table_is_a_bijection() -> None:
    assert len(OPCODES_BY_TEXT) == len(Opcode)
    assert all(OPCODES_BY_TEXT[op.text] is op for op in Opcode)


def test_no_stage_has_an_unexplained_gap() -> None:
    gaps = [(r.opcode.text, stage) for r in opcode_coverage()
            for stage in ("parse", "verify", "evaluate", "cost") if getattr(r, stage).status == "GAP"]
    assert gaps == []


def test_status_command_json(capsys) -> None:
    assert main(["status", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == len(Opcode)
    add = next(r for r in rows if r["opcode"] == "add")
    assert all(add[s]["status"] == "yes" for s in ("parse", "verify", "evaluate", "cost"))

"""reduce (hloscope.numerics.reduce) and its command, on small modules; the models tier's
reductions are in tests/models/test_numerics_models.py."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import hloscope as hs
from hloscope.cli.main import main
from hloscope.errors import InputError
from hloscope.numerics import find_nonfinite
from hloscope.numerics.reduce import Command, DiffersFrom, Nonfinite, reduce_module
from hloscope.testing.numerics_plants import swap_operands
from tests.numerics.test_compare import BEFORE, INPUTS
from tests.numerics.test_nonfinite import LOOP, X


def test_nonfinite_reduces_to_the_op_that_makes_it() -> None:
    result = reduce_module(hs.parse(LOOP), [X], Nonfinite(), check_xla=False)
    assert result.size == 1 and result.verified
    root = result.module.entry.root
    assert root.opcode.text == "log"
    inputs = list(result.candidate.inputs[0])
    first = find_nonfinite(result.module, inputs)
    assert first is not None and first.kind == "instruction" and first.instruction.name == root.name


def test_nonfinite_on_several_devices_ends_on_one() -> None:
    inputs = [[X * (d + 1)] for d in range(4)]
    result = reduce_module(hs.parse(LOOP), inputs, Nonfinite(), replicas=4, check_xla=False)
    assert result.size == 1 and result.candidate.devices == 1


def test_differs_from_reduces_a_swap_to_the_swapped_instruction() -> None:
    a = hs.parse(BEFORE)
    b, name = swap_operands(a)
    result = reduce_module(b, INPUTS, DiffersFrom(a, INPUTS), check_xla=False)
    assert result.module.entry.root.name == name and result.size <= 2


def test_a_property_that_does_not_hold_is_an_error() -> None:
    with pytest.raises(InputError, match="does not hold"):
        reduce_module(hs.parse(BEFORE), INPUTS, Nonfinite(), check_xla=False)


def test_command_property_and_cli(tmp_path, capsys) -> None:
    src = tmp_path / "m.hlo"
    src.write_text(LOOP)
    np.savez(tmp_path / "in.npz", arg0=X)
    # The property: hloscope finds a non-finite value an instruction makes (kind instruction).
    test = (f"{sys.executable} -m hloscope run {{}} --inputs {{inputs}} --find-nonfinite --json > {tmp_path}/out.json; "
            f"grep -q '\"kind\": \"instruction\"' {tmp_path}/out.json")
    result = reduce_module(hs.parse(LOOP), [X], Command(test), check_xla=False)
    assert result.size <= 3 and result.verified
    out = tmp_path / "small.hlo"
    assert main(["reduce", str(src), "--until", "nonfinite", "-o", str(out), "--inputs", str(tmp_path / "in.npz"),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["instructions"] == 1 and report["verified"]
    assert main(["run", str(out), "--inputs", str(tmp_path / "small.npz"), "--find-nonfinite"]) == 4

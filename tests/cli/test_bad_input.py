"""Every command and every option given bad input: one table (Note [Argument types] in cli/common.py).

Each path an option reads is tried missing, a directory, empty, binary and of another kind;
each path it writes, a directory, in a missing folder, under a file and where no file can be
made; each count zero or negative. A path problem must be one line naming the path with exit
1, a count out of range a usage error (exit 2) naming the option, never an internal error
(exit 70), a traceback, a RuntimeWarning or a wrong success.
"""
from __future__ import annotations

import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from hloscope.cli.main import main
from hloscope.interpret.npz_io import load_npz, save_npz

MODULE = """HloModule m

ENTRY main {
  x = f32[4]{0} parameter(0)
  ROOT y = f32[4]{0} multiply(x, x)
}
"""

# Placeholders the table uses, made in the test's folder by ``_files``.
#   M  a valid module        NOFILE  a missing file   DIR   a directory   EMPTY  an empty file
#   BIN  binary bytes        PKL  a pickle            NPY   one .npy array
#   F64 / I32  npz inputs of another type than the parameter's f32   BIG  f64 values beyond f32
#   LIST  a JSON list (no hardware profile)   UNDER  a path under a file   NODIR  in a missing folder
PROC = "/proc/hloscope-cannot-write-here.svg"  # (.svg: graph -o needs a drawing's suffix)

# The commands that read a module FILE, each with what else it needs to start.
FILE_COMMANDS = {
    "summary": [], "print": [], "verify": [], "run": [], "cost": [], "collectives": [],
    "estimate": ["--hardware", "h100-sxm"], "memory": [], "graph": ["-o", "{tmp}/g.dot"],
    "report": ["-o", "{tmp}/r.html"],
}

BAD_FILES = {  # kind -> (placeholder, what the one-line message says)
    "missing": ("NOFILE", "no such file"),
    "a directory": ("DIR", "is a directory"),
    "empty": ("EMPTY", "the file is empty"),
    "binary": ("BIN", "binary data"),
    "a pickle": ("PKL", "binary data"),
}

# Every option that writes a file, as (command line, option) with OUT for the bad path.
OUTPUT_OPTIONS = [
    ("print M -o OUT", "print -o"),
    ("run M --out OUT", "run --out"),
    ("memory M --dump OUT", "memory --dump"),
    ("estimate M --hardware h100-sxm --trace OUT", "estimate --trace"),
    ("graph M -o OUT", "graph -o"),
    ("report M -o OUT", "report -o"),
    ("calibrate --seconds 0.05 -o OUT", "calibrate -o"),
    ("dump --report 0 -o OUT -- python -c pass", "dump -o"),
]

BAD_OUTPUTS = {  # kind -> (path, what the one-line message says)
    "a directory": ("DIR", "is a directory"),
    "in a missing folder": ("NODIR/out.svg", "does not exist"),
    "under a file": ("UNDER/out.svg", "is a file, not a directory"),
    "where no file can be made": (PROC, "cannot write"),
}

# Counts out of range: a usage error naming the option.
BAD_COUNTS = [
    ("run M --replicas 0", "--replicas"),
    ("run M --replicas -2", "--replicas"),
    ("run M --partitions 0", "--partitions"),
    ("run M --random -1", "--random"),
    ("verify M --replicas 0", "--replicas"),
    ("verify M --partitions -1", "--partitions"),
    ("cost M --top -3", "--top"),
    ("collectives M --replicas 0", "--replicas"),
    ("collectives M --partitions 0", "--partitions"),
    ("collectives M --top -1", "--top"),
    ("estimate M --hardware h100-sxm --top -2", "--top"),
    ("memory M --top -1", "--top"),
    ("buffers M --top -1", "--top"),
    ("graph M -o {tmp}/g.dot --around y --depth -1", "--depth"),
    ("diff M M --limit -1", "--limit"),
    ("calibrate --seconds 0 -o {tmp}/c.json", "--seconds"),
    ("calibrate --seconds -1 -o {tmp}/c.json", "--seconds"),
    ("calibrate --seconds nan -o {tmp}/c.json", "--seconds"),
    ("run M --replicas two", "--replicas"),
]

# Other inputs: the run's arrays, XLA's buffer dumps, hardware profiles, the second module of diff.
BAD_OTHER_INPUTS = [
    ("run M --inputs NOFILE", "NOFILE: no such file"),
    ("run M --inputs DIR", "DIR: is a directory"),
    ("run M --inputs EMPTY", "EMPTY: the file is empty"),
    ("run M --inputs BIN", "BIN: not an .npz file"),
    ("run M --inputs PKL", "PKL: not an .npz file"),
    ("run M --inputs NPY", "NPY: a single .npy array"),
    ("run M --inputs M", "M: not an .npz file"),
    ("run M --inputs OBJ", "OBJ: holds a pickled (object) array"),
    ("run M --inputs F64", "input 'arg0' is f64[4] but parameter 0 (x) is f32[4]"),
    ("run M --inputs I32", "input 'arg0' is s32[4] but parameter 0 (x) is f32[4]"),
    ("run M --inputs BIG --cast-inputs", "1 of 4 values out of the range of f32"),
    ("buffers BIN", "BIN: not UTF-8 text"),
    ("buffers EMPTY", "EMPTY: the file is empty"),
    ("buffers M", "M:1:1: error: no 'allocation N: size ...' lines"),
    ("estimate M --hardware DIR", "DIR: is a directory"),
    ("estimate M --hardware BIN", "BIN: not UTF-8 text"),
    ("estimate M --hardware LIST", "LIST: hardware profile has a malformed field"),
    ("estimate M --hardware {tmp}/none.json", "no hardware profile file at"),
    ("diff M NOFILE", "NOFILE: no such file"),
    ("diff M BIN", "BIN: binary data"),
    ("dump --dir M -- python -c pass", "M: is a file; give a directory"),
    ("dump --dir /proc/hloscope-x -- python -c pass", "cannot create this directory"),
    ("print M -o M", "refusing to overwrite the input file"),
    ("hardware DIR", "DIR: is a directory"),
    ("report M -o {tmp}/r.html --hardware DIR", "DIR: is a directory"),
    ("report M -o {tmp}/r.html --hardware h900", "unknown hardware 'h900'"),
    ("graph M -o {tmp}/g.svg --computation nosuch", "no computation 'nosuch'"),
    ("graph M -o {tmp}/g.svg --around nosuch", "no instruction 'nosuch'"),
    ("graph M -o {tmp}/g.svg --expand nosuch", "--expand nosuch: no fusion instruction"),
    ("buffers DIR --module nosuch", "no '*-buffer-assignment.txt' buffer-assignment dump found"),
]


def _files(tmp: Path) -> dict[str, str]:
    (tmp / "m.hlo").write_text(MODULE)
    (tmp / "dir").mkdir()
    (tmp / "empty").write_bytes(b"")
    (tmp / "bin").write_bytes(bytes(range(256)) * 8)
    (tmp / "p.pkl").write_bytes(pickle.dumps({"arg0": [1.0, 2.0, 3.0, 4.0]}))
    np.save(tmp / "a.npy", np.zeros(4, np.float32))
    np.savez(tmp / "f64.npz", arg0=np.arange(4.0))
    np.savez(tmp / "i32.npz", arg0=np.arange(4, dtype=np.int32))
    np.savez(tmp / "big.npz", arg0=np.array([1e300, 1.0, 2.0, 3.0]))
    with open(tmp / "obj.npz", "wb") as f:
        np.savez(f, arg0=np.array([{"a": 1}], dtype=object))
    (tmp / "list.json").write_text("[1, 2]")
    (tmp / "afile").write_text("x")
    return {"NOFILE": str(tmp / "nosuch.hlo"), "DIR": str(tmp / "dir"), "EMPTY": str(tmp / "empty"),
            "BIN": str(tmp / "bin"), "PKL": str(tmp / "p.pkl"), "NPY": str(tmp / "a.npy"),
            "F64": str(tmp / "f64.npz"), "I32": str(tmp / "i32.npz"), "BIG": str(tmp / "big.npz"),
            "OBJ": str(tmp / "obj.npz"), "LIST": str(tmp / "list.json"), "UNDER": str(tmp / "afile"),
            "NODIR": str(tmp / "nodir"), "M": str(tmp / "m.hlo")}


def _subst(text: str, files: dict[str, str], tmp: Path) -> str:
    """``text`` with each placeholder word (M, DIR, NOFILE...) replaced by its path."""
    return re.sub(r"\b[A-Z][A-Z0-9]*\b", lambda m: files.get(m.group(), m.group()), text.format(tmp=tmp))


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's usage errors
            code = int(e.code or 0)
    out, err = capsys.readouterr()
    leaked = [f"{w.category.__name__}: {w.message} ({w.filename})" for w in caught
              if issubclass(w.category, RuntimeWarning)]
    assert not leaked, leaked
    return code, out, err


def _one_line_error(code: int, err: str, expected: str) -> None:
    assert code == 1, err
    assert "internal error" not in err and "Traceback" not in err
    lines = err.rstrip("\n").split("\n")
    # One line; a parse error adds the offending line and a caret under it (file:line:col).
    assert len(lines) == 1 or (len(lines) == 3 and lines[2].strip().startswith("^")), err
    assert expected in lines[0], err


def _cases() -> list:
    cases = []
    for cmd, extra in FILE_COMMANDS.items():
        for kind, (placeholder, expected) in BAD_FILES.items():
            if cmd == "report" and kind == "a directory":  # report DIR indexes a dump folder
                expected = "no modules to index"
            cases.append(pytest.param(" ".join([cmd, placeholder, *extra]), f"{placeholder}: {expected}",
                                      1, id=f"{cmd} FILE {kind}"))
    for kind, (placeholder, expected) in BAD_FILES.items():
        for line in (f"diff {placeholder} M", f"diff M {placeholder}"):
            cases.append(pytest.param(line, f"{placeholder}: {expected}", 1, id=f"{line.split()[1]} {kind}"))
    for line, option in OUTPUT_OPTIONS:
        for kind, (path, expected) in BAD_OUTPUTS.items():
            cases.append(pytest.param(line.replace("OUT", path), expected, 1, id=f"{option} {kind}"))
    for line, option in BAD_COUNTS:
        cases.append(pytest.param(line, f"argument {option}", 2, id=line.replace("{tmp}/", "")))
    for line, expected in BAD_OTHER_INPUTS:
        cases.append(pytest.param(line, expected, 1, id=line.replace("{tmp}/", "")))
    return cases


@pytest.mark.parametrize(("line", "expected", "code"), _cases())
def test_bad_input_is_one_line_and_the_right_exit_code(line: str, expected: str, code: int, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    files = _files(tmp_path)
    argv = _subst(line, files, tmp_path).split()
    expected = _subst(expected, files, tmp_path)
    got, out, err = _run(argv, capsys)
    if code == 2:
        assert got == 2, err
        assert expected in err and "internal error" not in err, err
        return
    _one_line_error(got, err, expected)
    before = {p.name for p in tmp_path.iterdir()}
    assert not [n for n in before if n.endswith(".tmp")], before  # no temp file left behind


def test_cast_inputs_converts_what_fits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _files(tmp_path)
    out = tmp_path / "out.npz"
    code, _, err = _run(["run", files["M"], "--inputs", files["I32"], "--cast-inputs", "--out", str(out)], capsys)
    assert code == 0, err
    np.testing.assert_array_equal(load_npz(out)["out"], np.arange(4, dtype=np.float32) ** 2)
    assert load_npz(out)["out"].dtype == np.float32


@pytest.mark.parametrize(("dtype", "values", "param", "bad"), [
    (np.float64, [1e300, -1e300, np.inf, 1.0], "f32", 2),  # inf stays inf; finite beyond f32 refused
    (np.float32, [70000.0, 1.0, np.nan, -1.0], "f16", 1),
    (np.int64, [2**31, -1, 0, 5], "s32", 1),
    (np.int32, [-1, 0, 255, 256], "u8", 2),
    (np.float32, [np.nan, 3.9, -0.5, 2e10], "s32", 2),  # NaN has no integer; 3.9 truncates
    (np.float64, [1.0, 2.5], "pred", 0),
    (np.int32, [70000, 1], "f16", 1),
])
def test_cast_refuses_values_the_parameter_cannot_hold(dtype, values, param, bad) -> None:
    from hloscope.errors import InputError
    from hloscope.interpret.inputs import inputs_from_mapping
    from hloscope.text import parse_module

    n = len(values)
    m = parse_module(f"HloModule m\n\nENTRY e {{\n  ROOT p = {param}[{n}] parameter(0)\n}}\n")
    mapping = {"arg0": np.array(values, dtype)}
    with pytest.raises(InputError, match="store it as"):
        inputs_from_mapping(m, mapping, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if bad:
            with pytest.raises(InputError, match=f"{bad} of {n} values out of the range of {param}"):
                inputs_from_mapping(m, mapping, 1, cast=True)
        else:
            (got,) = inputs_from_mapping(m, mapping, 1, cast=True)
            assert got.dtype == m.entry.parameters[0].shape.dtype


def test_matching_types_pass_unchanged(tmp_path: Path) -> None:
    from hloscope.interpret.inputs import inputs_from_mapping
    from hloscope.text import parse_module

    m = parse_module(MODULE)
    x = np.arange(4, dtype=np.float32)
    save_npz(tmp_path / "in.npz", {"arg0": x})
    (got,) = inputs_from_mapping(m, load_npz(tmp_path / "in.npz"), 1)
    np.testing.assert_array_equal(got, x)

"""``hloscope dump -- python examples/train_small.py``: runs, lists the modules, reports one."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

import hloscope.cli.jax  # noqa: E402,F401  (registers "dump" until the lead adds it to cli.py)
from hloscope.cli.jax import list_dumped_modules, program_command, select_module  # noqa: E402
from hloscope.cli.main import main  # noqa: E402
from hloscope.errors import InputError  # noqa: E402

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "train_small.py")




def test_json_listing_and_kept_dir(tmp_path: Path, capfd) -> None:
    d = tmp_path / "dump"
    code = main(["dump", "--json", "--dir", str(d), "--", "python", EXAMPLE, "--steps", "1"])
    out, err = capfd.readouterr()
    assert code == 0, err
    data = json.loads(out)  # the program's own print went to stderr
    assert "loss after 1 steps" in err
    assert data["exit_code"] == 0 and data["dir"] == str(d)
    names = [m["name"] for m in data["modules"]]
    assert {"jit_init", "jit_train_step", "jit_evaluate"} <= set(names)
    step = next(m for m in data["modules"] if m["name"] == "jit_train_step")
    assert step["flops"] > 100_000 and step["peak_bytes"] > 0 and step["error"] is None
    assert all(m["error"] is None for m in data["modules"])
    # The same folder, read again without running anything.
    modules = list_dumped_modules(d)
    assert [m.name for m in modules] == names
    assert select_module(modules, "train_step").name == "jit_train_step"
    assert select_module(modules, str(step["index"])).name == "jit_train_step"
    with pytest.raises(InputError, match="matches no module"):
        select_module(modules, "nope")


def test_table_report_and_open(tmp_path: Path, capfd) -> None:
    out_html = tmp_path / "step.html"
    code = main(["dump", "--report", "train_step", "-o", str(out_html), "--open", "evaluate",
                 "--", "python", EXAMPLE, "--steps", "1"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "loss after 1 steps" in out  # the program's stdout passes through
    assert out_html.read_text().lstrip().lower().startswith("<!doctype html")
    opened = Path(out.strip().splitlines()[-1])
    assert opened.name.endswith("jit_evaluate.cpu_after_optimizations.txt") and opened.is_file()
    import hloscope

    assert hloscope.load(opened).name == "jit_evaluate"


def test_table_output(capfd) -> None:
    code = main(["dump", "--", "python", EXAMPLE, "--steps", "1"])
    out, _ = capfd.readouterr()
    assert code == 0
    assert "jit_train_step" in out and "FLOPs" in out and "peak memory" in out


def test_failing_program_exit_code_is_returned(capfd) -> None:
    code = main(["dump", "--", "python", "-c", "import sys; print('hi'); sys.exit(3)"])
    out, err = capfd.readouterr()
    assert code == 3
    assert "hi" in out and "exited with code 3" in err and "compiled no XLA module" in err


def test_usage_errors(capfd) -> None:
    assert main(["dump"]) == 2
    assert main(["dump", "--report", "x", "--", "python", "-c", "pass"]) == 2
    assert main(["dump", "--", "/nonexistent/prog"]) == 1
    err = capfd.readouterr().err
    assert "after '--'" in err and "needs -o" in err and "not found" in err


def test_program_command() -> None:
    assert program_command(["python", "a.py"]) == [sys.executable, "a.py"]
    assert program_command(["python3.11", "a.py"])[0] == sys.executable
    assert program_command(["bash", "x"]) == ["bash", "x"]

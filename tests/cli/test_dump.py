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
FLAX_EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "train_flax.py")




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
    import shutil

    shutil.rmtree(opened.parent)  # --open keeps the temporary folder for the user: not for a test


def test_table_output(capfd) -> None:
    code = main(["dump", "--", "python", EXAMPLE, "--steps", "1"])
    out, _ = capfd.readouterr()
    assert code == 0
    assert "jit_train_step" in out and "FLOPs" in out and "live-range peak" in out


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


@pytest.fixture(scope="module")
def flax_dump():
    """``dump --json`` of the flax/optax U-Net script, without --dir, run once for the tests below."""
    pytest.importorskip("flax")
    pytest.importorskip("optax")
    import shutil
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "hloscope", "dump", "--json", "--", "python", FLAX_EXAMPLE,
                           "--steps", "1"], capture_output=True, text=True)
    data = json.loads(proc.stdout)
    yield proc.returncode, data
    if data.get("dir"):
        shutil.rmtree(data["dir"], ignore_errors=True)


def test_json_without_dir_keeps_what_it_lists(flax_dump) -> None:
    # Before, the folder was deleted before the JSON listing paths into it was printed.
    code, data = flax_dump
    assert code == 0 and data["dir"] is not None
    listed = [p for m in data["modules"] for p in (m["path"], m["before_optimizations_path"],
                                                     m["buffer_assignment_path"])]
    assert len(data["modules"]) > 10 and all(p is not None and Path(p).is_file() for p in listed)
    assert "jit_train_step" in {m["name"] for m in data["modules"]}


def test_only_hlo_text_and_buffer_assignments_are_kept(flax_dump) -> None:
    # XLA:CPU also writes LLVM IR, object files, debug options and the MLIR it was given: 801
    # files (9.5 MB) for this script, 593 (9.5 MB) for the models tier's GPT step; kept now:
    # 252 (1.8 MB) and 30 (3.0 MB), every one a .txt file hloscope reads.
    _, data = flax_dump
    files = list(Path(data["dir"]).iterdir())
    assert files and all(p.is_file() and p.name.endswith(".txt") for p in files)
    kinds = {p.name.split(".")[-2].split("-", 1)[-1] if "-" in p.name else p.name.split(".")[-2] for p in files}
    assert {"before_optimizations", "cpu_after_optimizations", "buffer-assignment"} <= kinds


def test_large_constants_are_dumped_so_the_step_runs(flax_dump, capsys) -> None:
    # The U-Net's upsampling matrix was dumped as constant({...}): `run` could not run the step.
    _, data = flax_dump
    step = next(m for m in data["modules"] if m["name"] == "jit_train_step")
    text = Path(step["path"]).read_text()
    assert "{...}" not in text and "f32[16,8]" in text
    capsys.readouterr()
    assert main(["run", step["path"], "--distribution", "positive", "--json"]) == 0  # (AdamW: nu >= 0)
    outputs = json.loads(capsys.readouterr().out)["outputs"]
    assert all(o.get("finite", True) for o in outputs.values())  # (integer outputs: no such key)


def test_flags_for_constants_and_all_files(tmp_path: Path, capfd) -> None:
    show = ["--", "python", "-c", "import os; print(os.environ['XLA_FLAGS'])"]
    assert main(["dump", "--dir", str(tmp_path / "a")] + show) == 0
    assert "--xla_dump_large_constants" in capfd.readouterr().out
    assert main(["dump", "--elide-constants", "--dir", str(tmp_path / "b")] + show) == 0
    assert "--xla_dump_large_constants" not in capfd.readouterr().out
    # --all-files keeps what XLA:CPU writes besides HLO (LLVM IR, object files).
    d = tmp_path / "all"
    assert main(["dump", "--all-files", "--dir", str(d), "--", "python", EXAMPLE, "--steps", "1"]) == 0
    assert any(p.suffix in (".ll", ".o") for p in d.iterdir())


def test_a_users_folder_keeps_its_own_files(tmp_path: Path, capfd) -> None:
    d = tmp_path / "mine"
    d.mkdir()
    (d / "notes.bin").write_bytes(b"\x00")
    (d / "sub").mkdir()
    assert main(["dump", "--dir", str(d), "--", "python", "-c", "pass"]) == 0
    assert (d / "notes.bin").exists() and (d / "sub").is_dir()

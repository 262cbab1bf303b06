"""The models tier: real training steps (flax linen and nnx, optax) on one and several devices.

``programs.py`` holds the programs (Note [Models tier]); ``build`` writes each into the oracle
corpus's on-disk layout (Note [Corpus layout] in ``hloscope.testing.oracle.corpus``: HLO before
and after XLA's optimizations, inputs, outputs, XLA's cost and memory analyses, XLA's dump)
under ``.cache/models/<jax version>/``, once per source change. The tests read them through
``tests/models/conftest.py``; ``benchmarks/models.py`` times every command on them.

Importing this package does not import jax; ``build`` imports jax, flax and optax.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hloscope.testing.oracle.corpus import OracleCase

__all__ = ["LLM_MODULES", "MODEL_NAMES", "PLANTED_NAMES", "build", "default_cache_dir", "pre_text_with_metadata", "xla_bench_dir"]

# The programs of programs.py, by name (kept here so that collecting tests needs no jax).
MODEL_NAMES = ("gpt_dp8", "gpt_tp4x2", "gpt_bf16_remat", "resnet_1", "resnet_dp8", "lstm_scan",
               "moe_a2a8", "vit_pmap8")
# planted.py's training steps with a NaN planted in the loss (built by ``build`` alike).
PLANTED_NAMES = ("nan_log_1", "nan_log_dp8", "nan_norm_1", "nan_norm_dp8")


# XLA's LLM benchmark modules the tier reads when a copy is at hand (xla_bench_dir): GPU
# training steps with Transformer Engine custom calls, 8 and 16 devices.
LLM_MODULES = ("hlo_llama31_8b_bf16_1x8.hlo", "hlo_llama31_8b_bf16_2x8.hlo",
               "hlo_mixtral_8x7b_bf16_1x8.hlo")


def xla_bench_dir() -> Path | None:
    """Where a copy of XLA's benchmark modules (``xla/tools/benchmarks/hlo``) is:
    ``$HLOSCOPE_XLA_BENCH`` or ``<repo>/.cache/xla_bench``; None when there is none. They are
    XLA's files, never committed here: ``tools/xla_corpus.py bench MIRROR DIR`` copies them out
    of a git mirror of XLA."""
    from hloscope.testing.oracle.corpus import REPO_ROOT

    path = Path(os.environ.get("HLOSCOPE_XLA_BENCH") or REPO_ROOT / ".cache" / "xla_bench")
    return path if path.is_dir() and any(path.glob("*.hlo")) else None


def default_cache_dir() -> Path:
    """``$HLOSCOPE_MODELS_CACHE`` or ``<repo>/.cache/models/<jax version>[-<isa>]``."""
    from hloscope.testing.oracle import corpus

    root = os.environ.get("HLOSCOPE_MODELS_CACHE")
    if root:
        return Path(root) / corpus.default_cache_dir().name
    return corpus.REPO_ROOT / ".cache" / "models" / corpus.default_cache_dir().name


def build(name: str, cache_dir: Path | None = None) -> OracleCase:
    """The model ``name`` built (or reused) under ``cache_dir`` (default ``default_cache_dir()``)."""
    from hloscope.testing.oracle import corpus

    cache = cache_dir if cache_dir is not None else default_cache_dir()
    return corpus.OracleCase(name, corpus.build_case(_case(name), cache))


def _case(name: str) -> Any:
    """The Case of model ``name``: programs.py's, or planted.py's (NaNs planted for the
    numerics tools)."""
    from . import planted, programs

    try:
        return programs.by_name(name)
    except KeyError:
        return planted.by_name(name)


def pre_text_with_metadata(name: str, cache_dir: Path | None = None) -> str:
    """The model's HLO before XLA's optimizations *with* its metadata (op_name, the stack-frame
    tables with the source lines), as XLA's own dumps print it: ``pre.hlo`` is jax's default
    printing, which leaves the metadata out, so a tool that pairs values of the two modules by
    op_name (``hloscope compare``) finds nothing to pair. Lowered again with jax (no compile)
    on first use and kept beside the case as ``pre_metadata.hlo``; the instructions and their
    names are ``pre.hlo``'s."""
    from hloscope.testing.cases import jax_config
    from hloscope.xla.lowering import use_shardy

    case = build(name, cache_dir)
    path = case.path / "pre_metadata.hlo"
    if path.exists():
        return path.read_text()
    import jax

    prog = _case(name)
    with jax_config(prog.config), use_shardy(prog.shardy):
        inputs = prog.inputs()
        kwargs = prog.jit_options()
        if prog.lowering == "jit":
            kwargs.setdefault("keep_unused", True)  # as lower_jax: parameters = flat inputs
        transform = jax.pmap if prog.lowering == "pmap" else jax.jit
        text = transform(prog.fn, **kwargs).lower(*inputs).as_text(dialect="hlo", debug_info=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
    return text

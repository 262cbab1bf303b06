"""The time estimate on the models tier and XLA's LLM modules (issue 25, items 4 and 5)."""
from __future__ import annotations

import hloscope as hs
from hloscope.analysis.backend import infer_backend
from hloscope.analysis.hardware import load_hardware
from hloscope.analysis.timing import estimate_time
from hloscope.report.data import implied_hardware


def test_the_backend_of_each_model(model, stage: str) -> None:
    """jax's modules after XLA:CPU's passes carry XLA:CPU's fusion configs; before them nothing
    names a backend, and the module is flagged as unoptimized, with a note in the estimate."""
    module = hs.parse(model.post_text if stage == "post" else model.pre_text)
    got = infer_backend(module)
    if stage == "post":
        assert (got.backend, got.unoptimized) == ("cpu", False) and got.fusions > 0
        assert "__ynn_fusion" in got.reason()
    else:
        assert (got.backend, got.unoptimized, got.fusions) == ("unknown", True, 0)
    est = estimate_time(module, load_hardware(got.profile))
    assert any("no fusions" in n for n in est.notes) == (stage == "pre")
    assert implied_hardware(module)[0] == got.profile


def test_a_cpu_step_on_a_gpu_profile_says_so(model) -> None:
    module = hs.parse(model.post_text)
    est = estimate_time(module, load_hardware("h100-sxm"))
    [note] = est.notes
    assert "compiled for XLA:CPU" in note and "h100-sxm" in note
    if est.launch_seconds >= 0.1 * est.total_seconds:
        assert "launch overhead" in note


def test_llm_modules_are_gpu_modules_before_optimization(llm_path) -> None:
    """XLA's Llama and Mixtral benchmark steps call Transformer Engine's attention (issue 25 item
    5: they were taken for CPU modules): a GPU module, unoptimized (no fusions)."""
    module = hs.load(llm_path)
    got = infer_backend(module)
    assert (got.backend, got.profile, got.unoptimized) == ("gpu", "h100-sxm", True)
    assert got.evidence[0].what == "Transformer Engine custom calls"
    assert {"te_fused_attn_forward_ffi", "te_fused_attn_backward_ffi"} <= set(got.evidence[0].examples)
    assert implied_hardware(module)[0] == "h100-sxm"


def test_llm_page_faults_are_the_allocations_own(llm_path) -> None:
    """On the cpu profile the temporary block's page faults (30.6 s on Llama 3.1 8B, charged to
    a 16 KiB broadcast before) are a line of their own, not any instruction's time."""
    module = hs.load(llm_path)
    est = estimate_time(module, load_hardware("cpu"))
    assert est.fresh_pages and est.fresh_page_seconds == sum(p.seconds for p in est.fresh_pages)
    longest = est.to_json(top=1)["longest"][0]
    top = max(est.per_instruction.values(), key=lambda t: t.seconds)
    assert top.opcode in ("dot", "while", "custom-call", "convolution"), top
    assert longest["opcode"] == "fresh-pages" or longest["instruction"] == top.name
    assert len(est.notes) == 2  # unoptimized, and a GPU module on a CPU profile

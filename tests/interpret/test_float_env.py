"""Denormals as the backend treats them (Note [Denormals] in interpret/float_env.py), op by op
against XLA:CPU, which reads and writes f32/bf16/f64 denormals of arithmetic as zero."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hloscope
from hloscope.interpret import RunOptions, run

client = pytest.importorskip("hloscope.xla.client")

UNARY = ["log", "sqrt", "rsqrt", "exponential", "sign", "abs", "negate", "floor",
         "round-nearest-even", "tanh", "sine", "log-plus-one", "exponential-minus-one", "erf",
         "logistic", "ceil", "is-finite", "cosine"]
BINARY = ["add", "multiply", "divide", "maximum", "minimum", "power", "remainder", "atan2", "subtract"]
TINY = {"f32": np.float32(3e-40), "f64": np.float64(3e-310), "bf16": ml_dtypes.bfloat16(3e-40)}
DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16}


def _module(ty: str) -> str:
    lines = [f"  p = {ty}[4] parameter(0)", f"  q = {ty}[4] parameter(1)"]
    outs = []
    for op in UNARY:
        rty = "pred" if op == "is-finite" else ty
        lines.append(f"  u_{len(outs)} = {rty}[4] {op}(p)")
        outs.append((f"u_{len(outs)}", f"{rty}[4]"))
    for op in BINARY:
        lines.append(f"  b_{len(outs)} = {ty}[4] {op}(p, q)")
        outs.append((f"b_{len(outs)}", f"{ty}[4]"))
    lines.append(f"  c_{len(outs)} = pred[4] compare(p, q), direction=EQ")
    outs.append((f"c_{len(outs)}", "pred[4]"))
    for other in ("f32", "f64", "f16"):
        if other != ty:
            lines.append(f"  v_{len(outs)} = {other}[4] convert(p)")
            outs.append((f"v_{len(outs)}", f"{other}[4]"))
    lines.append(f"  z = {ty}[] constant(0)")
    lines.append(f"  r_{len(outs)} = {ty}[] reduce(p, z), dimensions={{0}}, to_apply=sum")
    outs.append((f"r_{len(outs)}", f"{ty}[]"))
    root = ", ".join(n for n, _ in outs)
    shapes = ", ".join(s for _, s in outs)
    return ("HloModule denormals\nsum {\n  a = " + ty + "[] parameter(0)\n  b = " + ty + "[] parameter(1)\n"
            "  ROOT s = " + ty + "[] add(a, b)\n}\nENTRY e {\n" + "\n".join(lines)
            + f"\n  ROOT t = ({shapes}) tuple({root})\n}}\n")


@pytest.mark.parametrize("ty", list(TINY))
def test_denormals_match_xla_cpu(ty: str) -> None:
    # log(1e-40) is -inf on XLA:CPU (log of zero), -92.1 with denormals kept; lgamma, digamma,
    # sign and sqrt differ the same way.
    dt, tiny = DTYPES[ty], TINY[ty]
    p = np.array([tiny, -tiny, tiny * 3, 1], dt)
    q = np.array([tiny, 0, 1, -tiny], dt)
    text = _module(ty)
    ours = run(hloscope.parse(text), [p, q])
    xla = client.compile_and_run(text, [p, q])
    names = UNARY + BINARY + ["compare"] + ["convert"] * (len(xla) - len(UNARY) - len(BINARY) - 2) + ["reduce"]
    for name, o, x in zip(names, ours, xla, strict=True):
        o, x = np.asarray(o).astype(np.float64), np.asarray(x).astype(np.float64)
        close = (o == x) | (np.isnan(o) & np.isnan(x)) | np.isclose(o, x, rtol=1e-6, atol=0)
        if name == "atan2" and ty != "f64":
            close[0] = True  # known difference: XLA:CPU's atan2(tiny, tiny) is NaN (0/0 inside)
        assert close.all(), f"{name}: ours {o} xla {x}"


def test_ieee_environment_keeps_denormals() -> None:
    text = "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT l = f32[2] log(p)\n}\n"
    x = np.array([1e-40, 1], np.float32)
    assert np.isneginf(run(hloscope.parse(text), [x])[0])
    kept = run(hloscope.parse(text), [x], options=RunOptions(float_env="ieee"))
    assert abs(float(kept[0]) - np.log(np.float64(np.float32(1e-40)))) < 1e-3
    gpu = run(hloscope.parse(text.replace("f32", "f64")), [x.astype(np.float64) * 1e-270],
              options=RunOptions(float_env="gpu"))
    assert np.isfinite(gpu[0])  # GPUs keep f64 denormals


@pytest.mark.parametrize("fn", ["lgamma", "digamma", "log", "sign", "sqrt"])
def test_jax_functions_of_denormals_match_xla_cpu(fn: str) -> None:
    jax = pytest.importorskip("jax")
    from jax import lax

    f = {"lgamma": lax.lgamma, "digamma": lax.digamma, "log": jax.numpy.log, "sign": jax.numpy.sign,
         "sqrt": jax.numpy.sqrt}[fn]
    x = np.array([1e-40, -1e-40, 3e-39, 2.5], np.float32)
    expected = np.asarray(jax.jit(f)(x))
    text = jax.jit(f).lower(x).compiler_ir("hlo").as_hlo_text()
    got = run(hloscope.parse(text), [x])
    got = got[0] if isinstance(got, tuple) else got
    close = (got == expected) | (np.isnan(got) & np.isnan(expected)) | np.isclose(got, expected, rtol=1e-5)
    assert close.all(), f"ours {got} xla {expected}"


def test_f64_to_f16_rounds_once_on_avx512_hosts() -> None:
    # XLA:CPU on an AVX-512 host gives 1.001 (one rounding); on AVX2, and its parser, 1.0
    # (through f32): the oracle runs at AVX2 (Note [The oracle's instruction set]).
    text = "HloModule m\nENTRY e {\n  p = f64[2] parameter(0)\n  ROOT c = f16[2] convert(p)\n}\n"
    x = np.array([1 + 2.0**-11 + 2.0**-40, -(1 + 2.0**-11 + 2.0**-40)])
    m = hloscope.parse(text)
    assert run(m, [x]).tolist() == [1.0, -1.0]
    assert run(m, [x], options=RunOptions(float_env="xla-cpu-avx512")).tolist() == [1.0009765625, -1.0009765625]
    assert np.array_equal(run(m, [x]), np.asarray(client.compile_and_run(text, [x])))


def test_auto_follows_the_isa_xla_cpu_compiles_for() -> None:
    from hloscope.interpret.float_env import host_float_env, resolve

    # XLA_FLAGS caps the level XLA:CPU compiles for; the host decides otherwise.
    assert host_float_env("--xla_cpu_max_isa=AVX2", host_has_avx512=True) == "xla-cpu"
    assert host_float_env("--xla_cpu_max_isa=AVX512", host_has_avx512=False) == "xla-cpu-avx512"
    assert host_float_env("", host_has_avx512=True) == "xla-cpu-avx512"
    assert host_float_env("", host_has_avx512=False) == "xla-cpu"
    assert resolve("gpu") == "gpu"
    # The test oracle is compiled for AVX2 (tests/conftest.py), and so "auto" is xla-cpu here.
    assert resolve("auto") == "xla-cpu"

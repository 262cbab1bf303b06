"""The verifier: real modules (seeds, JAX programs before and after XLA) verify clean, and
hand-broken modules give exactly the expected diagnostic, caret line included."""
from __future__ import annotations

import re
import time

import numpy as np
import pytest

import hloscope
from hloscope.errors import VerifyError
from hloscope.ir.verifier import Diagnostic, check, verify
from tests.conftest import MODULE_SEEDS, SEED_FILES

# --- seeds --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", MODULE_SEEDS)
def test_seed_modules_verify_clean(seed: str) -> None:
    module = hloscope.load(SEED_FILES[seed])
    assert [str(d) for d in verify(module)] == []


def test_seed_003_verifies_fast() -> None:
    module = hloscope.load(SEED_FILES["003"])
    assert module.instruction_count > 7000
    best = min(_timed(lambda: verify(module)) for _ in range(3))
    assert best < 0.5, f"verify took {best:.3f} s on {module.instruction_count} instructions"


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


# --- JAX programs: XLA's own modules must verify clean -------------------------------------------
def _programs():
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    f32 = np.float32
    x = np.ones((4, 8), f32)
    img = np.ones((2, 3, 8, 8), f32)
    ker = np.ones((4, 3, 3, 3), f32)

    def while_loop(a):
        return lax.fori_loop(0, 5, lambda i, c: c * 2.0 + i, a)

    def cond(a, p):
        return lax.cond(p > 0, lambda v: v + 1, lambda v: v * 2, a)

    def switch(a, i):
        return lax.switch(i, [lambda v: v, lambda v: v - 1, lambda v: jnp.sin(v)], a)

    def scan(a):
        return lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(8, f32), a)

    def gather_scatter(a, idx):
        return a[idx], a.at[idx].add(1.0), a.at[idx, 2].set(0.0)

    def sort_multi(a, b):
        return lax.sort((a, b), num_keys=1), jnp.argsort(a)

    def windows(a):
        pooled = lax.reduce_window(a, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        g = jax.grad(lambda v: lax.reduce_window(v, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2),
                                                 "SAME").sum())(a)
        return pooled, g, lax.cumsum(a, axis=3)

    return {
        "elementwise": (lambda a, b: (jnp.tanh(a) * b - jnp.exp(b) / (a + 1), a > b,
                                      jnp.where(a > 0, a, b), jnp.clip(a, 0, 1)), (x, x)),
        "integer_bits": (lambda a, b: (a << 3, a >> b, a & b, a ^ b, ~a, lax.population_count(a),
                                       a // jnp.maximum(b, 1)),
                         (np.arange(12, dtype=np.int32), np.full(12, 2, np.int32))),
        "convert": (lambda a: (a.astype(jnp.bfloat16), a.astype(jnp.int8), lax.bitcast_convert_type(a, jnp.uint8),
                               lax.bitcast_convert_type(a.astype(jnp.float16), jnp.uint16),
                               lax.reduce_precision(a, 5, 10)), (x,)),
        "complex": (lambda a: (jnp.abs(lax.complex(a, a)), jnp.real(jnp.exp(1j * a)),
                               jnp.fft.rfft(a), jnp.fft.irfft(jnp.fft.fft(a))), (x,)),
        "shape_ops": (lambda a: (a.T, a.reshape(2, 16), jnp.concatenate([a, a], 1), a[1:3, ::2],
                                 jnp.pad(a, ((1, 2), (0, 3))), lax.pad(a, 0.0, ((-1, 1, 1), (0, 0, 2))),
                                 jnp.flip(a, 0), jnp.broadcast_to(a[:, None, :], (4, 3, 8))), (x,)),
        "reductions": (lambda a: (a.sum(0), a.max(1), jnp.argmax(a, 1), jnp.mean(a),
                                  jnp.any(a > 0, 0)), (x,)),
        "dot": (lambda a, b, c: (a @ b, jnp.einsum("bij,bjk->bik", c, c), jnp.dot(a, b, preferred_element_type=f32),
                                 jnp.einsum("ij,kj->ik", a.astype(jnp.bfloat16), a.astype(jnp.bfloat16))),
                (x, np.ones((8, 5), f32), np.ones((3, 4, 4), f32))),
        "conv": (lambda i, k: (lax.conv_general_dilated(i, k, (2, 2), "SAME"),
                               lax.conv_general_dilated(i, k, (1, 1), ((1, 0), (2, 1)), lhs_dilation=(2, 1),
                                                        rhs_dilation=(1, 2)),
                               jax.grad(lambda q: lax.conv(q, k, (1, 1), "VALID").sum())(i)), (img, ker)),
        "grouped_conv": (lambda i, k: lax.conv_general_dilated(i, k, (1, 1), "VALID", feature_group_count=3),
                         (np.ones((2, 6, 5, 5), f32), np.ones((6, 2, 3, 3), f32))),
        "windows": (windows, (img,)),
        "dynamic": (lambda a, i: (lax.dynamic_slice(a, (i, 0), (2, 8)),
                                  lax.dynamic_update_slice(a, jnp.zeros((1, 8), f32), (i, i))),
                    (x, np.int32(1))),
        "gather_scatter": (gather_scatter, (x, np.array([0, 2, 3], np.int32))),
        "sort": (sort_multi, (np.arange(6, dtype=f32)[::-1].copy(), np.arange(6, dtype=np.int32))),
        "top_k": (lambda a: lax.top_k(a, 3), (x,)),
        "linalg": (lambda a: (jnp.linalg.cholesky(a @ a.T + 4 * jnp.eye(4)),
                              lax.linalg.triangular_solve(a @ a.T + 4 * jnp.eye(4), a, left_side=True)),
                   (x[:, :4].copy(),)),
        "while": (while_loop, (x,)),
        "cond": (cond, (x, np.float32(1))),
        "switch": (switch, (x, np.int32(1))),
        "scan": (scan, (x,)),
        "random": (lambda k: (jax.random.normal(jax.random.key(k), (3, 4)),
                              jax.random.bits(jax.random.key(k, impl="rbg"), (5,))), (np.uint32(0),)),
        "iota_map": (lambda a: (jnp.arange(10) * 2, jax.vmap(jnp.outer)(a, a), lax.map(jnp.sum, a)), (x,)),
        "grad_mlp": (jax.grad(lambda w, v: jnp.sum(jax.nn.gelu(v @ w) ** 2)), (np.ones((8, 8), f32), x)),
    }


_HEADER_ATTR = re.compile(r", allow_spmd_sharding_propagation_to_\w+=\{[^}]*\}")


@pytest.fixture(scope="module")
def jax_modules() -> dict[str, str]:
    """Each program's HLO text as lowered and as compiled by XLA:CPU."""
    import jax

    out = {}
    for name, (fn, args) in _programs().items():
        lowered = jax.jit(fn).lower(*args)
        out[f"{name}/lowered"] = lowered.as_text(dialect="hlo")
        # The parser does not yet read boolean-list header attributes (reported to its owner);
        # they say nothing about shapes, so they are dropped here.
        out[f"{name}/compiled"] = _HEADER_ATTR.sub("", lowered.compile().as_text())
    return out


def test_jax_modules_verify_clean(jax_modules: dict[str, str]) -> None:
    assert len(jax_modules) >= 40
    failures = {}
    for key, text in jax_modules.items():
        diagnostics = verify(hloscope.parse(text))
        if diagnostics:
            failures[key] = [str(d) for d in diagnostics[:3]]
    assert failures == {}


def test_jax_modules_cover_many_opcodes(jax_modules: dict[str, str]) -> None:
    seen = {i.opcode.text for text in jax_modules.values() for i in hloscope.parse(text).instructions()}
    for op in ("dot", "convolution", "gather", "scatter", "sort", "fft", "while", "conditional",
               "reduce-window", "select-and-scatter", "dynamic-slice", "pad",
               "rng-bit-generator", "bitcast-convert", "reduce", "topk"):
        assert op in seen, op


# --- hand-broken modules -----------------------------------------------------------------------
_BASE = """HloModule m, entry_computation_layout={(f32[8,128]{1,0}, f32[8,128]{1,0})->f32[8,128]{1,0}}

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (p0: f32[8,128], p1: f32[8,128]) -> f32[8,128] {
  %p0 = f32[8,128]{1,0} parameter(0)
  %p1 = f32[8,128]{1,0} parameter(1)
  %t = (f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(%p0, %p1)
  %g = f32[8,128]{1,0} get-tuple-element(%t), index=1
  %zero = f32[] constant(0)
  %r = f32[8]{0} reduce(%g, %zero), dimensions={1}, to_apply=%sum
  %rb = f32[8,128]{1,0} broadcast(%r), dimensions={0}
  ROOT %add = f32[8,128]{1,0} add(%p0, %rb)
}
"""


def _diagnose(old: str, new: str, base: str = _BASE) -> list[str]:
    assert old in base
    return [str(d) for d in verify(hloscope.parse(base.replace(old, new), "m.hlo"))]


def test_base_module_is_clean() -> None:
    assert verify(hloscope.parse(_BASE)) == []
    check(hloscope.parse(_BASE))


def test_wrong_declared_shape() -> None:
    assert _diagnose("ROOT %add = f32[8,128]{1,0} add", "ROOT %add = f32[8,64]{1,0} add",
                     _BASE.replace("->f32[8,128]{1,0}}", "->f32[8,64]{1,0}}")) == [
        "m.hlo:17:8: error: expected shape f32[8,128] from add(f32[8,128], f32[8,128]), declared f32[8,64]\n"
        "  ROOT %add = f32[8,64]{1,0} add(%p0, %rb)\n"
        "       ^~~~"
    ]


def test_bad_tuple_index() -> None:
    assert _diagnose("index=1", "index=2") == [
        "m.hlo:13:3: error: tuple index 2 is out of range for (f32[8,128], f32[8,128]) with 2 elements "
        "(in get-tuple-element((f32[8,128], f32[8,128])))\n"
        "  %g = f32[8,128]{1,0} get-tuple-element(%t), index=2\n"
        "  ^~"
    ]


def test_wrong_reducer_signature() -> None:
    assert _diagnose("ROOT %s = f32[] add(%a, %b)", "%s = f32[] add(%a, %b)\n  ROOT %c = s32[] convert(%s)") == [
        "m.hlo:16:3: error: reducer sum must be (f32[], f32[]) -> f32[], is (f32[], f32[]) -> s32[]\n"
        "  %r = f32[8]{0} reduce(%g, %zero), dimensions={1}, to_apply=%sum\n"
        "  ^~"
    ]


def test_wrong_operand_count() -> None:
    assert _diagnose("add(%p0, %rb)", "add(%p0, %rb, %p1)") == [
        "m.hlo:17:8: error: add takes 2 operands, got 3\n"
        "  ROOT %add = f32[8,128]{1,0} add(%p0, %rb, %p1)\n"
        "       ^~~~"
    ]


def test_broadcast_dimension_mismatch() -> None:
    assert _diagnose("dimensions={0}\n", "dimensions={1}\n") == [
        "m.hlo:16:3: error: operand dimension 0 (size 8) maps to result dimension 1 of size 128 "
        "(in broadcast(f32[8]))\n"
        "  %rb = f32[8,128]{1,0} broadcast(%r), dimensions={1}\n"
        "  ^~~"
    ]


def test_entry_layout_and_alias_mismatch() -> None:
    text = _BASE.replace("HloModule m,", "HloModule m, input_output_alias={ {}: (1, {}, may-alias), {0}: (3, {}) },")
    text = text.replace("->f32[8,128]{1,0}}", "->f32[8,64]{1,0}}")
    assert [(d.severity, d.message) for d in verify(hloscope.parse(text))] == [
        ("warning", "entry_computation_layout (f32[8,128], f32[8,128]) -> f32[8,64] does not match entry "
         "computation main (f32[8,128], f32[8,128]) -> f32[8,128]; the computation's signature is what runs "
         "(XLA:CPU compiles it so and drops the layout)"),
        ("error", "input_output_alias {0}: (3, {}): entry has no parameter 3"),
    ]


def test_an_entry_layout_of_other_types_runs_the_computation_as_xla_cpu_does() -> None:
    # XLA's layouts_and_names.hlo: an f16 identity under an f32 entry_computation_layout; jax's
    # path into XLA:CPU compiles the computation's f16 signature. hloscope refused the module.
    client = pytest.importorskip("hloscope.xla.client")
    text = """HloModule m, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}
ENTRY e {
  p = f16[2,3] parameter(0)
  ROOT n = f16[2,3] negate(p)
}"""
    module = hloscope.parse(text)
    assert [d.severity for d in verify(module)] == ["warning"]
    x = (np.arange(6).reshape(2, 3) + 0.5).astype(np.float16)
    ours = hloscope.run(module, [x])
    theirs = client.compile_hlo(text).run([x])
    assert ours.dtype == theirs.dtype == np.float16 and np.array_equal(ours, theirs)


def test_several_errors_are_all_reported() -> None:
    messages = _diagnose("index=1", "index=7")
    messages += _diagnose("dimensions={1}, to_apply", "dimensions={2}, to_apply")
    assert len(messages) == 2
    assert "reduce dimension 2 is out of range for rank 2" in messages[1]
    text = _BASE.replace("index=1", "index=7").replace("dimensions={1}, to_apply", "dimensions={2}, to_apply")
    assert len(verify(hloscope.parse(text))) == 2


def test_while_signature() -> None:
    text = """HloModule w
%cond (c: (s32[], f32[4])) -> pred[] {
  %c = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (b: (s32[], f32[4])) -> (s32[], f32[4]) {
  %b = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%b), index=0
  %v = f32[4] get-tuple-element(%b), index=1
  ROOT %t = (s32[], f32[4]) tuple(%i, %v)
}
ENTRY %e (x: (s32[], f32[4])) -> (s32[], f32[4]) {
  %x = (s32[], f32[4]) parameter(0)
  ROOT %w = (s32[], f32[4]) while(%x), condition=%cond, body=%body
}
"""
    assert verify(hloscope.parse(text)) == []
    broken = text.replace("ROOT %t = (s32[], f32[4]) tuple(%i, %v)", "ROOT %t = (s32[]) tuple(%i)")
    broken = broken.replace("-> (s32[], f32[4]) {\n  %b", "-> (s32[]) {\n  %b")
    assert [d.message for d in verify(hloscope.parse(broken))] == [
        "while body body must be ((s32[], f32[4])) -> (s32[], f32[4]), is ((s32[], f32[4])) -> (s32[])"
    ]


def _module_for_mutation():
    return hloscope.parse(_BASE, "m.hlo")


def test_operand_from_another_computation() -> None:
    m = _module_for_mutation()
    add = m.entry.root
    add.operands[1] = m.computation("sum").parameters[0]
    assert [d.message for d in verify(m)][:1] == ["uses a, not defined in computation main"]


def test_parameter_numbers_and_control_cycle() -> None:
    m = _module_for_mutation()
    m.entry.parameters[1].attrs["parameter_number"] = 3
    g = m.entry.instruction("g")
    t = m.entry.instruction("t")
    t.attrs["control-predecessors"] = [g]
    messages = [d.message for d in verify(m)]
    assert "parameter numbers [0, 3] of computation main must be 0..1, each once" in messages
    assert any(msg.startswith("cycle through operands/control predecessors") for msg in messages)


def test_verify_never_raises_on_garbage() -> None:
    m = _module_for_mutation()
    m.entry.instruction("r").attrs["dimensions"] = "not a tuple"
    m.entry.instruction("g").attrs.pop("index")
    diagnostics = verify(m)
    assert len(diagnostics) == 2
    assert all(isinstance(d, Diagnostic) and d.severity == "error" for d in diagnostics)


def test_check_raises_with_all_diagnostics() -> None:
    text = _BASE.replace("index=1", "index=9")
    with pytest.raises(VerifyError) as info:
        check(hloscope.parse(text, "m.hlo"))
    assert len(info.value.diagnostics) == 1
    assert str(info.value).startswith("m.hlo:13:3: error: tuple index 9")


def test_diagnostic_without_span_and_json() -> None:
    d = Diagnostic("error", "something is off", "add.1", "main")
    assert str(d) == "main/add.1: something is off"
    assert d.to_json() == {"severity": "error", "message": "something is off",
                           "instruction": "add.1", "computation": "main"}


_DEAD_BROKEN = """HloModule m

broken {
  x = f32[1,8,8,1] parameter(0)
  k = f32[2,2,1,1] parameter(1)
  ROOT c = f32[1,3,3,1] convolution(x, k), window={size=3x3 stride=4x5 pad=4_5x6_6}, dim_labels=b01f_01io->b01f
}

gathers {
  y = f32[4,2] parameter(0)
  ROOT g = f32[4,8] all-gather(y), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, dimensions={1}
}

ENTRY main {
  ROOT p = f32[] parameter(0)
}
"""


def test_a_computation_the_entry_never_calls_gives_warnings_only() -> None:
    # XLA's import tests (hlo_to_mhlo/tests/import.hlo) hold malformed computations beside a
    # trivial entry; jax's path into XLA:CPU drops them and runs the module. hloscope refused
    # it (a convolution window that does not fit its kernel) and took its grid from the dead
    # all-gather (8 replicas).
    from hloscope.interpret.run import default_grid

    module = hloscope.parse(_DEAD_BROKEN)
    found = verify(module)
    assert found and all(d.severity == "warning" for d in found)
    assert any("never called from the entry" in d.message and d.computation == "broken" for d in found)
    check(module)  # no error
    assert default_grid(module) == (1, 1)
    assert float(hloscope.run(module, [np.float32(2.5)])) == 2.5
    # Called, the same convolution is an error.
    called = _DEAD_BROKEN.replace("ROOT p = f32[] parameter(0)", "p = f32[] parameter(0)\n"
                                  "  a = f32[1,8,8,1] broadcast(p), dimensions={}\n"
                                  "  b = f32[2,2,1,1] broadcast(p), dimensions={}\n"
                                  "  ROOT r = f32[1,3,3,1] call(a, b), to_apply=broken")
    assert any(d.severity == "error" and d.computation == "broken" for d in verify(hloscope.parse(called)))

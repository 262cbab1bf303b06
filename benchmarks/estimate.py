"""Estimate accuracy: hloscope's time estimate against XLA:CPU's measured run time, same run.

Calibrates this machine once (``hloscope.analysis.hardware.calibrate``), then for each JAX
workload below: compiles it with jax on XLA:CPU, takes XLA's after-optimizations module text
(``compiled.as_text()``, what ``hloscope.xla.client.lower_jax`` returns as ``post_optimization_text``),
estimates it with ``hloscope.analysis.timing.estimate_time`` on the calibrated profile, and
times the same compiled executable (best of N, arguments already on the device, so neither
compile time nor host transfer is counted). Prints one row per workload with the signed error
``(estimated - measured) / measured`` and the median absolute error.

Run: ``python benchmarks/estimate.py [--calibrate-seconds S] [--budget S] [--only NAME,...]
[--json]``. Timings on a shared machine are noisy: the best of N is reported, and the
calibration is part of the same run so both see the same machine state.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Workload:
    """A jax function and a factory of its (numpy) arguments."""

    name: str
    character: str
    fn: Callable[..., Any]
    args: Callable[[np.random.Generator], tuple[Any, ...]]


def _workloads() -> list[Workload]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    f32 = np.float32

    def normal(rng: np.random.Generator, *shape: int, dtype: Any = f32) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32).astype(dtype)

    def matmul(a: Any, b: Any) -> Any:
        return a @ b

    def conv_net(x: Any, w1: Any, w2: Any, w3: Any) -> Any:
        dn = ("NHWC", "HWIO", "NHWC")
        y = jax.nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn))
        y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = jax.nn.relu(lax.conv_general_dilated(y, w2, (1, 1), "SAME", dimension_numbers=dn))
        y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = jnp.mean(y, axis=(1, 2))
        return y @ w3

    def mlp_loss(params: Any, x: Any, y: Any) -> Any:
        h = x
        for w, b in params[:-1]:
            h = jax.nn.gelu(h @ w + b)
        w, b = params[-1]
        return jnp.mean((h @ w + b - y) ** 2)

    def mlp_train_step(w1: Any, b1: Any, w2: Any, b2: Any, w3: Any, b3: Any, x: Any, y: Any) -> Any:
        params = [(w1, b1), (w2, b2), (w3, b3)]
        grads = jax.grad(mlp_loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)

    def attention(x: Any, wq: Any, wk: Any, wv: Any, wo: Any) -> Any:
        b, t, d = x.shape
        heads = 8

        def split(z: Any) -> Any:
            return z.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)

        q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(d // heads)
        p = jax.nn.softmax(s, axis=-1)
        o = jnp.einsum("bhqk,bhkd->bhqd", p, v).transpose(0, 2, 1, 3).reshape(b, t, d)
        h = x + o @ wo
        mu = h.mean(-1, keepdims=True)
        return (h - mu) * lax.rsqrt(((h - mu) ** 2).mean(-1, keepdims=True) + 1e-5)

    def elementwise(x: Any) -> Any:
        y = jnp.tanh(x) * 0.5 + 1.0
        y = jnp.exp(-y * y) + jnp.tanh(y * 0.3)
        return jnp.exp(y) * x

    def reductions(x: Any) -> Any:
        return x.sum(axis=0), x.max(axis=1), jnp.abs(x).mean()

    def transpose_copy(x: Any, y: Any) -> Any:
        return x.T + 1.0, jnp.transpose(y, (2, 0, 1)) * 2.0

    def fori(x: Any, w: Any) -> Any:
        return lax.fori_loop(0, 50, lambda i, h: jnp.tanh(h @ w) + x, x)

    def sort(x: Any) -> Any:
        return jnp.sort(x, axis=-1)

    def gather_scatter(table: Any, idx: Any, upd: Any) -> Any:
        rows = table[idx]
        return rows * 2.0, table.at[idx].add(upd)

    def softmax_layernorm(x: Any) -> Any:
        p = jax.nn.softmax(x, axis=-1)
        mu = p.mean(-1, keepdims=True)
        return (p - mu) / jnp.sqrt(p.var(-1, keepdims=True) + 1e-6)

    bf16 = jnp.bfloat16
    return [
        Workload("matmul_f32", "dot 1536^3", matmul,
                 lambda r: (normal(r, 1536, 1536), normal(r, 1536, 1536))),
        Workload("batched_matmul", "dot 64x256^3", jnp.matmul,
                 lambda r: (normal(r, 64, 256, 256), normal(r, 64, 256, 256))),
        Workload("matmul_bf16", "dot 1024^3 bf16", matmul,
                 lambda r: (normal(r, 1024, 1024, dtype=bf16), normal(r, 1024, 1024, dtype=bf16))),
        Workload("matmul_f64", "dot 768^3 f64", matmul,
                 lambda r: (normal(r, 768, 768).astype(np.float64), normal(r, 768, 768).astype(np.float64))),
        Workload("conv_net", "2 conv3x3 + pool", conv_net,
                 lambda r: (normal(r, 8, 64, 64, 16), normal(r, 3, 3, 16, 32) * 0.1,
                            normal(r, 3, 3, 32, 64) * 0.1, normal(r, 64, 10))),
        Workload("mlp_train_step", "grad + sgd, 1024 wide", mlp_train_step,
                 lambda r: (normal(r, 512, 1024) * 0.03, normal(r, 1024), normal(r, 1024, 1024) * 0.03,
                            normal(r, 1024), normal(r, 1024, 128) * 0.03, normal(r, 128),
                            normal(r, 512, 512), normal(r, 512, 128))),
        Workload("attention", "MHA 4x512x512, 8 heads", attention,
                 lambda r: (normal(r, 4, 512, 512),) + tuple(normal(r, 512, 512) * 0.04 for _ in range(4))),
        Workload("elementwise", "exp/tanh chain, 4M", elementwise,
                 lambda r: (normal(r, 4 * 1024 * 1024),)),
        Workload("reductions", "sum/max/mean 4096x4096", reductions,
                 lambda r: (normal(r, 4096, 4096),)),
        Workload("transpose_copy", "2D + 3D transposes, 16M", transpose_copy,
                 lambda r: (normal(r, 4096, 2048), normal(r, 256, 128, 256))),
        Workload("fori_loop", "50 x (dot 256x512^2 + tanh)", fori,
                 lambda r: (normal(r, 256, 512), normal(r, 512, 512) * 0.04)),
        Workload("sort", "sort 64 rows x 16K", sort, lambda r: (normal(r, 64, 16384),)),
        Workload("gather_scatter", "take + .at[].add, 256K x 32", gather_scatter,
                 lambda r: (normal(r, 65536, 32), r.integers(0, 65536, 262144).astype(np.int32),
                            normal(r, 262144, 32))),
        Workload("softmax_layernorm", "softmax + norm 2048x4096", softmax_layernorm,
                 lambda r: (normal(r, 2048, 4096),)),
    ]


@dataclass(frozen=True)
class Row:
    name: str
    character: str
    measured: float
    estimated: float
    runs: int

    @property
    def error(self) -> float:
        return (self.estimated - self.measured) / self.measured


def _best_time(fn: Callable[[], Any], budget: float, min_runs: int = 5, max_runs: int = 200) -> tuple[float, int]:
    """Best wall time of ``fn()`` over at least ``min_runs`` calls, more while within budget."""
    fn()  # warm up: first-run allocations, thread-pool start
    best = float("inf")
    start = time.perf_counter()
    runs = 0
    while runs < min_runs or (time.perf_counter() - start < budget and runs < max_runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return best, runs


def measure(w: Workload, hw: Any, budget: float) -> tuple[Row, Any]:
    """Compile ``w`` with jax, estimate its optimized module and time its execution."""
    import jax

    import hloscope
    from hloscope.analysis.timing import estimate_time

    args = tuple(jax.device_put(a) for a in w.args(np.random.default_rng(0)))
    compiled = jax.jit(w.fn).lower(*args).compile()
    text = compiled.as_text()
    estimate = estimate_time(hloscope.parse(text), hw)
    seconds, runs = _best_time(lambda: jax.block_until_ready(compiled(*args)), budget)
    return Row(w.name, w.character, seconds, estimate.total_seconds, runs), estimate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calibrate-seconds", type=float, default=4.0)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timing per workload")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--hardware", default="", help="a profile name or path instead of calibrating")
    parser.add_argument("--top", type=int, default=0, help="print the N longest estimated ops per workload")
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args(argv)

    from hloscope.analysis.hardware import calibrate, load_hardware

    t0 = time.perf_counter()
    hw = load_hardware(opts.hardware) if opts.hardware else calibrate(opts.calibrate_seconds)
    calib_s = time.perf_counter() - t0
    print(f"profile {hw.name}: calibrated in {calib_s:.1f} s", file=sys.stderr)
    print(json.dumps(hw.to_json(), indent=1), file=sys.stderr)

    wanted = {n for n in opts.only.split(",") if n}
    rows: list[Row] = []
    for w in _workloads():
        if wanted and w.name not in wanted:
            continue
        row, est = measure(w, hw, opts.budget)
        rows.append(row)
        if opts.top:
            for op in est.to_json(top=opts.top)["longest"]:
                print(f"    {w.name}: {op['opcode']:<14} {op['seconds'] * 1e3:8.3f} ms  {op['instruction']}",
                      file=sys.stderr)
    median = statistics.median(abs(r.error) for r in rows) if rows else 0.0
    if opts.json:
        print(json.dumps({
            "hardware": hw.to_json(),
            "rows": [{"workload": r.name, "measured_s": r.measured, "estimated_s": r.estimated,
                      "error": r.error, "runs": r.runs} for r in rows],
            "median_abs_error": median,
        }, indent=1))
        return 0
    print(f"{'workload':<18} {'character':<28} {'measured':>10} {'estimated':>10} {'error':>8}")
    for r in rows:
        print(f"{r.name:<18} {r.character:<28} {r.measured * 1e3:8.2f}ms {r.estimated * 1e3:8.2f}ms "
              f"{r.error * 100:+7.1f}%")
    print(f"median |error|: {median * 100:.1f}% over {len(rows)} workloads")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

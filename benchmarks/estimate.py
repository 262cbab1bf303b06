"""Estimate accuracy: hloscope's time estimate against XLA:CPU's measured run time, same run.

Runs on one core (``--cores``, Note [One core for CPU time]) with glibc reusing freed memory
(Note [Fresh pages, made steady]), both set before jax starts. Compiles each JAX workload
below with jax on XLA:CPU and keeps XLA's after-optimizations module text
(``compiled.as_text()``). Then, ``--rounds`` times: calibrates this machine
(``hloscope.xla.calibrate.calibrate``) and times every compiled executable (arguments already
on the device, so neither compile time nor host transfer is counted). By default both are
timed by the process's CPU time, which other processes on a shared machine do not inflate
(Note [CPU time on a shared machine] in ``hloscope/xla/calibrate.py``), and the median of
each calibrated rate and of each workload over the rounds is kept; with ``--clock wall`` the
fastest of each. Each module is estimated with
``hloscope.analysis.timing.estimate_time`` on that profile. Prints one row per workload with
the signed error ``(estimated - measured) / measured``, the median |error| per op family, and
the median and worst |error| over all workloads.

Run: ``python benchmarks/estimate.py [--rounds R] [--calibrate-seconds S] [--budget S]
[--cores N] [--dynamic-malloc] [--only NAME,...] [--top N] [--save-hardware PATH]
[--save-measurements DIR] [--replay DIR] [--thunks N] [--json]``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
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


# The models tier's steps the benchmark runs on one device (Note [Models on one device]).
MODELS = ("gpt_dp8", "gpt_bf16_remat", "resnet_1", "lstm_scan", "vit_pmap8")


def export_models(names: list[str], out: str) -> None:
    """Write each model's step for one device as HLO text and its inputs (``<name>.hlo``,
    ``<name>.npz``: the flattened arguments in parameter order) into the directory ``out``.
    Runs in a child process with the 8 devices the models' programs build their meshes on
    (Note [Models on one device])."""
    import jax

    from hloscope.testing.models.programs import by_name

    for name in names:
        case = by_name(name)
        inputs = jax.device_get(case.inputs())  # whole arrays on the host, whatever their sharding
        fn = case.fn
        if case.lowering == "pmap":  # one device's share, its collectives over an axis of size 1
            inputs = jax.tree.map(lambda a: np.asarray(a)[:1], inputs)
            fn = jax.vmap(case.fn, axis_name=case.jit_options().get("axis_name"))
        lowered = jax.jit(fn, keep_unused=True).lower(*inputs)
        with open(os.path.join(out, f"{name}.hlo"), "w") as f:
            f.write(lowered.as_text(dialect="hlo"))
        # Typed PRNG keys are their key data in HLO.
        leaves = [jax.random.key_data(a) if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key) else a
                  for a in jax.tree.leaves(inputs)]
        arrays = [np.asarray(a) for a in leaves]  # bf16 is saved as its bits, its name beside
        np.savez(os.path.join(out, f"{name}.npz"), dtypes=np.array([a.dtype.name for a in arrays]),
                 **{f"a{k}": a.view(f"u{a.itemsize}") if a.dtype.kind == "V" or a.dtype.name == "bfloat16" else a
                    for k, a in enumerate(arrays)})


def _model_workloads(names: list[str]) -> list[Compiled]:
    """The models tier's training steps (``hloscope.testing.models``) on one device.

    Note [Models on one device]
        On one core, XLA:CPU runs the 8 devices of a sharded step as 8 threads that meet at
        every collective, and the CPU time of a step is then mostly that meeting (one
        all-reduce of the pmapped ViT measured 5-15 ms against its 10 us of work), a
        scheduling artefact of the benchmark, not a cost of the program; and a process with 8
        CPU devices ran the one-device workloads 18-40% slower (softmax, a transposed
        convolution) than one with a single device. So a child process with 8 devices lowers
        each step's own function for one device and this process (one device) compiles and
        runs it on XLA:CPU (``hloscope.xla.client.compile_hlo``, timed as the calibration's
        kernels are: on device buffers, without jax's dispatch): a data-parallel step (the
        GPTs) on the whole batch, a pmapped step (the ViT) as ``jax.vmap`` over the first
        device's share with its collectives over an axis of size 1, the one-device steps
        (ResNet, LSTM) as they are. The tensor-parallel GPT is the same program as the
        data-parallel one, and the MoE step is written for a mesh of 8 (``shard_map``): both
        are left out. Donation is off (every round reruns the step on the same inputs).
    """
    import subprocess
    import tempfile

    import jax
    import ml_dtypes

    from hloscope.xla.client import compile_hlo

    out: list[Compiled] = []
    if not names:
        return out
    with tempfile.TemporaryDirectory(prefix="hloscope-estimate-models-") as tmp:
        env = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8")
        subprocess.run([sys.executable, __file__, "--export-models", ",".join(names), "--export-dir", tmp],
                       env=env, check=True)
        for name in names:
            with open(os.path.join(tmp, f"{name}.hlo")) as f:
                compiled = compile_hlo(f.read())
            with np.load(os.path.join(tmp, f"{name}.npz")) as z:
                dtypes = [str(d) for d in z["dtypes"]]
                leaves = [z[f"a{k}"].view(ml_dtypes.bfloat16) if d == "bfloat16" else z[f"a{k}"]
                          for k, d in enumerate(dtypes)]
            w = Workload(name, "models tier step, one device", lambda: None, lambda r: ())

            def fresh_run(compiled: Any = compiled, leaves: Any = leaves) -> Callable[[], Any]:
                arrays = compiled.put(leaves)

                def once() -> None:
                    jax.block_until_ready(compiled.executable.execute_sharded(arrays)
                                          .disassemble_into_single_device_arrays())

                return once

            optimized = compiled.executable.hlo_modules()[0].to_string()
            out.append(Compiled(w, fresh_run(), optimized, fresh_run))
    return out


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

    def transpose_scale(k: Any) -> Any:
        return jnp.swapaxes(k, 1, 2) * 0.125

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

    def gather_rows(table: Any, idx: Any) -> Any:
        return table[idx] * 2.0

    def scatter_add(table: Any, idx: Any, upd: Any) -> Any:
        return table.at[idx].add(upd)

    def embedding_grad(idx: Any, g: Any) -> Any:
        return jnp.zeros((32768, 64), jnp.float32).at[idx].add(g)

    def argsort(x: Any) -> Any:
        return jnp.argsort(x, axis=-1)

    def top_k(x: Any) -> Any:
        return lax.top_k(x, 16)

    def softmax(x: Any) -> Any:
        return jax.nn.softmax(x, axis=-1)

    def layernorm(x: Any, g: Any, b: Any) -> Any:
        mu = x.mean(-1, keepdims=True)
        return (x - mu) * lax.rsqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b

    def arith(x: Any, y: Any) -> Any:
        return (x * 1.5 + y) * (x - y) + 0.25

    def matvec(a: Any, v: Any) -> Any:
        return a @ v

    def cumsum(x: Any) -> Any:
        return jnp.cumsum(x, axis=-1)

    def scan_rnn(xs: Any, w: Any) -> Any:
        return lax.scan(lambda h, x: (jnp.tanh(h @ w + x),) * 2, xs[0], xs)[1]

    def concat_pad(x: Any, y: Any) -> Any:
        return jnp.pad(jnp.concatenate([x, y], axis=1), ((1, 1), (2, 2)))

    def random_normal(key: Any) -> Any:
        return jax.random.normal(key, (1024, 1024))

    def depthwise(x: Any, w: Any) -> Any:
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        feature_group_count=x.shape[-1])

    def segment_sum(data: Any, ids: Any) -> Any:
        return jax.ops.segment_sum(data, ids, num_segments=4096)

    def int8_matmul(a: Any, b: Any) -> Any:
        return jnp.matmul(a, b, preferred_element_type=jnp.int32)

    def conv_transpose(x: Any, w: Any) -> Any:
        return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def fft2(x: Any) -> Any:
        return jnp.fft.fft2(x)

    def kv_decode(x: Any, kc: Any, vc: Any, pos: Any, wq: Any, wk: Any, wv: Any, wo: Any, w1: Any,
                  w2: Any) -> Any:
        b, d = x.shape
        _, t, h, hd = kc.shape
        q = (x @ wq).reshape(b, h, hd)
        kc = lax.dynamic_update_slice(kc, (x @ wk).reshape(b, 1, h, hd), (0, pos, 0, 0))
        vc = lax.dynamic_update_slice(vc, (x @ wv).reshape(b, 1, h, hd), (0, pos, 0, 0))
        s = jnp.einsum("bhd,bthd->bht", q, kc) / np.sqrt(hd)
        s = jnp.where(jnp.arange(t)[None, None, :] <= pos, s, -1e30)
        o = jnp.einsum("bht,bthd->bhd", jax.nn.softmax(s, axis=-1), vc).reshape(b, d)
        y = x + o @ wo
        return y + jax.nn.gelu(y @ w1) @ w2, kc, vc

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
        Workload("transpose_scale", "keys swapped and scaled, 8x2048x512", transpose_scale,
                 lambda r: (normal(r, 8, 2048, 512),)),
        Workload("fori_loop", "50 x (dot 256x512^2 + tanh)", fori,
                 lambda r: (normal(r, 256, 512), normal(r, 512, 512) * 0.04)),
        Workload("sort", "sort 64 rows x 16K", sort, lambda r: (normal(r, 64, 16384),)),
        Workload("gather_scatter", "take + .at[].add, 256K x 32", gather_scatter,
                 lambda r: (normal(r, 65536, 32), r.integers(0, 65536, 262144).astype(np.int32),
                            normal(r, 262144, 32))),
        Workload("softmax_layernorm", "softmax + norm 2048x4096", softmax_layernorm,
                 lambda r: (normal(r, 2048, 4096),)),
        Workload("gather_rows", "take 512K rows x 32", gather_rows,
                 lambda r: (normal(r, 65536, 32), r.integers(0, 65536, 524288).astype(np.int32))),
        Workload("scatter_add", ".at[].add 256K x 32", scatter_add,
                 lambda r: (normal(r, 65536, 32), r.integers(0, 65536, 262144).astype(np.int32),
                            normal(r, 262144, 32))),
        Workload("embedding_grad", "zeros.at[].add 128K x 64", embedding_grad,
                 lambda r: (r.integers(0, 32768, 131072).astype(np.int32), normal(r, 131072, 64))),
        Workload("argsort", "argsort 32 rows x 16K", argsort, lambda r: (normal(r, 32, 16384),)),
        Workload("top_k", "top 16 of 1024 x 4096", top_k, lambda r: (normal(r, 1024, 4096),)),
        Workload("softmax", "softmax 4096x2048", softmax, lambda r: (normal(r, 4096, 2048),)),
        Workload("layernorm", "layernorm 4096x1024", layernorm,
                 lambda r: (normal(r, 4096, 1024), normal(r, 1024), normal(r, 1024))),
        Workload("arith", "mul/add chain, 8M", arith,
                 lambda r: (normal(r, 8 * 1024 * 1024), normal(r, 8 * 1024 * 1024))),
        Workload("matvec", "dot 4096x4096 @ 4096", matvec,
                 lambda r: (normal(r, 4096, 4096), normal(r, 4096))),
        Workload("cumsum", "cumsum 1024 x 4096", cumsum, lambda r: (normal(r, 1024, 4096),)),
        Workload("scan_rnn", "scan 128 x (dot 64x256^2 + tanh)", scan_rnn,
                 lambda r: (normal(r, 128, 64, 256), normal(r, 256, 256) * 0.06)),
        Workload("concat_pad", "concatenate + pad 2048x2048", concat_pad,
                 lambda r: (normal(r, 2048, 1024), normal(r, 2048, 1024))),
        Workload("random_normal", "threefry normal 1M", random_normal,
                 lambda r: (np.array([0, 42], dtype=np.uint32),)),
        Workload("depthwise_conv", "depthwise 3x3, 8x64x64x64", depthwise,
                 lambda r: (normal(r, 8, 64, 64, 64), normal(r, 3, 3, 1, 64))),
        Workload("segment_sum", "segment_sum 256K x 32 -> 4096", segment_sum,
                 lambda r: (normal(r, 262144, 32), r.integers(0, 4096, 262144).astype(np.int32))),
        Workload("int8_matmul", "dot 1024^3 s8 -> s32", int8_matmul,
                 lambda r: (r.integers(-128, 128, (1024, 1024)).astype(np.int8),
                            r.integers(-128, 128, (1024, 1024)).astype(np.int8))),
        Workload("conv_transpose", "conv_transpose 3x3 s2, 8x32x32x64", conv_transpose,
                 lambda r: (normal(r, 8, 32, 32, 64), normal(r, 3, 3, 64, 32) * 0.1)),
        Workload("fft2", "fft2 1024x1024", fft2, lambda r: (normal(r, 1024, 1024),)),
        Workload("kv_decode", "decode step, 8 x 2048-token cache", kv_decode,
                 lambda r: (normal(r, 8, 1024), normal(r, 8, 2048, 16, 64), normal(r, 8, 2048, 16, 64),
                            np.int32(1000), *(normal(r, 1024, 1024) * 0.03 for _ in range(4)),
                            normal(r, 1024, 4096) * 0.03, normal(r, 4096, 1024) * 0.03)),
    ]


FAMILY = {
    "matmul_f32": "matmul", "batched_matmul": "matmul", "matmul_bf16": "matmul", "matmul_f64": "matmul",
    "matvec": "matmul", "conv_net": "conv", "depthwise_conv": "conv", "mlp_train_step": "model",
    "attention": "model", "elementwise": "elementwise", "arith": "elementwise",
    "random_normal": "elementwise", "concat_pad": "elementwise", "reductions": "reduction",
    "cumsum": "reduction", "transpose_copy": "transpose", "transpose_scale": "transpose", "fori_loop": "loop", "scan_rnn": "loop",
    "sort": "sort", "argsort": "sort", "top_k": "sort", "gather_scatter": "gather/scatter",
    "gather_rows": "gather/scatter", "scatter_add": "gather/scatter", "embedding_grad": "gather/scatter",
    "softmax_layernorm": "softmax/norm", "softmax": "softmax/norm", "layernorm": "softmax/norm",
    "segment_sum": "gather/scatter", "int8_matmul": "matmul", "conv_transpose": "conv", "fft2": "fft",
    "kv_decode": "model", "gpt_dp8": "models tier", "gpt_bf16_remat": "models tier",
    "resnet_1": "models tier", "lstm_scan": "models tier", "vit_pmap8": "models tier",
}


@dataclass(frozen=True)
class Row:
    name: str
    character: str
    measured: float
    estimated: float
    runs: int

    @property
    def family(self) -> str:
        return FAMILY.get(self.name, "other")

    @property
    def error(self) -> float:
        return (self.estimated - self.measured) / self.measured


def _best_time(fn: Callable[[], Any], budget: float, clock: Callable[[], float],
               min_runs: int = 3, max_runs: int = 200) -> tuple[float, int]:
    """Time of ``fn()`` by ``clock`` over at least ``min_runs`` samples, more while within budget:
    the best wall time, or the median CPU time over samples that each span enough calls to make
    a scheduler tick's error small (as ``hloscope.xla.calibrate`` times its kernels)."""
    from hloscope.xla.calibrate import CPU_SAMPLE_SECONDS

    t0 = time.perf_counter()
    fn()  # warm up: first-run allocations, thread-pool start
    per_sample = 1
    if clock is time.process_time:
        per_sample = max(1, math.ceil(CPU_SAMPLE_SECONDS / max(time.perf_counter() - t0, 1e-6)))
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - start < budget and len(times) < max_runs):
        t0 = clock()
        for _ in range(per_sample):
            fn()
        times.append((clock() - t0) / per_sample)
    return (statistics.median(times) if clock is time.process_time else min(times)), len(times) * per_sample


@dataclass
class Compiled:
    """One workload compiled by jax, with its arguments on the device and its optimized text.

    ``fresh_run()`` puts the arguments on the device anew and returns a run on those: each
    round times the workload on buffers of its own, as the calibration's kernels get theirs.
    The same memory-bound loop ran at 12 GB/s on one set of buffers and 24 on another here
    (where the pages landed), so one set for the whole benchmark made a workload's time a
    single draw, which the median over rounds could not even out.
    """

    workload: Workload
    run: Callable[[], Any]
    text: str
    fresh_run: Callable[[], Callable[[], Any]]


def compile_workload(w: Workload) -> Compiled:
    import jax

    host = w.args(np.random.default_rng(0))
    args = tuple(jax.device_put(a) for a in host)
    compiled = jax.jit(w.fn).lower(*args).compile()

    def fresh_run() -> Callable[[], Any]:
        fresh = tuple(jax.device_put(a) for a in host)
        return lambda: jax.block_until_ready(compiled(*fresh))

    return Compiled(w, lambda: jax.block_until_ready(compiled(*args)), compiled.as_text(), fresh_run)


def combined_profile(profiles: list[Any], pick: Callable[[list[float]], float]) -> Any:
    """One profile from several calibrations of one machine, each rate ``pick``ed over them:
    by wall time the fastest (``max``: every measurement is slowed by whatever else runs, and
    the best one is the least disturbed); by CPU time the ``median`` (load does not slow CPU
    time, so the rounds differ by noise, and one lucky or unlucky kernel should not decide)."""
    import dataclasses

    first = profiles[0]
    rates = {f: pick([getattr(hw.cpu_rates, f) for hw in profiles]) for f in first.cpu_rates.to_json()}
    return dataclasses.replace(
        first, peak_flops={k: pick([hw.peak_flops[k] for hw in profiles]) for k in first.peak_flops},
        memory_bandwidth=pick([hw.memory_bandwidth for hw in profiles]),
        cpu_rates=dataclasses.replace(first.cpu_rates, **rates))


def _use_cores(cores: int) -> None:
    """Run this process (XLA:CPU's thread pool included) on its first ``cores`` cores.

    Note [One core for CPU time]
        XLA:CPU splits a large loop into one partition per core (``outer_dimension_partitions``)
        and runs them on its thread pool. A memory-bound loop is no faster on two threads of a
        2-core machine, but its CPU time doubles when the other core happens to be free and
        not when another process holds it: the same 6 Mi-element add measured 4.7 ms of CPU
        time in one process and 11 ms in the next. On one core XLA compiles no partitions
        (it sizes its pool by the cores the process may use, so this must run before jax
        starts) and a thunk's CPU time is its work, whatever the other processes do.
    """
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cores])


def _steady_allocator() -> None:
    """Make glibc reuse freed memory: one heap, no mappings of their own for large blocks, no trim.

    Note [Fresh pages, made steady]
        A buffer on pages the process has not touched since they were mapped pays a page fault
        per 4 KiB page at its first write: here 8193 faults and 10-12 ms of system time per
        run of a 32 MiB result, as long as the loop that writes it. With glibc's defaults,
        whether a run gets fresh pages depends on the process's history, not on the program:
        its mmap threshold starts at 128 KiB and rises to each freed mapping's size (up to
        32 MiB), it trims its heap's free top past twice that, and a large request is served
        from a free chunk of the heap when one fits before any threshold is consulted. So the
        same 16 MiB layernorm measured 2 ms in one process and 8 ms in the next, and a
        calibration kernel with a 32 MiB result faulted in one process and not in another.
        Fixing only the mmap threshold still left that last case to chance. With no mappings
        of their own, no trimming and one arena, every run after the first reuses its
        buffers (0 faults counted per run for softmax, layernorm, mul/add and the batched
        matmul), the steady state of a process that runs a step many times; the calibration
        then measures no fresh-page cost (``CpuRates.fresh_page_bandwidth``) and the estimate
        charges none. ``--dynamic-malloc`` keeps glibc's defaults.
    """
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return  # not glibc: its own allocator decides
    m_trim_threshold, m_mmap_max, m_arena_max = -1, -4, -8  # glibc's malloc.h
    libc.mallopt(m_arena_max, 1)  # before any thread allocates
    libc.mallopt(m_mmap_max, 0)
    libc.mallopt(m_trim_threshold, 2**31 - 1)  # an int: the largest, never trim


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calibrate-seconds", type=float, default=4.0)
    parser.add_argument("--budget", type=float, default=0.3, help="seconds of timing per workload and round")
    parser.add_argument("--rounds", type=int, default=5,
                        help="calibrate and time every workload this many times; the median (by CPU "
                             "time) or best (by wall time) of each kept")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="time calibration and workloads by process CPU time (default: a shared "
                             "machine's load does not inflate it) or wall time")
    parser.add_argument("--cores", type=int, default=1,
                        help="run XLA:CPU on this many of the process's cores (default 1; 0: all). "
                             "Note [One core for CPU time]")
    parser.add_argument("--dynamic-malloc", action="store_true",
                        help="leave glibc's allocator thresholds dynamic (Note [Fresh pages, made steady])")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--no-models", action="store_true",
                        help="leave out the models tier's training steps (hloscope.testing.models)")
    parser.add_argument("--export-models", default="", help=argparse.SUPPRESS)  # the child of _model_workloads
    parser.add_argument("--export-dir", default="", help=argparse.SUPPRESS)
    parser.add_argument("--hardware", default="", help="a profile name or path instead of calibrating")
    parser.add_argument("--save-hardware", default="", help="write the calibrated profile to this path")
    parser.add_argument("--top", type=int, default=0, help="print the N longest estimated ops per workload")
    parser.add_argument("--save-measurements", default="", metavar="DIR",
                        help="write every workload's module text, its measured time and the profile "
                             "into DIR, for --replay")
    parser.add_argument("--replay", default="", metavar="DIR",
                        help="estimate the modules saved in DIR against their saved times and profile: "
                             "no jax, no timing (to try a change to the estimate in seconds)")
    parser.add_argument("--thunks", type=int, default=0, metavar="N",
                        help="also time every thunk of each workload with jax's profiler and print, per "
                             "kind of thunk, its measured and estimated time, then the N thunks the "
                             "estimate misses most (kept by --save-measurements, shown by --replay)")
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args(argv)
    if opts.replay:
        saved, hw = _load_measurements(opts.replay)
        wanted = {n for n in opts.only.split(",") if n}
        return _report(opts, [w for w in saved if not wanted or w.name in wanted], hw)
    if opts.cores > 0:
        _use_cores(opts.cores)
    if not opts.dynamic_malloc:
        _steady_allocator()
    if opts.export_models:
        export_models(opts.export_models.split(","), opts.export_dir)
        return 0
    wanted = {n for n in opts.only.split(",") if n}
    models = [] if opts.no_models else [n for n in MODELS if not wanted or n in wanted]

    from hloscope.analysis.hardware import load_hardware, save_hardware
    from hloscope.xla.calibrate import CLOCKS, calibrate

    work = [compile_workload(w) for w in _workloads() if not wanted or w.name in wanted]
    work += _model_workloads(models)
    profiles = []
    measured: dict[str, list[float]] = {}
    runs: dict[str, int] = {}
    for k in range(max(1, opts.rounds)):
        t0 = time.perf_counter()
        if not opts.hardware:
            profiles.append(calibrate(opts.calibrate_seconds, clock=opts.clock))
        print(f"round {k + 1}: calibrated in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        for c in work:
            seconds, n = _best_time(c.fresh_run(), opts.budget, CLOCKS[opts.clock])
            measured.setdefault(c.workload.name, []).append(seconds)
            runs[c.workload.name] = runs.get(c.workload.name, 0) + n
    # Wall time: the fastest of each figure; CPU time: the median over the rounds.
    pick: Callable[[list[float]], float] = statistics.median if opts.clock == "cpu" else max
    hw = load_hardware(opts.hardware) if opts.hardware else combined_profile(profiles, pick)
    fastest: Callable[[list[float]], float] = statistics.median if opts.clock == "cpu" else min
    print(json.dumps(hw.to_json(), indent=1), file=sys.stderr)
    if opts.save_hardware:
        save_hardware(hw, opts.save_hardware)
    saved = [Saved(c.workload.name, c.workload.character, c.text, fastest(measured[c.workload.name]),
                   runs[c.workload.name], profile_thunks(c.fresh_run()) if opts.thunks else {}) for c in work]
    if opts.save_measurements:
        _save_measurements(opts.save_measurements, saved, hw)
    return _report(opts, saved, hw)


@dataclass(frozen=True)
class Saved:
    """One workload as measured: its optimized module text and XLA:CPU's time for it."""

    name: str
    character: str
    text: str
    measured: float
    runs: int
    thunk_seconds: dict[str, float]  # jax's profiler: seconds per run of each thunk (--thunks)


# XLA:CPU's profiler events that are not one thunk's execution.
_NOT_THUNK_EVENTS = ("end: ", "ThunkExecutor", "ThreadpoolListener")


def profile_thunks(run: Callable[[], Any], runs: int = 20) -> dict[str, float]:
    """Seconds per run of each thunk of ``run``'s executable, by instruction name, from jax's
    profiler (the events XLA:CPU's thunk executor records on its threads). Each event costs
    the profiler a fraction of a microsecond, so the smallest thunks read a little long."""
    import glob
    import tempfile

    import jax

    run()
    with tempfile.TemporaryDirectory(prefix="hloscope-thunks-") as log_dir:
        jax.profiler.start_trace(log_dir)
        for _ in range(runs):
            run()
        jax.profiler.stop_trace()
        (path,) = glob.glob(f"{log_dir}/**/*.xplane.pb", recursive=True)
        data = jax.profiler.ProfileData.from_file(path)
    totals: dict[str, float] = {}
    for plane in data.planes:
        for line in plane.lines:
            if "XLAEigen" not in line.name and "PjRtCpuClient" not in line.name:
                continue
            for event in line.events:
                if not event.name.startswith(_NOT_THUNK_EVENTS):
                    totals[event.name] = totals.get(event.name, 0.0) + event.duration_ns * 1e-9 / runs
    return totals


def _thunk_kind(inst: Any) -> str:
    """A thunk's kind for the --thunks table: library (YNNPACK) fusions, XLA's loops by what
    they do, and other opcodes by name."""
    from hloscope.analysis.cpu_model import is_library_fusion
    from hloscope.ir import Opcode

    if inst.opcode is not Opcode.FUSION:
        return inst.opcode.text
    if is_library_fusion(inst):
        return "library fusion"
    ops = {i.opcode for i in inst.attrs["calls"].instructions}
    for opcode, kind in ((Opcode.SCATTER, "scatter"), (Opcode.GATHER, "gather"), (Opcode.SORT, "sort"),
                         (Opcode.REDUCE_WINDOW, "reduce-window"), (Opcode.REDUCE, "reduce"),
                         (Opcode.DYNAMIC_UPDATE_SLICE, "dynamic-update-slice"),
                         (Opcode.CONVOLUTION, "convolution"), (Opcode.DOT, "dot")):
        if opcode in ops:
            return f"{kind} loop"
    if ops & {Opcode.TRANSPOSE, Opcode.COPY}:
        return "copy/transpose loop"
    return "elementwise loop"


def _print_thunks(w: Saved, est: Any, module: Any, top: int) -> None:
    """Per kind of thunk: measured (jax's profiler) against estimated seconds per run, then the
    ``top`` thunks whose estimate is furthest from their measured time."""
    from hloscope.ir import Opcode

    by_name = {i.name: i for c in module.computations for i in c.instructions}
    control = (Opcode.WHILE, Opcode.CALL, Opcode.CONDITIONAL, Opcode.ASYNC_START)
    rows = []
    for name, t in est.per_instruction.items():
        inst = by_name.get(name)
        if inst is None or inst.opcode in control or name not in w.thunk_seconds:
            continue
        rows.append((name, _thunk_kind(inst), w.thunk_seconds[name], t.seconds))
    kinds: dict[str, list[float]] = {}
    for _, kind, m, e in rows:
        k = kinds.setdefault(kind, [0.0, 0.0, 0])
        k[0] += m
        k[1] += e
        k[2] += 1
    inside = sum(r[2] for r in rows)
    print(f"  {w.name}: {len(rows)} thunks, {inside * 1e3:.3f} ms measured inside them of "
          f"{w.measured * 1e3:.3f} ms ({w.measured and inside / w.measured:.0%}), "
          f"{sum(r[3] for r in rows) * 1e3:.3f} ms estimated for them", file=sys.stderr)
    for kind, (m, e, n) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        print(f"    {kind:<22} x{n:<5} measured {m * 1e3:8.3f} ms  estimated {e * 1e3:8.3f} ms", file=sys.stderr)
    for name, kind, m, e in sorted(rows, key=lambda r: -abs(r[2] - r[3]))[:top]:
        print(f"      {name:<36} {kind:<22} measured {m * 1e6:9.1f} us  estimated {e * 1e6:9.1f} us", file=sys.stderr)


def _save_measurements(directory: str, saved: list[Saved], hw: Any) -> None:
    from pathlib import Path

    from hloscope.analysis.hardware import save_hardware

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for s in saved:
        (out / f"{s.name}.hlo").write_text(s.text)
    (out / "measurements.json").write_text(json.dumps(
        [{"workload": s.name, "character": s.character, "measured_s": s.measured, "runs": s.runs,
          "thunk_seconds": s.thunk_seconds} for s in saved], indent=1))
    save_hardware(hw, str(out / "hardware.json"))


def _load_measurements(directory: str) -> tuple[list[Saved], Any]:
    from pathlib import Path

    from hloscope.analysis.hardware import load_hardware

    root = Path(directory)
    rows = json.loads((root / "measurements.json").read_text())
    saved = [Saved(r["workload"], r["character"], (root / f"{r['workload']}.hlo").read_text(),
                   r["measured_s"], r["runs"], r.get("thunk_seconds", {})) for r in rows]
    return saved, load_hardware(str(root / "hardware.json"))


def _report(opts: argparse.Namespace, saved: list[Saved], hw: Any) -> int:
    import hloscope
    from hloscope.analysis.timing import estimate_time

    rows: list[Row] = []
    for w in saved:
        module = hloscope.parse(w.text)
        est = estimate_time(module, hw)
        rows.append(Row(w.name, w.character, w.measured, est.total_seconds, w.runs))
        if opts.thunks and w.thunk_seconds:
            _print_thunks(w, est, module, opts.thunks)
        if opts.top:
            for op in est.to_json(top=opts.top)["longest"]:
                print(f"    {w.name}: {op['opcode']:<14} {op['seconds'] * 1e3:8.3f} ms  {op['instruction']}",
                      file=sys.stderr)
    errors = [abs(r.error) for r in rows]
    median = statistics.median(errors) if rows else 0.0
    worst = max(rows, key=lambda r: abs(r.error)) if rows else None
    families: dict[str, list[float]] = {}
    for r in rows:
        families.setdefault(r.family, []).append(r.error)
    if opts.json:
        print(json.dumps({
            "hardware": hw.to_json(),
            "rows": [{"workload": r.name, "family": r.family, "measured_s": r.measured,
                      "estimated_s": r.estimated, "error": r.error, "runs": r.runs} for r in rows],
            "median_abs_error": median, "worst_abs_error": abs(worst.error) if worst else 0.0,
            "families": {f: statistics.median(abs(e) for e in es) for f, es in families.items()},
        }, indent=1))
        return 0
    print(f"{'workload':<18} {'family':<15} {'character':<34} {'measured':>10} {'estimated':>10} {'error':>8}")
    for r in rows:
        print(f"{r.name:<18} {r.family:<15} {r.character:<34} {r.measured * 1e3:8.2f}ms "
              f"{r.estimated * 1e3:8.2f}ms {r.error * 100:+7.1f}%")
    for f, es in sorted(families.items()):
        print(f"  {f:<15} median |error| {statistics.median(abs(e) for e in es) * 100:5.1f}%  "
              f"({', '.join(f'{e * 100:+.0f}%' for e in es)})")
    if worst is not None:
        print(f"median |error|: {median * 100:.1f}%, worst: {worst.error * 100:+.1f}% ({worst.name}) "
              f"over {len(rows)} workloads")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

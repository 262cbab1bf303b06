"""Scaling: every command's time and peak memory on LLM-scale modules, at 1x, 10x and 100x size.

The modules:

* ``llama-pre`` / ``llama-post``: a Llama-style training step (decoder layers with attention,
  rotary embeddings, RMSNorm and SwiGLU; loss, gradients and an SGD update) written in jax here,
  sharded over 8 devices (4-way data x 2-way model parallel,
  ``XLA_FLAGS=--xla_force_host_platform_device_count=8``), before and after XLA:CPU's
  optimization. ``--layers`` (default 72) makes the unoptimized module 30k+ instructions.
* XLA's own benchmark modules, when a local copy is given (``--xla-dir``, ``--xla-modules``).
* any HLO file given with ``--hlo`` (the test suite's smoke run uses a small seed).

Each module is also built at 10x and 100x its size: its computations are copied under new
names (every computation and instruction renamed ``<name>.x<k>``), and a new entry calls the
k copies of the old entry one after another and returns their results as a tuple, so every
command (cost, memory, collectives, ...) does k times the work of the original.

Every command runs as its own child process (as a user runs it); the table shows the child's
time for the work (the command itself, file reading included, imports excluded) in wall and CPU
seconds, the child's whole wall time (interpreter start and imports too), and its peak RSS
(``VmHWM`` read by the child: ``wait4``'s ``ru_maxrss`` would carry over the parent's RSS from
before the exec). Ratios (to XLA, and growth with size) use CPU seconds, which a busy shared
machine disturbs far less than wall time; ``sys s`` is the kernel's part of them, page faults
mostly (on this VM fresh memory costs more per GB the larger the process: 1.5-2.1 us per 4 KB
page touching 1 GB, 3.0-6.7 us touching 10 GB, measured with plain ``mmap``). Where XLA does the same work it runs in the same
run, also as a child: ``load`` against XLA's parser (``hloscope.xla.client.parse_hlo_text``),
``print`` against XLA's parse and ``to_string``, ``cost`` against XLA's ``HloCostAnalysis``
(``hloscope.xla.client.cost_analysis``), and ``memory`` against XLA:CPU's compilation
(buffer assignment is one of its passes; only the unoptimized jax module, which XLA:CPU
compiles as it is). Then the growth per command: time and RSS from 1x to 10x and 10x to 100x
(a linear command grows 10x; the 1x figure holds fixed costs, so it grows less).

A child whose RSS passes ``--rss-limit-gb`` (default 4) is stopped; at 100x a command whose
RSS extrapolated from 1x and 10x passes the limit is skipped with a message instead.
The machine is shared: compare ratios taken in the same run, not figures across runs.

Measured 2026-11-25 on the shared 2-core machine (load average 11-13, so wall times were 2-10x
the CPU times), XLA's Llama 3.1 8B module (31,855 instructions, 3.0 MB; 10x 32.6 MB; 100x
333 MB, 3.2M instructions), CPU seconds at 1x / 10x / 100x and peak RSS at 100x:

    load 0.15 / 1.49 / 13.9 (3.2 GB)   summary 0.31 / 2.38 / 22.9     verify 0.55 / 5.62 / 53.9
    cost 0.50 / 4.44 / 44.3            collectives 1.20 / 12.3 / 117  estimate 0.67 / 6.24 / 61.4 (3.8 GB)
    graph 0.23 / 2.01 / 17.2           print 0.35 / 3.29 / 29.4

Every step grew 7.7x-10.2x in time and at most 9.4x in RSS. XLA at 1x: parse 0.15, print
0.19, cost analysis 0.19 CPU s; at 100x its RSS extrapolates past 4 GB and it is skipped.

Measured again later that day on a quiet machine (load average 1), 1x / 10x, CPU seconds of the
work (RSS at 10x): load 0.12 / 1.10, summary 0.23 / 1.92, verify 0.45 / 4.78, cost 0.39 / 3.94,
collectives 0.25 / 2.30, estimate 0.59 / 5.43, memory --explain 1.91 / 17.5 (1.3 GB), graph
0.17 / 1.71, diff 1.88 / 19.6 (1.7 GB), print 0.26 / 2.67, report 4.82 / 44.1 (2.0 GB): growth
8.5-10.7x in time, 5.1-8.5x in RSS. ``memory`` at 100x, run once with ``--rss-limit-gb 16``:
about 200 s CPU and 14.1 GB, 13x its 10x time: the scaled module's copies let each copy's
temporaries join later copies' outputs, so the work itself grows faster than the text (reuse
tries 4.8 k / 253 k / 3.1 M at 1x / 10x / 100x), and each try costs more in a 14 GB working
set (interference bitsets split into blocks of 4,096 allocations changed nothing measurable).

2026-11-28, a slower day on this VM (the code of 2026-11-25 took memory 2.36 s and report
5.87 s at 1x, run side by side): after the interference index went to one tree, bytearray
bitsets read from the top and leaner memory, ``memory`` took 2.29 / 18.9 / 248 s CPU at 1x / 10x
/ 100x and 139 MB / 1.02 GB / 10.0 GB (the first run that morning, with only the first of these
changes, took 270 s and 14.2 GB at 100x): 13.1x from 10x to 100x in time, 9.8x in RSS. Of the
100x time about 27 s is system time for page faults (``/usr/bin/time``: 0.8 s for 308 k faults
at 10x, 26.7 s for 3.64 M at 100x: a fault costs about 3x more in a 10 GB process on this VM);
the assignment's user time still grows about 17x where its operations grow 12.5x. Run again
after the report's per-value rows went lazy: 2.73 / 20.0 / 251 s, 12.5x (this VM's runs differ
by up to 20% at 1x, so growth figures come from one run each).

Later on 2026-11-28, after resuming the collector without walking everything the analysis had
allocated (``gc_pause.py``), a leaner heap simulation and interference windows growing by half
instead of fourfold: ``memory`` 1.81 / 14.7 / 179 s CPU and 135 MB / 998 MB / 9.97 GB at 1x /
10x / 100x; from 10x to 100x 11.3x, 11.5x and 12.2x in three runs (the 100x time held at
175-179 s, the 10x one moved between 14.7 and 15.9 s). At 1x: load 0.14 (XLA 0.15), summary
0.24, verify 0.49, cost 0.42, collectives 0.26, estimate 0.64, graph 0.17, diff 2.07, print
0.28, report 3.20 (it no longer runs the memory analysis twice); from 1x to 10x every command
grew 7.5-10.0x in time and 5.0-8.2x in RSS.

Later on 2026-11-28 (session 9), with the reuse search skipping members busy till the end
(Note [Skipping what stays busy]), spans kept by line in the parser and shape texts shared in
``diff``; one run of everything, CPU s at 1x / 10x / 100x (sys s at 100x): load 0.14 / 1.30 /
13.1 (XLA's parser 0.16 / 1.93 / 23.2), summary 0.23 / 1.71 / 16.9, verify 0.51 / 4.86 / 48.5,
cost 0.40 / 3.71 / 37.1, collectives 0.25 / 2.04 / 19.7, estimate 0.64 / 5.44 / 55.3, memory
1.79 / 14.6 / 162 (22.9), graph 0.16 / 1.33 / 13.0, diff 1.82 / 17.7 / 215 (40.7), print 0.28 /
2.63 / 27.7, report 3.25 / 28.8 / 326 (44.9). From 10x to 100x: 9.7-11.3x, but diff 12.2x
(11.8x in a second run, 11.9x before the shared shape texts): its user time grows 10.5x, its
system time 40-fold (1.0 s at 10x; 15 GB of fresh memory at 100x). Earlier runs of memory that
day: 11.5x twice.

Later on 2026-11-28 (session 10), with lean dataflow values (Note [Lean values]: what the
live-range analysis holds at 10x 458 -> 198 MB), no copy of the file's bytes while parsing, and
the diff's matching keyed by instruction: one run of everything, CPU s at 1x / 10x / 100x (sys s
at 100x): load 0.18 / 1.25 / 12.7 (XLA's parser 0.16 / 1.96 / 24.3), summary 0.22 / 1.68 /
16.5, verify 0.49 / 4.97 / 47.7, cost 0.40 / 3.64 / 36.1, collectives 0.25 / 1.96 / 19.2,
estimate 0.69 / 5.32 / 54.4, memory 1.67 / 12.9 / 144 (14.3; 7.2 GB), graph 0.16 / 1.26 /
13.1, diff 1.61 / 15.2 / 180 (24.2; 9.6 GB, 15.1 GB before), print 0.27 / 2.75 / 26.4, report
3.16 / 27.8 / 312 (39.3). From 10x to 100x 9.6-11.8x (diff 11.8x, memory and report 11.2x);
a second run of diff and memory: 15.5 -> 177 s (11.4x) and 13.2 -> 141 s (10.7x). Then, with
the CPU time estimate reading allocation summaries instead of the whole buffer assignment,
report 2.92 / 24.7 / 284 s (sys 36.9 at 100x; 11.7 GB): 11.5x.

Run: ``python benchmarks/scale.py`` (everything: long), or pick, e.g.
``python benchmarks/scale.py --modules llama-pre --sizes 1,10 --commands summary,cost``;
``--xla-dir /work/xla_bench --xla-modules hlo_llama31_8b_bf16_1x8.hlo --modules none``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ["load", "summary", "verify", "cost", "collectives", "estimate", "memory", "graph", "diff",
            "print", "report"]
# Our command -> the XLA child doing the same work.
XLA_TWIN = {"load": "xla-parse", "print": "xla-print", "cost": "xla-cost", "memory": "xla-compile"}
MARK = "QxKQ"  # stands for the copy number in the copy template; checked absent from the text


# --------------------------------------------------------------------------------------------
# Children: each times its own work and writes {"work": seconds} to the file named last.

def _child(kind: str, argv: list[str], out: str) -> int:
    s0 = os.times().system
    c_children = os.times().children_user + os.times().children_system
    if kind == "hloscope":
        from hloscope.cli.main import build_parser, main

        build_parser()  # imports every command module before the clock starts
        with open(os.devnull, "w") as devnull:
            saved = sys.stdout
            sys.stdout = devnull
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                code = main(argv)
            finally:
                sys.stdout = saved
        work, cpu = time.perf_counter() - t0, time.process_time() - c0
    elif kind == "load":
        import hloscope as hs

        t0, c0 = time.perf_counter(), time.process_time()
        hs.load(argv[0])
        work, cpu, code = time.perf_counter() - t0, time.process_time() - c0, 0
    else:
        from hloscope.xla import client

        client.jaxlib_api()
        t0, c0 = time.perf_counter(), time.process_time()
        text = Path(argv[0]).read_text()
        if kind == "xla-parse":
            client.parse_hlo_text(text)
        elif kind == "xla-print":
            client.parse_hlo_text(text).to_string()
        elif kind == "xla-cost":
            client.cost_analysis(text)
        elif kind == "xla-compile":
            client.compile_hlo(text)
        else:
            raise SystemExit(f"unknown child kind {kind}")
        work, cpu, code = time.perf_counter() - t0, time.process_time() - c0, 0
    times = os.times()
    # A report forks a child for its memory step when a second CPU is free (Note [Memory beside
    # the rest] in report/background.py): its CPU time counts, and its peak RSS is added to ours
    # (an upper bound: the pages it shares with us are counted twice).
    cpu += times.children_user + times.children_system - c_children
    system = times.system + times.children_system - s0  # (imports before the clock are a few ms of it)
    import resource

    rss = _peak_rss_self() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    Path(out).write_text(json.dumps({"work": work, "cpu": cpu, "sys": system, "code": code, "rss": rss}))
    return 0


@dataclass
class Figure:
    work: float | None = None  # seconds of work inside the child
    cpu: float | None = None  # CPU seconds of that work (steadier than wall time on a busy machine)
    sys: float | None = None  # the kernel's part of them (page faults, mostly)
    wall: float | None = None  # seconds for the whole child (interpreter start and imports too)
    rss: int | None = None  # peak RSS, bytes
    note: str = ""


def run_child(kind: str, argv: list[str], *, rss_limit: int, timeout: float, env: dict[str, str]) -> Figure:
    """Run one child, polling its RSS (stopped past ``rss_limit``); its time and peak RSS."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, *argv, out]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    note = ""
    peak = 0
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        rss = _current_rss(proc.pid)
        peak = max(peak, rss)
        if rss > rss_limit:
            proc.kill()
            note = f"stopped at {rss / 2**30:.1f} GB RSS (limit {rss_limit / 2**30:.1f} GB)"
        elif time.perf_counter() - t0 > timeout:
            proc.kill()
            note = f"stopped after {timeout:.0f} s"
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    fig = Figure(wall=wall, rss=max(peak, ru.ru_maxrss * 1024) if note else None, note=note)
    try:
        data = json.loads(Path(out).read_text() or "{}")
    except (OSError, ValueError):
        data = {}
    os.unlink(out)
    if "work" in data and not note:
        fig.work = data["work"]
        fig.rss = data.get("rss") or fig.rss
        fig.cpu = data.get("cpu")
        fig.sys = data.get("sys")
        if data.get("code") not in (0, 3):  # 3: verification found problems (still a full run)
            fig.note = f"exit code {data['code']}"
    elif not note:
        last = err.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        fig.note = f"failed: {last[0][:100]}"
    return fig


def _peak_rss_self() -> int:
    # Not getrusage: its ru_maxrss carries over the parent's RSS from before the exec.
    return _current_rss("self", "VmHWM:")


def _current_rss(pid: int | str, field: str = "VmRSS:") -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# --------------------------------------------------------------------------------------------
# Modules

def llama_modules(layers: int, work: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """The jax Llama training step's HLO before and after optimization (cached in ``work``)."""
    pre, post = work / f"llama{layers}_pre.hlo", work / f"llama{layers}_post.hlo"
    if not (pre.exists() and post.exists()):
        print(f"# generating the jax Llama training step ({layers} layers) ...", flush=True)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "jax-llama",
                        str(layers), str(pre), str(post), "-"], check=True, env=env)
        print(f"# generated in {time.perf_counter() - t0:.1f} s", flush=True)
    return pre, post


def _jax_llama(layers: int, pre_path: str, post_path: str) -> None:
    """Lower and compile the training step; write both texts and XLA's compile time."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    d, heads, kv_heads, hd, ffn, seq, batch, vocab = 256, 8, 4, 32, 512, 64, 8, 1024

    def rms_norm(x, w):
        return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * w

    def rotary(x):
        inv = 1.0 / (10000 ** (jnp.arange(0, hd, 2) / hd))
        angle = jnp.arange(seq)[:, None] * inv[None]
        cos, sin = jnp.cos(angle)[None, :, None], jnp.sin(angle)[None, :, None]
        x1, x2 = x[..., ::2], x[..., 1::2]
        return jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).reshape(x.shape)

    def decoder_layer(x, p):
        h = rms_norm(x, p["n1"])
        q = rotary((h @ p["wq"]).reshape(batch, seq, heads, hd))
        k = rotary((h @ p["wk"]).reshape(batch, seq, kv_heads, hd))
        v = (h @ p["wv"]).reshape(batch, seq, kv_heads, hd)
        k, v = jnp.repeat(k, heads // kv_heads, 2), jnp.repeat(v, heads // kv_heads, 2)
        a = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(hd)
        a = jax.nn.softmax(jnp.where(jnp.tril(jnp.ones((seq, seq), bool)), a, -1e9), -1)
        x = x + jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(batch, seq, heads * hd) @ p["wo"]
        h = rms_norm(x, p["n2"])
        return x + (jax.nn.silu(h @ p["w1"]) * (h @ p["w3"])) @ p["w2"]

    def loss(params, tokens, targets):
        x = params["emb"][tokens]
        for p in params["layers"]:
            x = decoder_layer(x, p)
        logits = rms_norm(x, params["nf"]) @ params["out"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), targets[..., None], -1))

    def train_step(params, tokens, targets):
        value, grads = jax.value_and_grad(loss)(params, tokens, targets)
        return value, jax.tree_util.tree_map(lambda w, g: w - 1e-3 * g, params, grads)

    mesh = Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("data", "model"))
    layer_shapes = {"n1": ((d,), P()), "n2": ((d,), P()),
                    "wq": ((d, heads * hd), P(None, "model")), "wk": ((d, kv_heads * hd), P(None, "model")),
                    "wv": ((d, kv_heads * hd), P(None, "model")), "wo": ((heads * hd, d), P("model", None)),
                    "w1": ((d, ffn), P(None, "model")), "w3": ((d, ffn), P(None, "model")),
                    "w2": ((ffn, d), P("model", None))}
    top = {"emb": ((vocab, d), P()), "nf": ((d,), P()), "out": ((d, vocab), P(None, "model"))}

    def tree(pick):
        out = {k: pick(*v) for k, v in top.items()}
        out["layers"] = [{k: pick(*v) for k, v in layer_shapes.items()} for _ in range(layers)]
        return out

    abstract = tree(lambda s, _: jax.ShapeDtypeStruct(s, jnp.float32))
    shardings = tree(lambda _, spec: NamedSharding(mesh, spec))
    tokens = NamedSharding(mesh, P("data"))
    lowered = jax.jit(train_step, in_shardings=(shardings, tokens, tokens),
                      out_shardings=(NamedSharding(mesh, P()), shardings)).lower(
        abstract, jax.ShapeDtypeStruct((batch, seq), jnp.int32), jax.ShapeDtypeStruct((batch, seq), jnp.int32))
    Path(pre_path).write_text(lowered.as_text(dialect="hlo"))
    Path(post_path).write_text(lowered.compile().as_text())


@dataclass
class Scaled:
    """A module file at one size, with an instruction for ``graph --around``."""

    path: Path
    around: str
    computation: str
    instructions: int
    mb: float


def scaled(src: Path, k: int, work: Path) -> Scaled:
    """``src`` at ``k`` times its size (cached in ``work``; see the module docstring)."""
    path = src if k == 1 else work / f"{src.stem}.x{k}.hlo"
    side = work / f"{src.stem}.x{k}.json"
    if side.exists() and path.exists():
        return Scaled(path, **json.loads(side.read_text()))
    import hloscope as hs
    from hloscope.ir.opcode import Opcode

    module = hs.load(src)
    entry = module.entry
    pick = next((i for i in entry.instructions if i.opcode is Opcode.DOT), entry.root)
    entry_name, pick_name = entry.name, pick.name
    if k == 1:
        info = {"around": pick.name, "computation": entry.name,
                "instructions": module.instruction_count, "mb": src.stat().st_size / 1e6}
    else:
        template, header, params, result = _copy_template(module)
        n_params = len(params)
        with open(path, "w") as out:
            out.write(header + "\n\n")
            for c in range(k):
                out.write(template.replace(MARK, str(c)))
                out.write("\n")
            ps = ", ".join(f"p{j}: {s}" for j, s in enumerate(params))
            out.write(f"ENTRY %scaled.main ({ps}) -> ({', '.join([result] * k)}) {{\n")
            for j, s in enumerate(params):
                out.write(f"  %p{j} = {s} parameter({j})\n")
            args = ", ".join(f"%p{j}" for j in range(n_params))
            for c in range(k):
                out.write(f"  %copy.{c} = {result} call({args}), to_apply=%{entry_name}.x{c}\n")
            out.write(f"  ROOT %copies = ({', '.join([result] * k)}) tuple("
                      f"{', '.join(f'%copy.{c}' for c in range(k))})\n}}\n")
        info = {"around": f"{pick_name}.x0", "computation": f"{entry_name}.x0",
                "instructions": module.instruction_count * k + n_params + k + 1,
                "mb": path.stat().st_size / 1e6}
    side.write_text(json.dumps(info))
    return Scaled(path, **info)


def _copy_template(module) -> tuple[str, str, list[str], str]:
    """The module's computations renamed ``<name>.x<MARK>``, as text with no header; the
    header without entry layout and aliasing; the entry's parameter shapes; its result shape."""
    entry = module.entry
    params = [p.shape.to_text() for p in entry.parameters]
    result = entry.root.shape.to_text()
    for comp in module.computations:
        comp.name = f"{comp.name}.x{MARK}"
        comp.is_entry = False
        for inst in comp.instructions:
            inst.name = f"{inst.name}.x{MARK}"
    text = module.to_text()
    if text.count(MARK) == 0:
        raise SystemExit("renaming failed: the printed module does not carry the new names")
    header, _, body = text.partition("\n")
    # The old entry becomes an ordinary computation; the header keeps only what stays true.
    kept = [m.group(0) for m in re.finditer(r"\b(is_scheduled|replica_count|num_partitions)=\w+", header)]
    name = header.split()[1].rstrip(",")
    return body, f"HloModule {name}_scaled" + (", " + ", ".join(kept) if kept else ""), params, result


# --------------------------------------------------------------------------------------------
# The run

def command_argv(command: str, m: Scaled, partner: Scaled | None, out_dir: Path) -> tuple[str, list[str]] | None:
    """The child kind and arguments for ``command`` on module ``m``."""
    p = str(m.path)
    argv = {
        "summary": ["summary", p],
        "verify": ["verify", p],
        "cost": ["cost", "--per-op", p],
        "collectives": ["collectives", p],
        "estimate": ["estimate", "--hardware", "h100-sxm", p],
        "memory": ["memory", "--explain", p],
        "graph": ["graph", "--computation", m.computation, "--around", m.around, p,
                  "-o", str(out_dir / "graph.dot")],
        "diff": ["diff", p, str(partner.path)] if partner else None,
        "print": ["print", p, "-o", str(out_dir / "print.hlo")],
        "report": ["report", p, "-o", str(out_dir / "report.html")],
    }
    if command == "load":
        return "load", [p]
    a = argv[command]
    return None if a is None else ("hloscope", a)


@dataclass
class Row:
    module: str
    command: str
    by_size: dict[int, Figure] = field(default_factory=dict)
    xla: dict[int, Figure] = field(default_factory=dict)


def fmt_s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def fmt_mb(x: int | None) -> str:
    return "-" if x is None else f"{x / 2**20:.0f}"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, rest = sys.argv[2], sys.argv[3:]
        if kind == "jax-llama":
            _jax_llama(int(rest[0]), rest[1], rest[2])
            return 0
        return _child(kind, rest[:-1], rest[-1])
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--modules", default="llama-pre,llama-post",
                    help="comma-separated: llama-pre, llama-post, or none (default both)")
    ap.add_argument("--layers", type=int, default=72, help="decoder layers of the jax model (default 72)")
    ap.add_argument("--xla-dir", type=Path, help="a local copy of XLA's benchmark modules")
    ap.add_argument("--xla-modules", default="hlo_llama31_8b_bf16_1x8.hlo",
                    help="comma-separated file names in --xla-dir (default the Llama 3.1 8B module)")
    ap.add_argument("--hlo", type=Path, action="append", default=[], help="another HLO file (repeatable)")
    ap.add_argument("--sizes", default="1,10,100", help="comma-separated size factors (default 1,10,100)")
    ap.add_argument("--commands", default=",".join(COMMANDS), help=f"comma-separated, from {','.join(COMMANDS)}")
    ap.add_argument("--no-xla", action="store_true", help="skip the XLA children")
    ap.add_argument("--xla-compile-sizes", default="1", help="sizes at which XLA:CPU compiles the module (default 1)")
    ap.add_argument("--rss-limit-gb", type=float, default=4.0)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per child (default 600)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "hloscope-scale",
                    help="where generated and scaled modules are kept between runs")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    commands = [c for c in args.commands.split(",") if c]
    unknown = set(commands) - set(COMMANDS)
    if unknown:
        ap.error(f"unknown commands {sorted(unknown)}")
    compile_sizes = {int(s) for s in args.xla_compile_sizes.split(",") if s}
    rss_limit = int(args.rss_limit_gb * 2**30)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    have_xla = not args.no_xla
    if have_xla:
        # Not imported here: the parent stays small (children start as its copies).
        import importlib.util

        have_xla = importlib.util.find_spec("jaxlib") is not None

    # name -> (source path, diff partner name, XLA compiles it as it is)
    sources: dict[str, tuple[Path, str | None, bool]] = {}
    wanted = [m for m in args.modules.split(",") if m and m != "none"]
    if set(wanted) - {"llama-pre", "llama-post"}:
        ap.error(f"unknown modules {sorted(set(wanted) - {'llama-pre', 'llama-post'})}")
    if wanted:
        pre, post = llama_modules(args.layers, args.work, env)
        # Each is the other's diff partner; one not asked for is kept as a partner only ("~").
        sources["llama-pre" if "llama-pre" in wanted else "~llama-pre"] = (pre, "llama-post", True)
        sources["llama-post" if "llama-post" in wanted else "~llama-post"] = (post, "llama-pre", False)
    if args.xla_dir:
        for name in args.xla_modules.split(","):
            path = args.xla_dir / name
            if not path.exists():
                print(f"# {path} not found: skipped")
                continue
            sibling = args.xla_dir / name.replace("_1x8", "_2x8")
            sources[path.stem] = (path, sibling.stem if sibling.exists() and sibling != path else path.stem, False)
            if sibling.exists() and sibling.stem not in sources:
                sources.setdefault(f"~{sibling.stem}", (sibling, None, False))
    for path in args.hlo:
        sources[path.stem] = (path, path.stem, False)

    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  sizes {sizes}  commands {commands}  "
          f"XLA {'on' if have_xla else 'off'}  RSS limit {args.rss_limit_gb} GB", flush=True)
    out_dir = Path(tempfile.mkdtemp(prefix="hloscope-scale-out-"))
    rows: list[Row] = []
    header = (f"{'module':<34} {'size':>4} {'instr':>9} {'MB':>7} {'command':<12} {'work s':>7} {'cpu s':>7} {'sys s':>6} "
              f"{'wall s':>7} {'RSS MB':>7} {'XLA cpu':>7} {'XLA MB':>7} {'x XLA':>6}  note")
    print(header)
    print("-" * len(header), flush=True)
    for name, (src, partner_name, compiles) in sources.items():
        if name.startswith("~"):
            continue  # only a diff partner
        for command in commands:
            rows.append(Row(name, command))
        mine = [r for r in rows if r.module == name]
        for k in sizes:
            m = scaled(src, k, args.work)
            partner = None
            if partner_name is not None and "diff" in commands:
                psrc = sources.get(partner_name) or sources.get(f"~{partner_name}")
                partner = scaled(psrc[0], k, args.work) if psrc else None
            for row in mine:
                fig, xfig = _measure(row, k, m, partner, sizes, compiles and k in compile_sizes and have_xla,
                                     have_xla, out_dir, rss_limit, args.timeout, env)
                row.by_size[k] = fig
                if xfig is not None:
                    row.xla[k] = xfig
                ratio = (f"{fig.cpu / xfig.cpu:6.1f}" if xfig and xfig.cpu and fig.cpu else f"{'-':>6}")
                note = "; ".join(n for n in (fig.note, xfig.note if xfig else "") if n)
                print(f"{name:<34} {k:>4} {m.instructions:>9} {m.mb:>7.1f} {row.command:<12} "
                      f"{fmt_s(fig.work):>7} {fmt_s(fig.cpu):>7} {fmt_s(fig.sys):>6} {fmt_s(fig.wall):>7} {fmt_mb(fig.rss):>7} "
                      f"{fmt_s(xfig.cpu if xfig else None):>7} {fmt_mb(xfig.rss if xfig else None):>7} "
                      f"{ratio}  {note}", flush=True)
    _growth(rows, sizes)
    return 0


def _measure(row: Row, k: int, m: Scaled, partner: Scaled | None, sizes: list[int], xla_compiles: bool,
             have_xla: bool, out_dir: Path, rss_limit: int, timeout: float,
             env: dict[str, str]) -> tuple[Figure, Figure | None]:
    skip = _projected_over(row.by_size, k, sizes, rss_limit)
    spec = command_argv(row.command, m, partner, out_dir)
    if spec is None:
        return Figure(note="no partner module to diff with"), None
    fig = Figure(note=skip) if skip else run_child(*spec, rss_limit=rss_limit, timeout=timeout, env=env)
    twin = XLA_TWIN.get(row.command)
    xfig = None
    if have_xla and twin and (twin != "xla-compile" or xla_compiles):
        xskip = _projected_over(row.xla, k, sizes, rss_limit)
        xfig = Figure(note="XLA " + xskip) if xskip else run_child(
            twin, [str(m.path)], rss_limit=rss_limit, timeout=timeout, env=env)
    return fig, xfig


def _projected_over(by_size: dict[int, Figure], k: int, sizes: list[int], rss_limit: int) -> str:
    """A reason to skip size ``k``: the RSS extrapolated from the two sizes before it passes the limit."""
    done = [s for s in sizes if s < k and s in by_size and by_size[s].rss]
    if len(done) < 2:
        if done and by_size[done[-1]].note.startswith("stopped"):
            return "skipped: the smaller size was stopped"
        return ""
    a, b = done[-2], done[-1]
    ra, rb = by_size[a].rss or 0, by_size[b].rss or 0
    slope = (rb - ra) / (b - a)
    projected = rb + slope * (k - b)
    if projected > rss_limit:
        return (f"skipped: RSS extrapolated from {a}x and {b}x is {projected / 2**30:.1f} GB "
                f"(limit {rss_limit / 2**30:.1f} GB)")
    return ""


def _growth(rows: list[Row], sizes: list[int]) -> None:
    steps = list(zip(sizes, sizes[1:]))
    if not steps:
        return
    print()
    cols = "  ".join(f"{f'time {a}->{b}':>13} {f'RSS {a}->{b}':>12}" for a, b in steps)
    print(f"{'growth (CPU time, peak RSS)':<34} {'command':<12} {cols}")
    for row in rows:
        cells = []
        for a, b in steps:
            fa, fb = row.by_size.get(a), row.by_size.get(b)
            t = f"{fb.cpu / fa.cpu:.1f}x" if fa and fb and fa.cpu and fb.cpu else "-"
            r = f"{fb.rss / fa.rss:.1f}x" if fa and fb and fa.rss and fb.rss and fb.cpu else "-"
            cells.append(f"{t:>13} {r:>12}")
        print(f"{row.module:<34} {row.command:<12} " + "  ".join(cells))


if __name__ == "__main__":
    sys.exit(main())

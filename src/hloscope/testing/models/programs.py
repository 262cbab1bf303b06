"""The models tier's programs: real training steps written the way users write them.

Each is a ``hloscope.testing.cases.Case`` whose ``fn`` is a train step (flax linen or nnx,
optax, a cross-entropy or regression loss) and whose inputs are the pytrees a user passes
(parameters, optimizer state, a batch). The configurations are small, so that XLA:CPU
compiles each in seconds and the whole tier stays inside the test suite's budget, but the
programs are the real ones: the same layers, optimizers, shardings and donation as at scale.

Note [Models tier]
    ``MODELS`` covers what users bring, not what the op tests reach: a GPT decoder trained
    with AdamW on 8 devices data-parallel (Mesh + NamedSharding) and 4 x 2 data x tensor
    parallel (Megatron-style parameter shardings from flax's logical partitioning); the same
    in bf16 with rematerialisation; a ResNet with BatchNorm and momentum SGD on 1 and on 8
    devices; an LSTM over a scan (flax nnx); a mixture-of-experts layer whose tokens travel to
    their experts by all-to-all under shard_map; and a pmapped ViT. Every step donates its
    parameters and optimizer state (``donate_argnums``), as training loops do, so the modules
    carry XLA's input/output aliasing.

Importing this module imports jax, flax and optax (test dependencies).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from hloscope.testing.cases import Case

__all__ = ["MODELS", "by_name"]

MODELS: list[Case] = []


Build = Callable[[], tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]


def _model(name: str, devices: int, families: str, *, rtol: float = 1e-4, atol: float = 1e-5,
           mode: str = "jit") -> Callable[[Build], None]:
    """Register ``build() -> (step, inputs, jit_kwargs)`` as the model case ``name``. ``build``
    runs on first use (it makes meshes and initialises parameters), once per process; the
    case's ``fn`` calls the built step, so it can be jitted (or pmapped) before it is built."""

    def register(build: Build) -> None:
        built = functools.cache(build)

        def step(*args: Any) -> Any:
            return built()[0](*args)

        step.__name__ = step.__qualname__ = name
        MODELS.append(Case(name, step, lambda: built()[1], tuple(families.split()), mode=mode,
                           devices=devices, jit_kwargs=lambda: dict(built()[2]), rtol=rtol,
                           atol=atol))

    return register


def by_name(name: str) -> Case:
    """The model case called ``name``; KeyError if none."""
    for case in MODELS:
        if case.name == name:
            return case
    raise KeyError(name)


def _mesh(shape: tuple[int, ...], names: tuple[str, ...]) -> Mesh:
    return Mesh(np.array(jax.devices()[: int(np.prod(shape))]).reshape(shape), names)


def _on_mesh(tree: Any, mesh: Mesh) -> Any:
    """``tree`` with every array jit left on one device (optax's step counts) replicated over
    ``mesh``, so that a step's inputs all live on the mesh's devices."""
    replicated = NamedSharding(mesh, P())
    return jax.tree.map(lambda a: a if isinstance(a.sharding, NamedSharding)
                        else jax.device_put(a, replicated), tree)


def _tokens(batch: int, length: int, vocab: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, vocab, (batch, length + 1)).astype(np.int32)


# --- GPT (flax linen, optax AdamW) -------------------------------------------------------------
# Parameters carry logical axis names (nn.with_logical_partitioning); a rule table maps them to
# mesh axes, as MaxText and the flax examples do: "mlp" and "heads" split over "model" (Megatron:
# column-parallel up-projections and QKV, row-parallel down-projections and output).

_RULES = (("batch", "data"), ("embed", None), ("mlp", "model"), ("heads", "model"), ("kv", None),
          ("vocab", None), ("length", None))


def _dense(features: int, axes: tuple[str, str], dtype: Any, name: str) -> nn.Dense:
    return nn.Dense(features, dtype=dtype, name=name,
                    kernel_init=nn.with_logical_partitioning(nn.initializers.normal(0.02), axes),
                    bias_init=nn.with_logical_partitioning(nn.initializers.zeros, axes[1:]))


class _Attention(nn.Module):
    heads: int
    dtype: Any

    @nn.compact
    def __call__(self, x: Any) -> Any:
        b, t, d = x.shape
        hd = d // self.heads
        qkv = nn.DenseGeneral((3, self.heads, hd), dtype=self.dtype, name="qkv",
                              kernel_init=nn.with_logical_partitioning(
                                  nn.initializers.normal(0.02), ("embed", None, "heads", "kv")),
                              bias_init=nn.with_logical_partitioning(
                                  nn.initializers.zeros, (None, "heads", "kv")))(x)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(hd).astype(self.dtype)
        causal = jnp.tril(jnp.ones((t, t), bool))
        logits = jnp.where(causal, logits, jnp.finfo(self.dtype).min)
        weights = jax.nn.softmax(logits.astype(jnp.float32), axis=-1).astype(self.dtype)
        y = jnp.einsum("bhqk,bkhd->bqhd", weights, v)
        return nn.DenseGeneral(d, axis=(-2, -1), dtype=self.dtype, name="out",
                               kernel_init=nn.with_logical_partitioning(
                                   nn.initializers.normal(0.02), ("heads", "kv", "embed")),
                               bias_init=nn.with_logical_partitioning(
                                   nn.initializers.zeros, ("embed",)))(y)


class _Block(nn.Module):
    heads: int
    dtype: Any

    @nn.compact
    def __call__(self, x: Any) -> Any:
        d = x.shape[-1]
        x = x + _Attention(self.heads, self.dtype)(nn.LayerNorm(dtype=self.dtype)(x))
        y = _dense(4 * d, ("embed", "mlp"), self.dtype, "up")(nn.LayerNorm(dtype=self.dtype)(x))
        return x + _dense(d, ("mlp", "embed"), self.dtype, "down")(nn.gelu(y))


class GPT(nn.Module):
    """A decoder-only transformer: token and position embeddings, pre-LayerNorm blocks."""

    vocab: int = 128
    width: int = 64
    heads: int = 4
    layers: int = 2
    length: int = 32
    dtype: Any = jnp.float32
    remat: bool = False

    @nn.compact
    def __call__(self, tokens: Any) -> Any:
        embed = nn.Embed(self.vocab, self.width, dtype=self.dtype, name="wte",
                         embedding_init=nn.with_logical_partitioning(
                             nn.initializers.normal(0.02), ("vocab", "embed")))
        pos: Any = self.param("wpe", nn.with_logical_partitioning(nn.initializers.normal(0.02),
                                                             ("length", "embed")),
                         (self.length, self.width))
        x = embed(tokens) + pos.astype(self.dtype)
        block = nn.remat(_Block) if self.remat else _Block
        for i in range(self.layers):
            x = block(self.heads, self.dtype, name=f"block{i}")(x)
        x = nn.LayerNorm(dtype=self.dtype)(x)
        return embed.attend(x).astype(jnp.float32)  # tied output embedding


def _gpt(mesh_shape: tuple[int, ...], *, dtype: Any = jnp.float32, remat: bool = False,
         batch: int = 16) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    model = GPT(dtype=dtype, remat=remat)
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(3e-4, weight_decay=0.1))
    tokens = _tokens(batch, model.length, model.vocab)
    mesh = _mesh(mesh_shape, ("data", "model") if len(mesh_shape) == 2 else ("data",))
    rules = _RULES if len(mesh_shape) == 2 else tuple((a, "data" if a == "batch" else None)
                                                      for a, _ in _RULES)
    abstract = jax.eval_shape(model.init, jax.random.key(0), tokens[:, :-1])
    specs = nn.logical_to_mesh_sharding(nn.get_partition_spec(abstract), mesh, rules)

    @functools.partial(jax.jit, out_shardings=specs)
    def init(key: Any) -> Any:
        return model.init(key, tokens[:, :-1])

    params = nn.unbox(init(jax.random.key(0)))
    if dtype != jnp.float32:  # mixed precision: bf16 weights as well as activations
        params = jax.tree.map(lambda p: p.astype(dtype), params)
    opt_state = _on_mesh(jax.jit(tx.init)(params), mesh)
    batch_sharding = NamedSharding(mesh, P("data"))

    def train_step(params: Any, opt_state: Any, batch: Any) -> Any:
        def loss_fn(p: Any) -> Any:
            logits: Any = model.apply(p, batch[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, batch[:, 1:]).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    shardings = (jax.tree.map(lambda a: a.sharding, params),
                 jax.tree.map(lambda a: a.sharding, opt_state))
    jit = {"in_shardings": (*shardings, batch_sharding),
           "out_shardings": (*shardings, NamedSharding(mesh, P())), "donate_argnums": (0, 1)}
    return train_step, (params, opt_state, jax.device_put(tokens, batch_sharding)), jit


@_model("gpt_dp8", 8, "dot softmax layernorm adamw all-reduce")
def _gpt_dp8() -> Any:
    return _gpt((8,))


@_model("gpt_tp4x2", 8, "dot softmax layernorm adamw all-reduce all-gather tensor-parallel")
def _gpt_tp4x2() -> Any:
    return _gpt((4, 2))


@_model("gpt_bf16_remat", 8, "dot bf16 remat adamw all-reduce", rtol=2e-2, atol=2e-2)
def _gpt_bf16_remat() -> Any:
    return _gpt((8,), dtype=jnp.bfloat16, remat=True)


# --- ResNet (flax linen, BatchNorm, momentum SGD) ----------------------------------------------


class _ResidualBlock(nn.Module):
    features: int
    strides: int

    @nn.compact
    def __call__(self, x: Any, train: bool) -> Any:
        norm = functools.partial(nn.BatchNorm, use_running_average=not train, momentum=0.9)
        y = nn.Conv(self.features, (3, 3), (self.strides, self.strides), use_bias=False)(x)
        y = nn.relu(norm()(y))
        y = nn.Conv(self.features, (3, 3), use_bias=False)(y)
        y = norm(scale_init=nn.initializers.zeros)(y)
        if x.shape[-1] != self.features or self.strides != 1:
            x = norm()(nn.Conv(self.features, (1, 1), (self.strides, self.strides), use_bias=False)(x))
        return nn.relu(x + y)


class ResNet(nn.Module):
    """A small ResNet: a 3x3 stem, two stages of residual blocks, global average pooling."""

    widths: tuple[int, ...] = (16, 32)
    classes: int = 10

    @nn.compact
    def __call__(self, x: Any, train: bool = True) -> Any:
        x = nn.Conv(self.widths[0], (3, 3), use_bias=False)(x)
        x = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9)(x))
        x = nn.max_pool(x, (2, 2), (2, 2))
        for i, w in enumerate(self.widths):
            x = _ResidualBlock(w, 1 if i == 0 else 2)(x, train)
        return nn.Dense(self.classes)(jnp.mean(x, axis=(1, 2)))


def _resnet(devices: int) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    model = ResNet()
    tx = optax.sgd(0.1, momentum=0.9, nesterov=True)
    rng = np.random.default_rng(1)
    images = rng.standard_normal((16, 16, 16, 3)).astype(np.float32)
    labels = rng.integers(0, 10, 16).astype(np.int32)
    variables = model.init(jax.random.key(0), images, train=False)
    params, stats = variables["params"], variables["batch_stats"]
    opt_state = tx.init(params)

    def train_step(state: Any, batch: Any) -> Any:
        params, stats, opt_state = state
        x, y = batch

        def loss_fn(p: Any) -> Any:
            logits, new = model.apply({"params": p, "batch_stats": stats}, x, train=True,
                                      mutable=["batch_stats"])
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), new

        (loss, new), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), new["batch_stats"], opt_state), loss

    state = (params, stats, opt_state)
    if devices == 1:
        return train_step, (state, (images, labels)), {"donate_argnums": (0,)}
    mesh = _mesh((devices,), ("data",))
    rep, dat = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    state = jax.device_put(state, rep)
    batch = jax.device_put((images, labels), dat)
    return train_step, (state, batch), {"in_shardings": (rep, dat), "out_shardings": (rep, rep),
                                        "donate_argnums": (0,)}


@_model("resnet_1", 1, "conv batchnorm reduce-window sgd")
def _resnet_1() -> Any:
    return _resnet(1)


@_model("resnet_dp8", 8, "conv batchnorm reduce-window sgd all-reduce")
def _resnet_dp8() -> Any:
    return _resnet(8)


# --- LSTM over a scan (flax nnx, optax Adam) ---------------------------------------------------


class _LSTMRegressor(nnx.Module):
    def __init__(self, features: int, hidden: int, rngs: nnx.Rngs):
        self.rnn = nnx.RNN(nnx.OptimizedLSTMCell(features, hidden, rngs=rngs))
        self.head = nnx.Linear(hidden, 1, rngs=rngs)

    def __call__(self, x: Any) -> Any:
        hidden = self.head.in_features
        zeros = jnp.zeros((x.shape[0], hidden), x.dtype)
        states: Any = self.rnn(x, initial_carry=(zeros, zeros))
        return self.head(states[:, -1])


def _lstm() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    model = _LSTMRegressor(8, 32, nnx.Rngs(0))
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    tx = optax.adam(1e-3)
    opt_state = tx.init(params)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 16, 8)).astype(np.float32)
    y = rng.standard_normal((8, 1)).astype(np.float32)

    # The RNN's own state (an rng key and count: a typed PRNG key among the step's arguments)
    # is an argument like the parameters, as nnx.split hands it over.
    def train_step(params: Any, rest: Any, opt_state: Any, x: Any, y: Any) -> Any:
        def loss_fn(p: Any) -> Any:
            return jnp.mean((nnx.merge(graphdef, p, rest)(x) - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return train_step, (params, rest, opt_state, x, y), {"donate_argnums": (0, 2)}


@_model("lstm_scan", 1, "while scan lstm adam")
def _lstm_scan() -> Any:
    return _lstm()


# --- Mixture of experts with all-to-all (shard_map) --------------------------------------------


def _moe() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    """One expert per device; each device routes its tokens (top-1, fixed capacity) to the
    experts with an all-to-all, runs its expert on what it received, and sends the results
    back with a second all-to-all."""
    n, tokens_per_device, width, hidden = 8, 16, 32, 64
    capacity = 4  # tokens one device may send to one expert
    mesh = _mesh((n,), ("x",))
    rng = np.random.default_rng(3)
    params = {"router": (rng.standard_normal((width, n)) * 0.1).astype(np.float32),
              "w_in": (rng.standard_normal((n, width, hidden)) * 0.1).astype(np.float32),
              "w_out": (rng.standard_normal((n, hidden, width)) * 0.1).astype(np.float32)}
    x = rng.standard_normal((n * tokens_per_device, width)).astype(np.float32)
    y = rng.standard_normal((n * tokens_per_device, width)).astype(np.float32)
    tx = optax.adam(1e-3)
    opt_state = tx.init(params)

    def layer(p: Any, x: Any) -> Any:  # per device: x [tokens, width], one expert's weights
        gates = jax.nn.softmax(x @ p["router"], axis=-1)
        expert = jnp.argmax(gates, axis=-1)
        onehot = jax.nn.one_hot(expert, n, dtype=x.dtype)
        position = (jnp.cumsum(onehot, axis=0) - 1.0) * onehot  # slot within the expert
        keep = onehot * (position < capacity)
        dispatch = keep[:, :, None] * jax.nn.one_hot(position.sum(-1), capacity)[:, None, :]
        sent = jnp.einsum("tec,tw->ecw", dispatch, x)  # [experts, capacity, width]
        received = jax.lax.all_to_all(sent, "x", 0, 0, tiled=True)  # [senders, capacity, width]
        h = jax.nn.gelu(jnp.einsum("scw,wh->sch", received, p["w_in"][0]))
        out = jnp.einsum("sch,hw->scw", h, p["w_out"][0])
        back = jax.lax.all_to_all(out, "x", 0, 0, tiled=True)  # [experts, capacity, width]
        combined = jnp.einsum("tec,ecw->tw", dispatch, back)
        return x + combined * jnp.max(gates, axis=-1, keepdims=True)

    specs = {"router": P(), "w_in": P("x"), "w_out": P("x")}

    def loss_local(p: Any, x: Any, y: Any) -> Any:
        return jax.lax.pmean(jnp.mean((layer(p, x) - y) ** 2), "x")

    def train_step(params: Any, opt_state: Any, x: Any, y: Any) -> Any:
        def loss_fn(p: Any) -> Any:
            return jax.shard_map(loss_local, mesh=mesh, in_specs=(specs, P("x"), P("x")),
                                 out_specs=P())(p, x, y)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    param_sh = {k: NamedSharding(mesh, s) for k, s in specs.items()}
    params = jax.device_put(params, param_sh)
    opt_state = _on_mesh(jax.jit(tx.init)(params), mesh)
    opt_sh = jax.tree.map(lambda a: a.sharding, opt_state)
    dat = NamedSharding(mesh, P("x"))
    jit = {"in_shardings": (param_sh, opt_sh, dat, dat),
           "out_shardings": (param_sh, opt_sh, NamedSharding(mesh, P())), "donate_argnums": (0, 1)}
    return train_step, (params, opt_state, jax.device_put(x, dat), jax.device_put(y, dat)), jit


@_model("moe_a2a8", 8, "shard_map all-to-all top-1 routing adam")
def _moe_a2a8() -> Any:
    return _moe()


# --- ViT under pmap (flax linen) ---------------------------------------------------------------


class _ViT(nn.Module):
    patch: int = 4
    width: int = 32
    heads: int = 2
    layers: int = 1
    classes: int = 10

    @nn.compact
    def __call__(self, x: Any) -> Any:
        x = nn.Conv(self.width, (self.patch, self.patch), (self.patch, self.patch))(x)
        b, h, w, c = x.shape
        x = x.reshape(b, h * w, c)
        x = x + self.param("pos", nn.initializers.normal(0.02), (1, h * w, c))
        for _ in range(self.layers):
            y = nn.LayerNorm()(x)
            x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(y, y)
            y = nn.LayerNorm()(x)
            x = x + nn.Dense(c)(nn.gelu(nn.Dense(2 * c)(y)))
        return nn.Dense(self.classes)(nn.LayerNorm()(x).mean(axis=1))


def _vit_pmap() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    n = 8
    model = _ViT()
    tx = optax.sgd(0.05, momentum=0.9)
    rng = np.random.default_rng(4)
    images = rng.standard_normal((n, 2, 16, 16, 3)).astype(np.float32)
    labels = rng.integers(0, 10, (n, 2)).astype(np.int32)
    params = model.init(jax.random.key(0), images[0])
    opt_state = tx.init(params)

    def step(params: Any, opt_state: Any, x: Any, y: Any) -> Any:
        def loss_fn(p: Any) -> Any:
            logits: Any = model.apply(p, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        grads = jax.lax.pmean(grads, "batch")
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, jax.lax.pmean(loss, "batch")

    stacked = jax.tree.map(lambda a: np.broadcast_to(np.asarray(a), (n, *np.shape(a))).copy(),
                           (params, opt_state))
    return step, (*stacked, images, labels), {"axis_name": "batch"}


@_model("vit_pmap8", 8, "pmap attention conv all-reduce", mode="pmap8")
def _vit_pmap8() -> Any:
    return _vit_pmap()

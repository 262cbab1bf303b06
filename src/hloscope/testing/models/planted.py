"""Training steps with a NaN planted in the middle of the loss, for the numerics tools.

Written like programs.py's models (flax linen, optax, a real train step on one device and
data-parallel on eight), each with one numerical bug a user could write:

* ``nan_log_1`` / ``nan_log_dp8``: an auxiliary loss takes the log of a batch statistic
  that is negative for the batch's 6th example (``_LOG_LINE``);
* ``nan_norm_1`` / ``nan_norm_dp8``: a hand-written normalisation divides by the standard
  deviation of each example's features, which is zero for an example whose features are
  all equal (the 6th again; ``_NORM_LINE``): 0 / 0.

The bad example sits in the first device's shard on eight devices, so only device 0 makes
the NaN. ``build(name)`` (models/__init__.py) builds them into the corpus layout like the
other models; they are not in ``MODEL_NAMES`` (the models' own tests expect finite steps).
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from hloscope.testing.cases import Case

__all__ = ["PLANTED", "PLANTED_NAMES", "by_name", "LOG_LINE", "NORM_LINE"]

PLANTED: list[Case] = []
PLANTED_NAMES = ("nan_log_1", "nan_log_dp8", "nan_norm_1", "nan_norm_dp8")
_BAD = 5  # the example that makes the NaN (on device 0's shard of 8)


class _Norm(nn.Module):
    """Each example's features scaled to zero mean and unit deviation, with no epsilon."""

    @nn.compact
    def __call__(self, x: Any) -> Any:
        mean = jnp.mean(x, axis=-1, keepdims=True)
        centred = x - mean
        std = jnp.sqrt(jnp.mean(centred * centred, axis=-1, keepdims=True))
        return centred / std  # the planted division: 0 / 0 where an example's features are all equal


class _MLP(nn.Module):
    hidden: int = 64
    classes: int = 10
    norm: bool = False

    @nn.compact
    def __call__(self, x: Any) -> Any:
        if self.norm:
            x = _Norm()(x)
        h = nn.relu(nn.Dense(self.hidden)(x))
        h = nn.relu(nn.Dense(self.hidden)(h))
        return nn.Dense(self.classes)(h), h


def _aux_loss(h: Any, x: Any) -> Any:
    # The planted log: the batch statistic below is negative for the example whose inputs
    # were made strongly negative, so its log is NaN.
    margin = jnp.mean(x, axis=-1) + 1.0
    return jnp.mean(jnp.log(margin) * jnp.mean(h, axis=-1))


LOG_LINE = inspect.getsourcelines(_aux_loss)[1] + 4  # the line with jnp.log
NORM_LINE = inspect.getsourcelines(_Norm.__call__)[1] + 7  # the line dividing by std


def _data(norm: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((32, 16)).astype(np.float32) * 0.5
    y = rng.integers(0, 10, 32).astype(np.int32)
    if norm:
        x[_BAD] = 0.25  # every feature equal: its deviation is 0
    else:
        x[_BAD] = -3.0  # mean(x) + 1 < 0: the log's argument is negative
    return x, y


def _step(norm: bool, devices: int) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    model = _MLP(norm=norm)
    tx = optax.adam(1e-3)
    x, y = _data(norm)
    params = model.init(jax.random.key(0), x)
    opt_state = tx.init(params)

    def train_step(params: Any, opt_state: Any, x: Any, y: Any) -> Any:
        def loss_fn(p: Any) -> Any:
            logits, h = model.apply(p, x)
            loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            return loss if norm else loss + 0.01 * _aux_loss(h, x)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    if devices == 1:
        return train_step, (params, opt_state, x, y), {"donate_argnums": (0, 1)}
    mesh = Mesh(np.array(jax.devices()[:devices]), ("data",))
    rep, dat = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    params, opt_state = jax.device_put((params, opt_state), rep)
    jit = {"in_shardings": (rep, rep, dat, dat), "out_shardings": (rep, rep, rep), "donate_argnums": (0, 1)}
    return train_step, (params, opt_state, jax.device_put(x, dat), jax.device_put(y, dat)), jit


def _planted(name: str, devices: int, norm: bool) -> None:
    built = functools.cache(lambda: _step(norm, devices))

    def step(*args: Any) -> Any:
        return built()[0](*args)

    step.__name__ = step.__qualname__ = name
    PLANTED.append(Case(name, step, lambda: built()[1], ("planted-nan",), devices=devices,
                        jit_kwargs=lambda: dict(built()[2])))


_planted("nan_log_1", 1, norm=False)
_planted("nan_log_dp8", 8, norm=False)
_planted("nan_norm_1", 1, norm=True)
_planted("nan_norm_dp8", 8, norm=True)


def by_name(name: str) -> Case:
    """The planted case called ``name``; KeyError if none."""
    for case in PLANTED:
        if case.name == name:
            return case
    raise KeyError(name)

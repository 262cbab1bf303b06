"""A small jax training script that jits three functions, for ``hloscope dump``.

    hloscope dump -- python examples/train_small.py
    hloscope dump --report 1 -o step.html -- python examples/train_small.py --steps 2

It initialises an MLP, runs a few SGD steps and evaluates it, so XLA compiles ``init``,
``train_step`` and ``evaluate`` (plus the small helpers jax itself jits).
"""
from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp


@jax.jit
def init(key):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (32, 64)) * 0.1, "b1": jnp.zeros(64),
            "w2": jax.random.normal(k2, (64, 10)) * 0.1, "b2": jnp.zeros(10)}


def loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))


@jax.jit
def train_step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)


@jax.jit
def evaluate(params, x, y):
    return loss(params, x, y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    params = init(jax.random.PRNGKey(0))
    x = jnp.ones((16, 32))
    y = jax.nn.one_hot(jnp.arange(16) % 10, 10)
    for _ in range(args.steps):
        params = train_step(params, x, y)
    print(f"loss after {args.steps} steps: {float(evaluate(params, x, y)):.4f}")


if __name__ == "__main__":
    main()

"""A small flax (linen) + optax training script, written the way users write one, for
``hloscope dump``.

    hloscope dump -- python examples/train_flax.py
    hloscope dump --json -- python examples/train_flax.py --steps 2

A convolutional encoder-decoder (a tiny U-Net: two resolutions and a skip connection) trained
with AdamW on random images. Its upsampling multiplies by a fixed interpolation matrix built
with numpy, which XLA keeps as a large constant: the dump holds its values, so the dumped step
can be run (``hloscope run``).
"""
from __future__ import annotations

import argparse

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

SIZE = 16  # image height and width


def _upsample_matrix(n: int) -> np.ndarray:
    """Linear interpolation from n to 2n points, as a (2n, n) matrix."""
    out = np.zeros((2 * n, n), np.float32)
    for i in range(2 * n):
        x = min(max((i + 0.5) / 2 - 0.5, 0), n - 1)
        lo = int(np.floor(x))
        hi = min(lo + 1, n - 1)
        out[i, lo] += 1 - (x - lo)
        out[i, hi] += x - lo
    return out


UP = _upsample_matrix(SIZE // 2)  # 16 x 8: 128 floats, elided by XLA's dumps unless asked


class UNet(nn.Module):
    features: int = 8

    @nn.compact
    def __call__(self, x):
        skip = nn.relu(nn.Conv(self.features, (3, 3))(x))
        down = nn.max_pool(skip, (2, 2), strides=(2, 2))
        mid = nn.relu(nn.Conv(2 * self.features, (3, 3))(down))
        up = jnp.einsum("ij,bjkc->bikc", UP, mid)
        up = jnp.einsum("ij,bkjc->bkic", UP, up)
        merged = jnp.concatenate([up, skip], axis=-1)
        return nn.Conv(1, (1, 1))(nn.relu(nn.Conv(self.features, (3, 3))(merged)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    model = UNet()
    rng = np.random.default_rng(0)
    images = jnp.asarray(rng.standard_normal((4, SIZE, SIZE, 1)), jnp.float32)
    targets = jnp.asarray(rng.standard_normal((4, SIZE, SIZE, 1)), jnp.float32)
    params = model.init(jax.random.PRNGKey(0), images)
    optimizer = optax.adamw(1e-3)
    opt_state = optimizer.init(params)

    @jax.jit
    def train_step(params, opt_state, x, y):
        def loss_fn(p):
            return jnp.mean((model.apply(p, x) - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    for _ in range(args.steps):
        params, opt_state, loss = train_step(params, opt_state, images, targets)
    print(f"loss after {args.steps} steps: {float(loss):.4f}")


if __name__ == "__main__":
    main()

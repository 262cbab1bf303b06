"""Bundled example modules, so every command has something real to show with no arguments.

``mnist_pmap_sgd_step.hlo`` is a real XLA GPU dump (after optimizations) of one data-parallel
SGD step of a tanh MLP on MNIST: 8 replicas, cuBLAS gemm custom calls, fusions and a tuple
all-reduce.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["default_example_path"]

_HERE = Path(__file__).parent


def default_example_path() -> Path:
    """The module ``hloscope report`` uses when given no file."""
    return _HERE / "mnist_pmap_sgd_step.hlo"

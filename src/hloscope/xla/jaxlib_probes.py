"""Where jaxlib keeps the private names the XLA bridge uses (hloscope/xla/client.py), release by
release: each name's candidate dotted paths, newest first; the first that resolves wins. jaxlib
moves them between releases (the bridge supports jax 0.7.0 and later: pyproject.toml's extra)."""
from __future__ import annotations

__all__ = ["PROBES"]

# Each entry: attribute name in the bridge's namespace -> candidate dotted paths.
PROBES: dict[str, tuple[str, ...]] = {
    "hlo_module_from_text": (
        "jax._src.lib.xla_client.hlo.hlo_module_from_text",
        "jax._src.lib._jax.hlo_module_from_text",
        "jax._src.lib.xla_client._xla.hlo_module_from_text",
        "jax._src.lib.xla_extension.hlo_module_from_text",
    ),
    "hlo_module_cost_analysis": (
        "jax._src.lib._jax.hlo_module_cost_analysis",
        "jax._src.lib.xla_client._xla.hlo_module_cost_analysis",
        "jax._src.lib.xla_extension.hlo_module_cost_analysis",
    ),
    "xla_computation_to_mlir_module": (
        "jax._src.lib._jax.mlir.xla_computation_to_mlir_module",
        "jax._src.lib.xla_client._xla.mlir.xla_computation_to_mlir_module",
        "jax._src.lib.xla_extension.mlir.xla_computation_to_mlir_module",
    ),
    "XlaComputation": (
        "jax._src.lib.xla_client.XlaComputation",
        "jax._src.lib.xla_client.hlo.XlaComputation",
    ),
    "HloPrintOptions": (
        "jax._src.lib.xla_client.hlo.HloPrintOptions",
        "jax._src.lib._jax.HloPrintOptions",
    ),
    "CompileOptions": ("jax._src.lib.xla_client.CompileOptions", "jax._src.lib._jax.CompileOptions"),
    "DeviceAssignment": (
        "jax._src.lib.xla_client.DeviceAssignment",
        "jax._src.lib._jax.DeviceAssignment",
    ),
    "DeviceList": ("jax._src.lib.xla_client.DeviceList", "jax._src.lib._jax.DeviceList"),
    "get_backend": ("jax._src.xla_bridge.get_backend", "jax.extend.backend.get_backend"),
    # convert.py's MLIR -> HLO path (StableHLO/MHLO inputs) and proto reader.
    "mlir_module_to_xla_computation": (
        "jax._src.lib._jax.mlir.mlir_module_to_xla_computation",
        "jax._src.lib.xla_client._xla.mlir.mlir_module_to_xla_computation",
        "jax._src.lib.xla_extension.mlir.mlir_module_to_xla_computation",
    ),
    "HloModule": (
        "jax._src.lib.xla_client.hlo.HloModule",  # jaxlib 0.7 and later
        "jax._src.lib._jax.HloModule",
        "jax._src.lib.xla_extension.HloModule",
    ),
}

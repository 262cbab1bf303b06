"""The installed distribution's version, read once from its metadata (pyproject.toml sets it)."""
from importlib import metadata

__all__ = ["__version__"]

try:
    __version__ = metadata.version("hloscope")
except metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

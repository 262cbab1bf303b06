"""The command line, one module per command family (``main`` dispatches)."""
from hloscope.cli.main import main

__all__ = ["main"]

"""``python -m hloscope`` runs the command line."""
import sys

from hloscope.cli import main

sys.exit(main())

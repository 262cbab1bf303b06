"""``python -m hloscope`` runs the command line."""
import sys

from hloscope.cli.main import main

sys.exit(main())

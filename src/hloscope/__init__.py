"""hloscope: read, run and explain XLA HLO modules."""

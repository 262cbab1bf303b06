"""What tests, tools and benchmarks share: the architecture checks (``architecture``), the
per-dtype tolerance table (``tolerances``), the child-process runner for calls into XLA that
may abort (``xla_worker``) and the differential fuzzer (``fuzz``; ``tools/fuzz_hlo.py`` is its
command line).

Nothing in the library imports this package; it is a face for the project's own checks and for
users who test their modules against XLA.
"""

"""What tests, tools and benchmarks share:

- ``cases``: the one case type, ``Case`` (a jax program, its inputs, how it is lowered, its
  tolerance), used by the oracle corpus, the oracle sweep and the analysis sweep;
- ``xla_worker``: the child-process runner for calls into XLA that may abort or hang
  (the fuzzer, the oracle sweep and the XLA corpus check use it);
- ``tolerances``: the per-dtype tolerance table;
- ``fuzz``: the differential fuzzer (``tools/fuzz_hlo.py`` is its command line);
- ``sweep``: the analysis sweep against XLA:CPU (``tools/analysis_sweep.py``);
- ``architecture``: the layer, cycle and private-name checks.

Nothing in the library imports this package; it is a face for the project's own checks and for
users who test their modules against XLA.
"""

"""The oracle corpus: small JAX programs (``programs*.py``) and the builder (``corpus.py``) that
writes, for each, XLA:CPU's view of it (HLO before and after optimization, inputs, outputs, cost
and memory analyses) to an on-disk cache. The tests read it through ``tests/oracle_fixtures.py``;
``benchmarks/run.py`` uses its modules as workloads. Importing ``corpus`` imports jax.
"""

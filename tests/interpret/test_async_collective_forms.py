"""Async collectives written with the result's shape alone (all-gather-start f32[4,8] instead
of (f32[4,2], f32[4,8])), as XLA's MLIR export writes them: hloscope refused them (the -done
"needs a tuple operand with an element 1"); XLA:CPU runs them (Note [Async collectives holding
their result only] in hloscope/ir/shapes/collectives.py)."""
from __future__ import annotations

import numpy as np
import pytest

import hloscope

client = pytest.importorskip("hloscope.xla.client")

FORMS = {
    "all-gather": """HloModule m, replica_count=4
ENTRY e {
  x = f32[4,2] parameter(0)
  s = f32[4,8] all-gather-start(x), replica_groups={{0,1,2,3}}, dimensions={1}
  ROOT d = f32[4,8] all-gather-done(s)
}""",
    "collective-permute": """HloModule m, replica_count=4
ENTRY e {
  x = f32[4,2] parameter(0)
  s = f32[4,2] collective-permute-start(x), source_target_pairs={{0,1},{1,2},{2,3}}
  ROOT d = f32[4,2] collective-permute-done(s)
}""",
    "both forms": """HloModule m, replica_count=4
ENTRY e {
  x = f32[4,2] parameter(0)
  s = f32[4,8] all-gather-start(x), replica_groups={{0,1,2,3}}, dimensions={1}
  d = f32[4,8] all-gather-done(s)
  t = (f32[4,2], f32[4,8]) all-gather-start(x), replica_groups={{0,1,2,3}}, dimensions={1}
  e = f32[4,8] all-gather-done(t)
  ROOT sum = f32[4,8] add(d, e)
}""",
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_start_holding_its_result_only_runs_as_xla_cpu_does(form: str) -> None:
    text = FORMS[form]
    module = hloscope.parse(text)
    assert hloscope.verify(module) == []
    rng = np.random.default_rng(3)
    inputs = [[rng.standard_normal((4, 2)).astype(np.float32)] for _ in range(4)]
    theirs = client.compile_hlo(text).run(inputs)
    for mode in ("lockstep", "per-device"):
        ours = hloscope.run(module, inputs, options=hloscope.RunOptions(mode=mode))
        for k in range(4):
            np.testing.assert_array_equal(ours[k], theirs[k], err_msg=f"{mode}, device {k}")

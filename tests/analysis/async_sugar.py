"""Hand-written modules in XLA's async sugar, shared by the cost, collectives and timing tests.

``call-start(x), to_apply=f`` and the like (Note [Async sugar] in ``text/shorthand.py``) wrap
one instruction in an async-start/-update/-done chain; GPU dumps write reduce-scatter and
all-to-all this way. XLA's figures for each are asserted in ``test_cost.py``.
"""
from __future__ import annotations

__all__ = ["ASYNC_SUGAR"]

_ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""
ASYNC_SUGAR = {
    "call": """HloModule m
f {
  p = f32[16,8]{1,0} parameter(0)
  e = f32[16,8]{1,0} exponential(p)
  ROOT a = f32[16,8]{1,0} add(e, p)
}
ENTRY e {
  x = f32[16,8]{1,0} parameter(0)
  s = ((f32[16,8]{1,0}), f32[16,8]{1,0}, s32[]) call-start(x), to_apply=f
  ROOT d = f32[16,8]{1,0} call-done(s)
}""",
    "reduce": "HloModule m\n" + _ADD + """ENTRY e {
  x = f32[16,8]{1,0} parameter(0)
  z = f32[] constant(0)
  s = ((f32[16,8]{1,0}, f32[]), f32[16]{0}, s32[]) reduce-start(x, z), dimensions={1}, to_apply=add
  ROOT d = f32[16]{0} reduce-done(s)
}""",
    "custom_call": """HloModule m
ENTRY e {
  x = f32[16,8]{1,0} parameter(0)
  s = ((f32[16,8]{1,0}), f32[16,8]{1,0}, s32[]) custom-call-start(x), custom_call_target="foo"
  ROOT d = f32[16,8]{1,0} custom-call-done(s)
}""",
    "dot_with_update": """HloModule m
ENTRY e {
  x = f32[16,8]{1,0} parameter(0)
  y = f32[8,4]{1,0} parameter(1)
  s = ((f32[16,8]{1,0}, f32[8,4]{1,0}), f32[16,4]{1,0}, s32[]) dot-start(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  u = ((f32[16,8]{1,0}, f32[8,4]{1,0}), f32[16,4]{1,0}, s32[]) dot-update(s)
  ROOT d = f32[16,4]{1,0} dot-done(u)
}""",
    "fusion": """HloModule m
fc {
  p = f32[16,8]{1,0} parameter(0)
  q = f32[16,8]{1,0} parameter(1)
  ROOT t = f32[16,8]{1,0} multiply(p, q)
}
ENTRY e {
  x = f32[16,8]{1,0} parameter(0)
  y = f32[16,8]{1,0} parameter(1)
  s = ((f32[16,8]{1,0}, f32[16,8]{1,0}), f32[16,8]{1,0}, s32[]) fusion-start(x, y), kind=kLoop, calls=fc
  ROOT d = f32[16,8]{1,0} fusion-done(s)
}""",
    "collectives": "HloModule m, replica_count=4\n" + _ADD + """ENTRY e {
  x = f32[16,8]{1,0} parameter(0)
  s = ((f32[16,8]{1,0}), f32[4,8]{1,0}) reduce-scatter-start(x), replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=add
  d = f32[4,8]{1,0} reduce-scatter-done(s)
  t = ((f32[16,8]{1,0}), f32[16,8]{1,0}) all-to-all-start(x), replica_groups={{0,1,2,3}}, dimensions={0}
  u = f32[16,8]{1,0} all-to-all-done(t)
  ROOT r = (f32[4,8]{1,0}, f32[16,8]{1,0}) tuple(d, u)
}""",
}

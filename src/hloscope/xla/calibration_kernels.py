"""The HLO text of the kernels ``xla.calibrate`` times: each builder makes one module of a
family whose rate it measures (the Notes each names are in ``analysis/cpu_model.py`` and
``analysis/cpu_thunks.py``)."""
from __future__ import annotations

import numpy as np

__all__ = ["ADD", "GEN_TEMPLATE", "TOTAL_ORDER_LT", "eigen_dot_chain", "iota_operand", "loop_module"]


# An f32 operand ``x`` made inside the module from one scalar parameter ``s`` (an iota times it),
# so that a kernel's input costs no transfer.
GEN_TEMPLATE = """  s = f32[] parameter(0)
  i = f32[{dims}]{{{layout}}} iota(), iota_dimension={axis}
  b = f32[{dims}]{{{layout}}} broadcast(s), dimensions={{}}
  x = f32[{dims}]{{{layout}}} multiply(i, b)
"""


def iota_operand(dims: tuple[int, ...], axis: int = 0) -> str:
    """``GEN_TEMPLATE`` for an operand of ``dims`` (row-major), counting along ``axis``."""
    layout = ",".join(str(d) for d in reversed(range(len(dims))))
    return GEN_TEMPLATE.format(dims=",".join(map(str, dims)), layout=layout, axis=axis)


# The body of jax's float comparator (a total order over NaNs and signed zeros), for sorts.
TOTAL_ORDER_LT = """  zero = f32[] constant(0)
  qnan = f32[] constant(nan)
  izero = s32[] constant(0)
  mask = s32[] constant(2147483647)
  an = pred[] compare(a, a), direction=NE
  bn = pred[] compare(b, b), direction=NE
  az = pred[] compare(a, zero), direction=EQ
  bz = pred[] compare(b, zero), direction=EQ
  a0 = f32[] select(az, zero, a)
  b0 = f32[] select(bz, zero, b)
  a1 = f32[] select(an, qnan, a0)
  b1 = f32[] select(bn, qnan, b0)
  ai = s32[] bitcast-convert(a1)
  bi = s32[] bitcast-convert(b1)
  ax = s32[] xor(mask, ai)
  bx = s32[] xor(mask, bi)
  an2 = pred[] compare(ai, izero), direction=LT
  bn2 = pred[] compare(bi, izero), direction=LT
  ak = s32[] select(an2, ax, ai)
  bk = s32[] select(bn2, bx, bi)
  ROOT c = pred[] compare(ak, bk), direction=LT
"""
# An f32 add computation, the reducer of the reductions and scatters timed.
ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"


def eigen_dot_chain(links: int, batch: int) -> tuple[str, list[np.ndarray]]:
    """A chain of ``links`` dots of ``batch`` 32x32 by 32x16 matrices, each contracting its
    left operand's rows (a dot XLA:CPU leaves to Eigen, not YNNPACK), for Note [Eigen dots]."""
    lines = [f"  a = f32[{batch},32,32]{{2,1,0}} parameter(0)", f"  x0 = f32[{batch},32,16]{{2,1,0}} parameter(1)"]
    for i in range(1, links + 1):
        lines.append(f"  {'ROOT ' if i == links else ''}x{i} = f32[{batch},32,16]{{2,1,0}} dot(a, x{i - 1}), "
                     "lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_batch_dims={0}, rhs_batch_dims={0}")
    text = "HloModule calibrate_eigen_dots\nENTRY e {\n" + "\n".join(lines) + "\n}\n"
    eye = np.broadcast_to(np.eye(32, dtype=np.float32), (batch, 32, 32)).copy()
    return text, [eye, np.ones((batch, 32, 16), np.float32)]


def loop_module(links: int, trips: int, n: int) -> str:
    """A while loop of ``trips`` trips whose body runs two independent chains of ``links``
    links (a multiply and a reduction of f32[n] each; two chains, so that the body's thunks
    run as a graph, as a model's scan body does), for Note [Thunks in loops]."""
    state = f"(s32[], f32[{n}]{{0}}, f32[], f32[])"
    body = [f"  st = {state} parameter(0)", "  i = s32[] get-tuple-element(st), index=0",
            f"  p = f32[{n}]{{0}} get-tuple-element(st), index=1", "  one = s32[] constant(1)",
            "  i1 = s32[] add(i, one)", "  z = f32[] constant(0)"]
    body += [f"  r0_{w} = f32[] get-tuple-element(st), index={2 + w}" for w in range(2)]
    for k in range(1, links + 1):
        for w in range(2):
            body += [f"  b{k}_{w} = f32[{n}]{{0}} broadcast(r{k - 1}_{w}), dimensions={{}}",
                     f"  x{k}_{w} = f32[{n}]{{0}} multiply(p, b{k}_{w})",
                     f"  r{k}_{w} = f32[] reduce(x{k}_{w}, z), dimensions={{0}}, to_apply=add"]
    body.append(f"  ROOT o = {state} tuple(i1, p, r{links}_0, r{links}_1)")
    cond = [f"  st = {state} parameter(0)", "  i = s32[] get-tuple-element(st), index=0",
            f"  t = s32[] constant({trips})", "  ROOT c = pred[] compare(i, t), direction=LT"]
    entry = [f"  p = f32[{n}]{{0}} parameter(0)", "  i0 = s32[] constant(0)", "  c0 = f32[] constant(1)",
             "  c1 = f32[] constant(2)", f"  s = {state} tuple(i0, p, c0, c1)",
             f"  ROOT w = {state} while(s), condition=cond, body=body"]
    return (f"HloModule calibrate_loop\n{ADD}body {{\n" + "\n".join(body) + "\n}\ncond {\n" + "\n".join(cond)
            + "\n}\nENTRY e {\n" + "\n".join(entry) + "\n}\n")

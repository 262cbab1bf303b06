"""The interpret stage: run HLO modules with numpy, on one device or a grid of devices.

    import hloscope as hs
    from hloscope.interpret import run, RunOptions
    out = run(hs.load("m.txt"), [x, y], replicas=8)

Importing this package registers every handler (handlers.py, control_flow.py,
custom_calls.py, collective_handlers.py) with the registry, and the lockstep rules of
collectives (lockstep_collectives.py).
"""
from hloscope.interpret import collective_handlers as _collective_handlers  # noqa: F401  (registers handlers)
from hloscope.interpret import control_flow as _control_flow  # noqa: F401
from hloscope.interpret import custom_calls as _custom_calls  # noqa: F401
from hloscope.interpret import expanded_ops as _expanded_ops  # noqa: F401
from hloscope.interpret import handlers as _handlers  # noqa: F401
from hloscope.interpret import lockstep_collectives as _lockstep_collectives  # noqa: F401
from hloscope.interpret.custom_calls import custom_call_targets, register_custom_call
from hloscope.interpret.evaluator import EvaluationInterrupted, Hooks, Progress, RunOptions
from hloscope.interpret.registry import UNSUPPORTED, evaluates, implemented_opcodes
from hloscope.interpret.run import default_grid, run
from hloscope.interpret.values import Value

__all__ = [
    "EvaluationInterrupted", "Hooks", "Progress", "RunOptions", "UNSUPPORTED", "Value",
    "custom_call_targets", "default_grid", "evaluates", "implemented_opcodes",
    "register_custom_call", "run",
]

"""The exception hierarchy: every error hloscope raises for a user's input is a HloscopeError.

The CLI prints ``str(error)`` and exits with ``error.exit_code``; no traceback reaches the user.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hloscope.source import Span

__all__ = [
    "HloscopeError",
    "XlaCompileError",
    "ParseError",
    "VerifyError",
    "InterpretError",
    "EvaluationInterrupted",
    "EvaluationStopped",
    "UnsupportedOpcodeError",
    "UnsupportedCustomCallError",
    "InputError",
    "MissingDependencyError",
]


class HloscopeError(Exception):
    """Base of every user-facing error. ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class ParseError(HloscopeError):
    """A syntax error in HLO (or dump) text. ``str()`` renders ``file:line:col``, line and caret."""

    def __init__(self, message: str, span: Span | None = None) -> None:
        self.message = message
        self.span = span
        super().__init__(message)

    def __str__(self) -> str:
        if self.span is None:
            return f"error: {self.message}"
        return self.span.render(self.message)


class VerifyError(HloscopeError):
    """The module is syntactically fine but not well formed; carries every diagnostic found."""

    def __init__(self, diagnostics: list) -> None:  # list[Diagnostic]
        self.diagnostics = diagnostics
        super().__init__("\n".join(str(d) for d in diagnostics))


class InterpretError(HloscopeError):
    """Evaluating an instruction failed; the message names the computation and instruction.

    ``instruction`` (an ir Instruction) and ``computation`` (its computation's name) say where,
    when known; the evaluator fills them in for the innermost failing instruction."""

    def __init__(self, *args: object, instruction: object = None, computation: str | None = None) -> None:
        super().__init__(*args)
        self.instruction = instruction
        self.computation = computation


class EvaluationInterrupted(HloscopeError):
    """The user interrupted an evaluation (Ctrl-C); the message says where it was."""

    exit_code = 130


class EvaluationStopped(EvaluationInterrupted):
    """An observer ended the evaluation early because it has what it looked for (the first
    non-finite value, Note [Observers] in interpret/evaluator.py); not a failure."""

    exit_code = 0


class UnsupportedOpcodeError(InterpretError):
    """An opcode (or a form of it) this stage does not implement."""


class UnsupportedCustomCallError(UnsupportedOpcodeError):
    """A custom-call target with no registered handler."""


class InputError(HloscopeError):
    """The user's inputs (arrays, files, flags) do not fit the module."""


class MissingDependencyError(HloscopeError):
    """An optional dependency (such as jax) is needed for this path and is not installed."""


class XlaCompileError(HloscopeError):
    """XLA:CPU refused to compile or run a module (unknown custom call, GPU-only op, ...)."""

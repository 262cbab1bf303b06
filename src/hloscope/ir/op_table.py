"""``OpTable[T]``: the one registry type for every per-opcode table of every stage.

Each stage keeps its own table keyed by opcode (shape rules, interpreter handlers, lockstep
rules, dataflow rules, cost rules, the verifier's signature checks, ...), filled by a decorator
next to the code it registers::

    SHAPE_RULES: OpTable[Rule] = OpTable("shape rules", unsupported=NOT_INFERABLE)

    @SHAPE_RULES.register(Opcode.ADD, Opcode.SUBTRACT)
    def _binary(inst): ...

A table states how it treats an opcode it has no rule for, in one of two ways:

* ``unsupported``: a reason per opcode (``{Opcode.INFEED: "no host stream"}``). A table without
  a ``fallback`` must cover every opcode with a rule or a reason; ``gaps()`` lists the rest and
  tests/test_coverage.py fails on any.
* ``fallback``: a sentence saying what happens instead (the lockstep engine runs the handler
  once per device; dataflow defines a fresh value). Such a table need not cover every opcode.

Note [One rule for duplicates]
    Registering an opcode that already has a rule, or that has an ``unsupported`` reason, raises
    ``DuplicateRuleError`` naming both rules, whoever registers it and whatever the function.
    Before this type, three registries asserted, one raised unless the function was the same
    and three silently overwrote, so a second rule could shadow the first depending on import
    order. Replacing a rule on purpose says so: ``register(op, replace=True)`` (a user's own
    rule for an opcode), or ``override(op, rule)`` in tests, which restores the old rule.

Every table made is recorded (``op_tables()``), so the coverage test can check that it lists
them all: a new table cannot be added without the coverage test seeing it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Generic, TypeVar, overload

from hloscope.errors import HloscopeError
from hloscope.ir.opcode import Opcode

__all__ = ["DuplicateRuleError", "OpTable", "op_tables"]

T = TypeVar("T")
D = TypeVar("D")

_TABLES: list[OpTable[object]] = []


class DuplicateRuleError(HloscopeError):
    """An opcode was registered twice in one table without ``replace=True``."""


def _describe(rule: object) -> str:
    name = getattr(rule, "__qualname__", None) or repr(rule)
    module = getattr(rule, "__module__", None)
    return f"{module}.{name}" if module else name


class OpTable(Mapping[Opcode, T], Generic[T]):
    """A registry from opcode to one rule of type ``T``, with stated reasons for the opcodes
    it has no rule for (Note [One rule for duplicates]).

    It reads as a ``Mapping[Opcode, T]`` (``op in table``, ``table.get(op)``, ``table[op]``);
    it is written only through ``register``/``add``/``override``.
    """

    def __init__(self, name: str, *, unsupported: dict[Opcode, str] | None = None,
                 fallback: str | None = None, listed: bool = True) -> None:
        """``name`` is the stage's name in coverage reports; ``unsupported`` maps an opcode to
        why the stage has no rule for it (the dict is kept, not copied, so the stage may state
        more reasons later); ``fallback`` says what happens to an opcode without a rule, for
        tables that need not cover every opcode. ``listed=False`` keeps a throwaway table
        (a test's) out of ``op_tables()``."""
        self.name = name
        self.unsupported: dict[Opcode, str] = unsupported if unsupported is not None else {}
        self.fallback = fallback
        self._rules: dict[Opcode, T] = {}
        if listed:
            _TABLES.append(self)  # type: ignore[arg-type]  # T is erased at run time

    # --- reading (Mapping) --------------------------------------------------------------------
    def __getitem__(self, opcode: Opcode) -> T:
        return self._rules[opcode]

    # Mapping's own get and `in` go through __getitem__ (and a KeyError per miss) in Python;
    # stages ask once per instruction (570,000 gets in the report of a 319,000-instruction module).
    @overload
    def get(self, opcode: Opcode, /) -> T | None: ...
    @overload
    def get(self, opcode: Opcode, /, default: T | D) -> T | D: ...
    def get(self, opcode: Opcode, /, default: object = None) -> object:
        return self._rules.get(opcode, default)

    def __contains__(self, opcode: object) -> bool:
        return opcode in self._rules

    def __iter__(self) -> Iterator[Opcode]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def __repr__(self) -> str:
        return f"OpTable({self.name!r}, {len(self._rules)} rules, {len(self.unsupported)} unsupported)"

    # --- writing ------------------------------------------------------------------------------
    def add(self, opcode: Opcode, rule: T, *, replace: bool = False) -> None:
        """Make ``rule`` the rule of ``opcode``. Raises ``DuplicateRuleError`` when the opcode
        already has a rule or an unsupported reason, unless ``replace`` (which also drops the
        reason)."""
        if not replace:
            if opcode in self._rules:
                raise DuplicateRuleError(
                    f"{self.name}: {opcode.text} already has the rule {_describe(self._rules[opcode])}; "
                    f"cannot also register {_describe(rule)} (pass replace=True to replace it)")
            if opcode in self.unsupported:
                raise DuplicateRuleError(
                    f"{self.name}: {opcode.text} is listed as unsupported "
                    f"({self.unsupported[opcode]}); remove that entry to register {_describe(rule)}")
        else:
            self.unsupported.pop(opcode, None)
        self._rules[opcode] = rule

    def register(self, *opcodes: Opcode, replace: bool = False) -> Callable[[T], T]:
        """Decorator: make the decorated function the rule of every opcode in ``opcodes``."""

        def decorate(rule: T) -> T:
            for op in opcodes:
                self.add(op, rule, replace=replace)
            return rule

        return decorate

    @contextmanager
    def override(self, opcode: Opcode, rule: T) -> Iterator[None]:
        """Within the ``with`` block, ``rule`` is the rule of ``opcode``; afterwards the table
        is as before (for tests that plant a wrong rule on purpose)."""
        had_rule = opcode in self._rules
        old_rule = self._rules.get(opcode)
        old_reason = self.unsupported.get(opcode)
        self.add(opcode, rule, replace=True)
        try:
            yield
        finally:
            if had_rule:
                self._rules[opcode] = old_rule  # type: ignore[assignment]  # had_rule: a T
            else:
                del self._rules[opcode]
            if old_reason is not None:
                self.unsupported[opcode] = old_reason

    # --- coverage -----------------------------------------------------------------------------
    def reason(self, opcode: Opcode) -> str | None:
        """Why this table has no rule for ``opcode``, or None when it has one (or no reason)."""
        return None if opcode in self._rules else self.unsupported.get(opcode)

    def gaps(self) -> list[Opcode]:
        """Opcodes with neither a rule nor a reason, in table order; always empty for a table
        with a ``fallback``."""
        if self.fallback is not None:
            return []
        return [op for op in Opcode if op not in self._rules and op not in self.unsupported]


def op_tables() -> list[OpTable[object]]:
    """Every ``OpTable`` made so far, in creation order (a stage's tables exist once its
    module has been imported)."""
    return list(_TABLES)

"""Computation: an ordered list of instructions with parameters and a root, and the editing API
that keeps ``users`` correct (add, replace and remove instructions; ``replace_all_uses_with``).

Note [Editing the IR]
    Edits go through ``Computation`` (``add_instruction``, ``replace_instruction``,
    ``remove_instruction``, ``replace_all_uses_with``, ``replace_operand``, ``set_root``) or the
    same names on ``Instruction``, as in XLA's ``HloComputation``/``HloInstruction`` and
    torch.fx's ``Graph``/``Node``. Users are derived, not stored on instructions: the first
    ``users()`` call builds the map in one pass, and every edit then updates it in place (no
    edit rescans the computation, so a pass of k edits costs O(k * users), not O(k * n)).
    Writing ``inst.operands[i] = x`` directly bypasses the map; only the list's identity and
    length are checked, so use ``replace_operand`` instead.

    ::

        before:  a ──> b ──> ROOT c          replace_instruction(b, b2)
        after:   a ──> b2 ──> ROOT c         users(a) == [b2], users(b2) == [c], b detached
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from hloscope.ir.instruction import Instruction
from hloscope.ir.opcode import Opcode

if TYPE_CHECKING:
    from hloscope.ir.module import Module
    from hloscope.source import SpanLike

__all__ = ["Computation"]

_NO_USERS: list[Instruction] = []


def _unique(instructions: Iterable[Instruction]) -> list[Instruction]:
    return list({id(i): i for i in instructions}.values())


class Computation:
    """A named HLO computation.

    ``instructions`` keeps the written order, which for a scheduled module is the schedule.
    ``parameters[i]`` is the instruction ``parameter(i)``. ``users()`` is computed on demand
    (one pass) and kept correct by the editing methods (Note [Editing the IR]).
    """

    __slots__ = ("name", "instructions", "root", "parameters", "is_entry", "attrs", "module", "span",
                 "_users", "_users_key", "_by_name", "_control_successors")

    def __init__(
        self,
        name: str,
        instructions: list[Instruction],
        root: Instruction,
        *,
        is_entry: bool = False,
        attrs: dict[str, Any] | None = None,
        span: SpanLike | None = None,
        parameters: list[Instruction] | None = None,
    ) -> None:
        self.name = name
        self.instructions = instructions
        self.root = root
        self.is_entry = is_entry
        self.attrs: dict[str, Any] = attrs or {}  # e.g. execution_thread
        self.module: Module | None = None
        self.span = span
        if parameters is not None:
            # A reader that pointed each instruction at this computation as it made them (made
            # with ``Computation.__new__`` first) gives the parameters it met: no second pass.
            params = parameters
        else:
            parameter = Opcode.PARAMETER  # (an enum member looked up per instruction costs 4% of a parse)
            params = []
            for inst in instructions:  # one pass: a module of thousands of small reducers pays per line
                inst.computation = self
                if inst.opcode is parameter:
                    params.append(inst)
        if len(params) > 1:
            params.sort(key=lambda p: p.attrs["parameter_number"])
        self.parameters: list[Instruction] = params
        self._users: dict[Instruction, list[Instruction]] | None = None
        self._users_key = -1
        self._control_successors: dict[Instruction, list[Instruction]] = {}
        self._by_name: dict[str, Instruction] | None = None

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    def instruction(self, name: str) -> Instruction:
        """The instruction called ``name``; KeyError if none."""
        if self._by_name is None or len(self._by_name) != len(self.instructions):
            self._by_name = {i.name: i for i in self.instructions}
        return self._by_name[name]

    def users(self, instruction: Instruction) -> list[Instruction]:
        """Instructions of this computation that use ``instruction`` as an operand, each once:
        in instruction order for a computation as read, with users added by edits at the end
        (as XLA's ``AddUser``). The list is shared; do not modify it."""
        return self._user_map().get(instruction, _NO_USERS)

    def _user_map(self) -> dict[Instruction, list[Instruction]]:
        key = id(self.instructions) ^ len(self.instructions)
        if self._users is None or self._users_key != key:
            users: dict[Instruction, list[Instruction]] = {i: [] for i in self.instructions}
            self._control_successors = {}
            for inst in self.instructions:
                if "control-predecessors" in inst.attrs:
                    self._add_control_edges(inst)
                seen = set()
                for op in inst.operands:
                    if id(op) not in seen:
                        seen.add(id(op))
                        users.setdefault(op, []).append(inst)
            self._users = users
            self._users_key = key
        return self._users

    # --- editing (Note [Editing the IR]) ------------------------------------------------------
    def _edited(self, users: dict[Instruction, list[Instruction]]) -> None:
        """Record that ``users`` (the map before the edit, updated by it) matches the list now."""
        self._users = users
        self._users_key = id(self.instructions) ^ len(self.instructions)
        self._by_name = None
        if self.module is not None:
            self.module.invalidate_caches()

    def _check_operands(self, inst: Instruction, operands: Iterable[Instruction]) -> None:
        for op in operands:
            if op.computation is not self:
                where = op.computation.name if op.computation is not None else "no computation"
                raise ValueError(f"{inst.name}'s operand {op.name} belongs to {where}, not {self.name}")

    def add_instruction(self, inst: Instruction, *, before: Instruction | None = None) -> Instruction:
        """Add ``inst`` (whose operands must already be in this computation) at the end, or
        just before ``before``; returns it. A ``parameter`` joins ``parameters`` at its number.
        Names are not made unique here (XLA's module does that when it reads text)."""
        if inst.computation is not None:
            raise ValueError(f"{inst.name} already belongs to computation {inst.computation.name}")
        self._check_operands(inst, inst.operands)
        users = self._user_map()
        if before is None:
            self.instructions.append(inst)
        else:
            self.instructions.insert(self._position(before), inst)
        inst.computation = self
        users[inst] = []
        for op in _unique(inst.operands):
            users[op].append(inst)
        self._add_control_edges(inst)
        if inst.opcode is Opcode.PARAMETER:
            self.parameters.append(inst)
            self.parameters.sort(key=lambda p: p.attrs["parameter_number"])
        self._edited(users)
        return inst

    def remove_instruction(self, inst: Instruction) -> None:
        """Remove ``inst``, which must have no users and not be the root or a parameter;
        control dependencies on it are dropped (XLA's ``RemoveInstruction``)."""
        users = self._user_map()
        if inst.computation is not self:
            raise ValueError(f"{inst.name} is not an instruction of {self.name}")
        if users.get(inst):
            names = ", ".join(u.name for u in users[inst])
            raise ValueError(f"cannot remove {inst.name}: it is still used by {names} "
                             f"(replace its uses first, e.g. replace_all_uses_with)")
        if inst is self.root:
            raise ValueError(f"cannot remove {inst.name}: it is the root of {self.name} (set_root first)")
        if inst.opcode is Opcode.PARAMETER:
            raise ValueError(f"cannot remove {inst.name}: parameters are part of {self.name}'s signature")
        del self.instructions[self._position(inst)]
        self._detach(inst, users)

    def _detach(self, inst: Instruction, users: dict[Instruction, list[Instruction]]) -> None:
        """Forget ``inst``, already out of the instruction list, in the user map."""
        for op in _unique(inst.operands):
            users[op].remove(inst)
        del users[inst]
        self._drop_control_deps(inst)
        inst.computation = None
        self._edited(users)

    def replace_operand(self, user: Instruction, index: int, new: Instruction) -> None:
        """Make ``new`` operand ``index`` of ``user`` (XLA's ``ReplaceOperandWith``)."""
        self._check_operands(user, [new])
        users = self._user_map()
        old = user.operands[index]
        user.operands[index] = new
        if old is not new:
            if all(o is not old for o in user.operands):
                users[old].remove(user)
            if sum(o is new for o in user.operands) == 1:
                users[new].append(user)
        self._edited(users)

    def replace_all_uses_with(self, old: Instruction, new: Instruction) -> list[Instruction]:
        """Make every user of ``old`` use ``new`` instead, and ``new`` the root if ``old`` was
        (XLA's ``ReplaceAllUsesWith``, torch.fx's ``Node.replace_all_uses_with``). Returns the
        users changed. ``old`` stays in the computation, now unused."""
        self._check_operands(old, [new])
        if old is new:
            return []
        users = self._user_map()
        changed = users.get(old, [])
        new_users = users[new]
        for user in changed:
            user.operands = [new if o is old else o for o in user.operands]
            if user not in new_users:
                new_users.append(user)
        users[old] = []
        if self.root is old:
            self.root = new
        self._edited(users)
        return list(changed)

    def replace_instruction(self, old: Instruction, new: Instruction) -> Instruction:
        """Replace ``old`` by ``new`` everywhere: ``new`` takes ``old``'s place in the
        instruction order (added if not yet in the computation), its users, its control
        dependencies and, if ``old`` was the root, the root; ``old`` is removed. The shapes
        must agree up to layout (XLA's ``ReplaceInstruction``). Returns ``new``."""
        if old.shape.to_text(layout=False) != new.shape.to_text(layout=False):
            raise ValueError(f"cannot replace {old.name} ({old.shape.to_text(layout=False)}) by "
                             f"{new.name} ({new.shape.to_text(layout=False)}): shapes differ")
        if old.opcode is Opcode.PARAMETER:
            raise ValueError(f"cannot replace {old.name}: parameters are part of {self.name}'s signature")
        if old is self.root:
            self.root = new
        if new.computation is None:
            self._check_operands(new, new.operands)
            users = self._user_map()
            position = self._position(old)
            new.computation = self
            users[new] = []
            for op in _unique(new.operands):
                users[op].append(new)
            self._add_control_edges(new)
            self.replace_all_uses_with(old, new)
            self._move_control_deps(old, new)
            self.instructions[position] = new  # in place: no shift of the list
            self._detach(old, users)
            return new
        self.replace_all_uses_with(old, new)
        self._move_control_deps(old, new)
        self.remove_instruction(old)
        return new

    def set_root(self, inst: Instruction) -> None:
        """Make ``inst``, an instruction of this computation, the root."""
        self._check_operands(inst, [inst])
        self.root = inst

    def _position(self, inst: Instruction) -> int:
        # list.index compares by identity first (Instruction has no __eq__), in C.
        try:
            return self.instructions.index(inst)
        except ValueError:
            raise ValueError(f"{inst.name} is not an instruction of {self.name}") from None

    # Control edges: ``attrs["control-predecessors"]`` lists an instruction's predecessors; the
    # successors are kept in a map built with the user map, so edits never scan for them.
    def _add_control_edges(self, inst: Instruction) -> None:
        for pred in inst.attrs.get("control-predecessors", ()):
            self._control_successors.setdefault(pred, []).append(inst)

    def _drop_control_deps(self, inst: Instruction) -> None:
        successors = self._control_successors
        for pred in inst.attrs.pop("control-predecessors", ()):
            if inst in successors.get(pred, ()):
                successors[pred].remove(inst)
        for succ in successors.pop(inst, ()):
            preds = [p for p in succ.attrs.get("control-predecessors", ()) if p is not inst]
            if preds:
                succ.attrs["control-predecessors"] = preds
            else:
                succ.attrs.pop("control-predecessors", None)

    def _move_control_deps(self, old: Instruction, new: Instruction) -> None:
        successors = self._control_successors
        preds = old.attrs.pop("control-predecessors", None)
        if preds:
            mine = new.attrs.setdefault("control-predecessors", [])
            for pred in preds:
                if old in successors.get(pred, ()):
                    successors[pred].remove(old)
                if pred is not new and pred not in mine:
                    mine.append(pred)
                    successors.setdefault(pred, []).append(new)
        for succ in successors.pop(old, ()):
            succ.attrs["control-predecessors"] = list(dict.fromkeys(
                new if p is old else p for p in succ.attrs["control-predecessors"]))
            if succ not in successors.setdefault(new, []):
                successors[new].append(succ)


    @property
    def is_fusion_computation(self) -> bool:
        mod = self.module
        return mod is not None and self in mod.fusion_computations()

    @property
    def program_shape(self) -> tuple[list[Any], Any]:
        """(parameter shapes, result shape)."""
        return [p.shape for p in self.parameters], self.root.shape

    def to_text(self, options: Any = None, **overrides: Any) -> str:
        from hloscope.ir.printer import computation_to_text

        return computation_to_text(self, options, **overrides)

    def __repr__(self) -> str:
        entry = "ENTRY " if self.is_entry else ""
        return f"<Computation {entry}{self.name}: {len(self.instructions)} instructions>"

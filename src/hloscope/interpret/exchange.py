"""Collectives across workers: the board that matches contributions, and a worker's exchange.

Note [The exchange board]
    A device grid spread over workers (processes, perhaps on other machines: ray_executor.py)
    meets at collectives through one *board*. Each worker's driver submits, for a group with
    members elsewhere, its local members' contributions (Note [Members on other workers] in
    driver.py). The group's *leader* is the worker holding the group's first member (rank
    order); the others put their contributions where the leader can fetch them (Ray's object
    store: a handle, not the arrays, goes through the board). When every worker of the group
    has submitted, the board tells the leader, which fetches the contributions, calls the
    ``Rendezvous``' pure ``combine`` on all of them in rank order (the function the local
    drivers call, so the bits are the same) and puts each worker's shares back; the board
    tells each worker where its shares are.

        worker 1 ──put──► contributions ─┐           (handles only go through the board)
        worker 2 ──put──► contributions ─┤
        worker 0 (leader) ◄──── gather ──┘ combine ──put──► shares ──► workers 1, 2

    Meetings are named by the collective (``driver.wire_key``: its instruction or channel),
    the group, and how many times this group has met there before (a collective in a loop
    meets once per iteration); every worker counts the same. A worker only waits on the board
    when none of its devices can run. When every worker still running waits and none has
    news, no collective can ever complete: the board says so to all of them, naming where each
    device waits (a deadlock across workers, reported like the local driver's).

The board (``Board``) and a worker's side of it (``BoardExchange``) are plain Python over a
``Transport`` (put, get, call the board); ray_worker.py carries them over Ray, and
``InProcessBoard`` over threads of one process (for tests).
"""
from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

from hloscope.errors import InterpretError
from hloscope.interpret.driver import Completion, Rendezvous, wire_key
from hloscope.interpret.values import Value

__all__ = ["Board", "BoardExchange", "Event", "ExchangeStats", "InProcessBoard", "Result", "Submission",
           "Transport"]

Key = tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class Submission:
    """A worker's part of a meeting: ``handle`` to its contributions (None from the leader,
    which keeps its own), the leader, and every worker of the group."""

    key: Key
    leader: int
    workers: tuple[int, ...]
    handle: Any


@dataclasses.dataclass(frozen=True)
class Result:
    """A leader's answer for a meeting: each other worker's handle to its shares, or, when
    the combine failed, ``error`` for all of them."""

    key: Key
    handles: dict[int, Any]
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class Event:
    """News for a worker: "gather" (to a leader: the others' handles), "shares" (its handle),
    "failed" (the leader's combine failed: the message) or "deadlock" (the message)."""

    kind: str
    key: Key | None
    payload: Any


@dataclasses.dataclass
class _Meeting:
    leader: int
    workers: frozenset[int]
    handles: dict[int, Any] = dataclasses.field(default_factory=dict)


class Board:
    """Matches submissions into meetings and holds each worker's news (Note [The exchange
    board]). Not thread-safe: the Ray coordinator runs it on one event loop, InProcessBoard
    under a lock."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.meetings: dict[Key, _Meeting] = {}
        self.mail: dict[int, list[Event]] = {w: [] for w in range(workers)}
        self.blocked: dict[int, dict[int, str]] = {}  # worker -> where each waiting device is
        self.done: set[int] = set()

    def post(self, worker: int, submissions: Sequence[Submission], results: Sequence[Result]) -> None:
        """Take ``worker``'s submissions and answers; news goes to the mail of who needs it."""
        for sub in submissions:
            meeting = self.meetings.get(sub.key)
            if meeting is None:
                meeting = self.meetings[sub.key] = _Meeting(sub.leader, frozenset(sub.workers))
            meeting.handles[worker] = sub.handle
            if len(meeting.handles) == len(meeting.workers):
                del self.meetings[sub.key]
                others = {w: h for w, h in meeting.handles.items() if w != meeting.leader}
                self.mail[meeting.leader].append(Event("gather", sub.key, others))
        for res in results:
            for w, handle in res.handles.items():
                self.mail[w].append(Event("failed", res.key, res.error) if res.error is not None
                                    else Event("shares", res.key, handle))

    def take(self, worker: int) -> list[Event]:
        """``worker``'s news, removed from its mail."""
        events, self.mail[worker] = self.mail[worker], []
        if events:
            self.blocked.pop(worker, None)
        return events

    def block(self, worker: int, waiting: dict[int, str]) -> None:
        """``worker`` waits for news; ``waiting``: where each of its waiting devices is."""
        self.blocked[worker] = dict(waiting)
        self._check_deadlock()

    def finish(self, worker: int) -> None:
        """``worker``'s devices have all finished."""
        self.done.add(worker)
        self.blocked.pop(worker, None)
        self._check_deadlock()

    def _check_deadlock(self) -> None:
        live = [w for w in range(self.workers) if w not in self.done]
        if not live or not all(w in self.blocked and not self.mail[w] for w in live):
            return
        where = sorted((d, inst, w) for w in live for d, inst in self.blocked[w].items())
        message = ("collective deadlock across workers: "
                   + ", ".join(f"device {d} at {inst} (worker {w})" for d, inst, w in where)
                   + (f"; workers {sorted(self.done)} finished" if self.done else "")
                   + " (the devices disagree on the next collective, or a group member never reaches it)")
        for w in live:
            self.mail[w].append(Event("deadlock", None, message))


class Transport(Protocol):
    """How a worker reaches the board and the other workers' values."""

    def put(self, value: Any) -> Any:
        """Make ``value`` fetchable by another worker; returns its handle."""
        ...

    def get(self, handle: Any) -> Any:
        """The value behind a handle another worker put."""
        ...

    def call(self, submissions: list[Submission], results: list[Result],
             waiting: dict[int, str] | None) -> list[Event]:
        """Post to the board and take this worker's news; with ``waiting``, block until
        there is some."""
        ...


@dataclasses.dataclass
class ExchangeStats:
    """Where a worker's collective time went: meetings across workers, seconds blocked on the
    board (waiting for the others to arrive), moving values (put and get) and combining."""

    meetings: int = 0
    waiting_seconds: float = 0.0
    transfer_seconds: float = 0.0
    combine_seconds: float = 0.0
    bytes_sent: int = 0

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class _Open:
    members: list[int]  # the group's members on this worker
    request: Rendezvous
    group: list[int]
    workers: tuple[int, ...]
    leader: int
    values: dict[int, Value] | None  # the leader keeps its own contributions


def _nbytes(values: dict[int, Any]) -> int:
    def size(v: Any) -> int:
        return sum(size(e) for e in v) if isinstance(v, tuple) else int(getattr(v, "nbytes", 0))
    return sum(size(v) for v in values.values())


class BoardExchange:
    """A worker's ``driver.Exchange`` over a board (Note [The exchange board]). ``owner[d]``
    is the worker holding device ``d``."""

    def __init__(self, worker: int, owner: Sequence[int], transport: Transport) -> None:
        self.worker = worker
        self.owner = list(owner)
        self.transport = transport
        self.count: Counter[Key] = Counter()
        self.open: dict[Key, _Open] = {}
        self.inbox: list[Event] = []
        self.stats = ExchangeStats()

    def submit(self, request: Rendezvous, group: list[int], values: dict[int, Value]) -> None:
        base = (*wire_key(request.inst), tuple(group))
        key = (*base, self.count[base])
        self.count[base] += 1
        workers = tuple(sorted({self.owner[d] for d in group}))
        leader = self.owner[group[0]]
        mine = leader == self.worker
        started = time.perf_counter()
        handle = None if mine else self.transport.put(values)
        if not mine:
            self.stats.bytes_sent += _nbytes(values)
        self.stats.transfer_seconds += time.perf_counter() - started
        self.open[key] = _Open(list(values), request, group, workers, leader, values if mine else None)
        self._call([Submission(key, leader, workers, handle)], [], None)

    def wait(self, waiting: dict[int, str]) -> list[Completion]:
        while True:
            done: list[Completion] = []
            inbox, self.inbox = self.inbox, []
            for event in inbox:
                done += self._receive(event)
            if done:
                return done
            started = time.perf_counter()
            self._call([], [], waiting)
            self.stats.waiting_seconds += time.perf_counter() - started

    def _call(self, submissions: list[Submission], results: list[Result], waiting: dict[int, str] | None) -> None:
        self.inbox += self.transport.call(submissions, results, waiting)

    def _receive(self, event: Event) -> list[Completion]:
        if event.kind == "deadlock":
            error = InterpretError(event.payload)
            opened, self.open = self.open, {}
            return [(o.members, error) for o in opened.values()]
        assert event.key is not None
        o = self.open.pop(event.key)
        self.stats.meetings += 1
        if event.kind == "failed":
            return [(o.members, InterpretError(f"{o.request.inst.name}: the collective failed on worker "
                                               f"{o.leader}, which combines group {o.group}: {event.payload}"))]
        started = time.perf_counter()
        if event.kind == "shares":
            shares = self.transport.get(event.payload)
            self.stats.transfer_seconds += time.perf_counter() - started
            return [(o.members, shares)]
        # "gather": this worker leads the group.
        values = dict(o.values or {})
        for handle in event.payload.values():
            values.update(self.transport.get(handle))
        fetched = time.perf_counter()
        self.stats.transfer_seconds += fetched - started
        others = [w for w in o.workers if w != self.worker]
        try:
            outs = o.request.combine([values[d] for d in o.group], o.group)
        except Exception as e:
            self._call([], [Result(event.key, dict.fromkeys(others), error=f"{type(e).__name__}: {e}")], None)
            return [(o.members, e)]
        del values
        combined = time.perf_counter()
        self.stats.combine_seconds += combined - fetched
        by_worker: dict[int, dict[int, Value]] = {}
        for d, out in zip(o.group, outs, strict=True):
            by_worker.setdefault(self.owner[d], {})[d] = out
        handles = {w: self.transport.put(by_worker[w]) for w in others}
        self.stats.bytes_sent += sum(_nbytes(by_worker[w]) for w in others)
        self.stats.transfer_seconds += time.perf_counter() - combined
        self._call([], [Result(event.key, handles)], None)
        return [(o.members, by_worker[self.worker])]


class InProcessBoard:
    """A board shared by threads of this process: each thread's ``transport(worker)`` puts by
    reference (for tests of the exchange without Ray)."""

    def __init__(self, workers: int) -> None:
        self.board = Board(workers)
        self.lock = threading.Condition()

    def transport(self, worker: int) -> Transport:
        return _ThreadTransport(self, worker)

    def finish(self, worker: int) -> None:
        with self.lock:
            self.board.finish(worker)
            self.lock.notify_all()


@dataclasses.dataclass
class _ThreadTransport:
    shared: InProcessBoard
    worker: int

    def put(self, value: Any) -> Any:
        return value

    def get(self, handle: Any) -> Any:
        return handle

    def call(self, submissions: list[Submission], results: list[Result],
             waiting: dict[int, str] | None) -> list[Event]:
        with self.shared.lock:
            board = self.shared.board
            board.post(self.worker, submissions, results)
            self.shared.lock.notify_all()
            if waiting is None:
                return board.take(self.worker)
            board.block(self.worker, waiting)
            self.shared.lock.notify_all()
            while not board.mail[self.worker]:
                self.shared.lock.wait()
            return board.take(self.worker)

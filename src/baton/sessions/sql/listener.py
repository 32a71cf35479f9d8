"""PostgreSQL LISTEN and NOTIFY: wake-ups between processes sharing the database.

Two channels, one per kind of change (see `baton.sessions.wakeups`): `baton` carries
work (a running invocation released, a question with a deadline opened), which wakes
every subscriber; `baton_questions` carries every other change to questions, which
only pending streams and webhook senders want. Each NOTIFY's payload is the app's name.
Channels are scoped to the deployment's schema (`scoped`): deployments in other schemas
of the same database neither wake this one's workers nor are woken by them.
A step that changes questions is announced (`Announcer`), and every release of a
running invocation sends one itself. One connection per store listens to `baton` while
anything subscribes, and to `baton_questions` too while a subscriber wants questions,
and turns each notification into a local wake-up. While it listens to questions its
connection is named `WATCHING` (pg_stat_activity's `application_name`), and a store
sends nothing on `baton_questions` while its last NOTIFY, at most `_WATCHERS_FRESH`
ago, found no such connection: under load a process with no stream anywhere then sends
one NOTIFY a second, not one every 10 ms (0.2-0.6 a HITL run, each a transaction and a
wake-up of every listening backend). When the connection drops (a database
restart) it reconnects with backoff and then wakes everyone once, since notifications
sent meanwhile were lost; it wakes the question subscribers once too when it starts
listening to their channel.

Why two: every NOTIFY wakes every process listening to its channel, and under load
nearly every HTTP request answers or opens a question. On one channel, each server's
worker woke for every other server's answers (and ran a round of queries four times a
second), and every process took a wake-up per announcement it could not use:
`bench/http_bench.py` with two server processes on PostgreSQL spent more CPU per
request than with one, server and database alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, final

from sqlalchemy import (
    Text,
    bindparam,
    case,
    column,
    exists,
    func,
    literal,
    or_,
    select,
    table,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import URL
from sqlalchemy.sql.elements import ClauseElement, ColumnElement

from baton.errors import StoreUnavailableError
from baton.sessions.sql.answering import NO_FLUSH_WAIT
from baton.sessions.sql.executors import OneStatement
from baton.sessions.sql.postgres import asyncpg_connect_args
from baton.sessions.wakeups import Wakeups

__all__ = [
    "ANNOUNCE",
    "CHANNEL",
    "MARK_WATCHING",
    "QUESTIONS_CHANNEL",
    "SCOPED_CHANNELS",
    "WATCHING",
    "Announcer",
    "PostgresListener",
    "scoped",
]

CHANNEL = "baton"
"""Work: a running invocation released, a question with a deadline opened."""
QUESTIONS_CHANNEL = "baton_questions"
"""Every other change to questions (opened, answered, closed by a rewind)."""


def scoped(channel: str | ColumnElement[str]) -> ColumnElement[str]:
    """The name `channel` (`CHANNEL` or `QUESTIONS_CHANNEL`) goes by on the database: the
    kind, a space and the md5 of the connection's schema (`current_schema()`, which a
    store's `search_path` sets). By the schema's hash, not its name: a channel name is
    cut at 63 bytes, and this one is at most 48 whatever the schema is called. NOTIFY and
    LISTEN both take it as it is (`pg_notify` and asyncpg quote it; no case folding)."""
    return func.concat(channel, " ", func.md5(func.current_schema()))


_RETRY_FIRST = 0.2
_RETRY_MOST = 5.0

_log = logging.getLogger("baton")


@final
class PostgresListener:
    """Listens on `CHANNEL` for one store while `start`ed, and on `QUESTIONS_CHANNEL`
    while its subscribers want questions; `stop` ends it."""

    def __init__(self, url: URL, wakeups: Wakeups) -> None:
        self._url = url
        self._wakeups = wakeups
        self._task: asyncio.Task[None] | None = None
        self._questions_channel = QUESTIONS_CHANNEL  # `scoped`, once connected
        self._interest_changed = asyncio.Event()
        wakeups.on_interest_change = self._interest_changed.set

    def start(self) -> None:
        """Begin listening in the background (once; later calls do nothing)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._listen_forever())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _listen_forever(self) -> None:
        delay = _RETRY_FIRST
        while True:
            try:
                await self._listen_once()
                delay = _RETRY_FIRST
            except Exception as error:  # refused, reset, or one of asyncpg's own errors
                _log.debug("baton: LISTEN connection failed (%s); retrying", error)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RETRY_MOST)

    async def _listen_once(self) -> None:
        # Imported by name: the postgres extra is installed whenever a PostgreSQL URL is used.
        asyncpg: Any = importlib.import_module("asyncpg")
        connecting = asyncio.ensure_future(asyncpg.connect(**asyncpg_connect_args(self._url)))
        try:
            connection: Any = await asyncio.shield(connecting)
        except asyncio.CancelledError:
            # Stopped while connecting: close the connection when it arrives, not leak it.
            with contextlib.suppress(Exception):
                await (await connecting).close(timeout=1)
            raise
        closed = asyncio.get_running_loop().create_future()

        def on_close(_connection: Any) -> None:
            if not closed.done():
                closed.set_result(None)

        connection.add_termination_listener(on_close)
        try:
            work, self._questions_channel = await connection.fetchrow(SCOPED_CHANNELS)
            await connection.add_listener(work, self._on_work)
            listening = self._wakeups.wants_questions
            if listening:
                await self._start_watching(connection)
            # Anything sent while we were not listening is lost: look once now.
            self._wakeups.notify()
            await self._follow_interest(connection, closed, listening=listening)
        finally:
            with contextlib.suppress(Exception):
                await connection.close(timeout=1)

    async def _follow_interest(
        self, connection: Any, closed: asyncio.Future[None], *, listening: bool
    ) -> None:
        """Listen to `QUESTIONS_CHANNEL` exactly while a subscriber wants questions,
        until the connection closes."""
        while not closed.done():
            self._interest_changed.clear()
            wanted = self._wakeups.wants_questions
            if wanted and not listening:
                await self._start_watching(connection)
                # Changes made before the LISTEN took effect went unheard: look once.
                self._wakeups.notify(questions_only=True)
            elif listening and not wanted:
                await connection.remove_listener(self._questions_channel, self._on_questions)
                await connection.execute("RESET application_name")
            listening = wanted
            changed = asyncio.ensure_future(self._interest_changed.wait())
            try:
                await asyncio.wait((closed, changed), return_when=asyncio.FIRST_COMPLETED)
            finally:
                changed.cancel()

    async def _start_watching(self, connection: Any) -> None:
        """Listen to `QUESTIONS_CHANNEL`, named `WATCHING` first so that every process's
        `Announcer` sees someone listens; look again once each of them has seen it: a
        change it did not announce, trusting an older look (`_WATCHERS_FRESH`), is then
        committed."""
        await connection.execute(MARK_WATCHING)
        await connection.add_listener(self._questions_channel, self._on_questions)
        loop = asyncio.get_running_loop()
        loop.call_later(_WATCHERS_FRESH + _LOOK_AGAIN_AFTER, self._on_questions)

    def _on_work(self, *_args: object) -> None:
        self._wakeups.notify()

    def _on_questions(self, *_args: object) -> None:
        self._wakeups.notify(questions_only=True)


WATCHING = scoped(QUESTIONS_CHANNEL)
"""The `application_name` of a listener connection while it listens to
`QUESTIONS_CHANNEL`: what an `Announcer` on the same schema looks for before it sends
there (the channel's scoped name; watchers of other schemas of the database do not
count)."""


def _compiled(statement: ClauseElement) -> str:
    """`statement` as PostgreSQL text with its constants inline (it binds nothing)."""
    return str(
        statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
    )


MARK_WATCHING = _compiled(select(func.set_config("application_name", WATCHING, False)))

SCOPED_CHANNELS = _compiled(select(scoped(CHANNEL), scoped(QUESTIONS_CHANNEL)))
"""`CHANNEL`'s and `QUESTIONS_CHANNEL`'s names on the connection's schema (one row)."""

_WATCHERS_FRESH = 1.0
"""Seconds an `Announcer` trusts its last look that no process listens to questions."""

_LOOK_AGAIN_AFTER = 0.25
"""Seconds after `_WATCHERS_FRESH` a process that starts listening to questions looks
once more (see `PostgresListener._start_watching`)."""

_NOTICES = (
    func.unnest(bindparam("channels", type_=ARRAY(Text)), bindparam("app_names", type_=ARRAY(Text)))
    .table_valued("channel", "app_name")
    .render_derived(name="notices")
)
_ACTIVITY = table(
    "pg_stat_activity",
    column("application_name", Text),
    column("datname", Text),
    schema="pg_catalog",
)
_WATCHED = select(
    exists()
    .where(_ACTIVITY.c.application_name == WATCHING)
    .where(_ACTIVITY.c.datname == func.current_database())
    .label("watched")
).cte("watched")
ANNOUNCE = select(
    _WATCHED.c.watched,
    case(
        (
            _NOTICES.c.channel.is_not(None),
            func.pg_notify(scoped(_NOTICES.c.channel), _NOTICES.c.app_name),
        )
    ),
    NO_FLUSH_WAIT,
).select_from(
    _WATCHED.outerjoin(_NOTICES, or_(_NOTICES.c.channel == literal(CHANNEL), _WATCHED.c.watched))
)
"""NOTIFY each of `channels` (`scoped`) with the app name beside it in `app_names` (bind two lists
of one length), those on `QUESTIONS_CHANNEL` only while some process listens there
(a connection named `WATCHING`), in a transaction of its own that commits without
waiting for a WAL flush: it writes nothing anyone needs after a crash. Its one row's
first column: whether some process listens to questions."""

Send = Callable[[OneStatement, Mapping[str, Any]], Awaitable[list[tuple[Any, ...]]]]


_ANNOUNCE_WITHIN = 0.05
"""Seconds an announcement for a run that goes on waits at most for the run's next
statement (see `Announcer.announce`)."""

_SPACING = 0.01
"""Seconds a store waits after a NOTIFY before its next one: another process hears of a
change at most that much later. Speed: under load nearly every HTTP request commits a
step that changes a question, and each NOTIFY is a transaction of its own and a delivery
to every listening process (the sender's included). With only one in flight at a time,
`bench/http_bench.py` on PostgreSQL sent 0.8-0.9 per HITL run with one server process
and 1.35-1.4 with two; with this pause 0.35 and 0.7-0.8."""


@final
class Announcer:
    """Tells other processes, after a step commits, that its app's questions changed.

    Not in the step's own transaction (as a trigger on the interrupts table did before
    migration 19): PostgreSQL holds one lock for the whole database from a NOTIFY's
    commit until the commit's WAL is flushed, so every durable commit that notified
    waited for the one before it, across all connections of all processes (most of a
    busy database's waits). Sent on its own, a NOTIFY commits without a flush and holds
    that lock for microseconds. One statement is in flight at a time, and the next waits
    `_SPACING` after it: the apps announced meanwhile go together in the next, since a
    wake-up only says "look".

    A step after which its run goes on (an answer's, which the run's next node follows)
    is announced once the run's next statement is on its way (`next_statement`), or
    `_ANNOUNCE_WITHIN` after the step at the latest: while that statement waits for its
    commit, not between the two, where the NOTIFY's statement, its reply and the
    server's work on it delayed the run's next step (a resume's second step was sent
    after it, on another connection).

    Changes to questions are sent only where some process listens to them (see
    `ANNOUNCE`): each NOTIFY also says whether one did, and for `_WATCHERS_FRESH` after
    a NOTIFY that found none, such changes are dropped without a statement (work still
    goes). A process that starts listening looks again once that time has passed, so a
    change dropped meanwhile is seen then.

    A process that dies between a step's commit and its announcement leaves the others
    unwoken: they find its questions at their next look, at most a lease TTL later, as
    they find a lease it took.
    """

    def __init__(self, send: Send) -> None:
        self._send = send
        self._pending: set[tuple[str, str]] = set()  # (channel, app name)
        self._task: asyncio.Task[None] | None = None
        self._held = False  # the pending ones wait for the next statement
        # Armed when one is held and none is armed, never cancelled: asyncio keeps a
        # cancelled timer in its heap until its time, and one armed and cancelled per
        # answer cost a resume ~90 Python calls (TimerHandle.__lt__ on every heap
        # operation), more than the NOTIFY it moved. It fires for whatever is held
        # then, sooner than `_ANNOUNCE_WITHIN` for what was held last.
        self._deadline: asyncio.TimerHandle | None = None
        # The pause after a NOTIFY (`_SPACING`): a future its timer completes, or `flush`
        # sooner. Speed: cheaper than `asyncio.timeout` around an `asyncio.Event`, whose
        # expiry cancels the task and raises through it after every NOTIFY.
        self._pause: asyncio.Future[None] | None = None
        self._hurried = False  # `flush` was called: no pause until the sending task ends
        # Whether some process listened to questions at the last NOTIFY, and when that
        # was asked (loop time; trusted for `_WATCHERS_FRESH`).
        self._watched = True
        self._checked_at = float("-inf")

    def announce(self, app_name: str, *, work: bool, run_goes_on: bool = False) -> None:
        """Send `NOTIFY <channel>, app_name` soon (in the background), on `CHANNEL` when
        the change is `work`, else on `QUESTIONS_CHANNEL`; with `run_goes_on`, along with
        the run's next statement (see the class docstring)."""
        if not work and self._nobody_watches():
            # Dropped here, as `_send_pending` would drop it. Speed: no task started for
            # it, to find nothing to send (a resume's answer: 1 of its ~7 loop passes).
            return
        self._pending.add((CHANNEL if work else QUESTIONS_CHANNEL, app_name))
        if not run_goes_on:
            self._start()
            return
        self._held = True
        if self._deadline is None:
            loop = asyncio.get_running_loop()
            self._deadline = loop.call_later(_ANNOUNCE_WITHIN, self._on_deadline)

    def next_statement(self) -> None:
        """A statement is about to be sent: what is held goes once it is on its way (the
        sending task starts when the caller awaits the statement's reply)."""
        if self._held:
            self._start()

    async def flush(self) -> None:
        """Send every announcement made so far now (each sent or failed on return)."""
        self._start()
        if self._task is not None:
            self._hurried = True
            if self._pause is not None and not self._pause.done():
                self._pause.set_result(None)
            await self._task

    def _on_deadline(self) -> None:
        self._deadline = None
        self._start()

    def _start(self) -> None:
        self._held = False
        if self._pending and (self._task is None or self._task.done()):
            self._hurried = False
            self._task = asyncio.get_running_loop().create_task(self._send_pending())

    async def _send_pending(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            notices, self._pending = sorted(self._pending), set()
            if self._nobody_watches():
                notices = [notice for notice in notices if notice[0] == CHANNEL]
                if not notices:
                    continue  # nobody listens to questions: no statement at all
            channels = [channel for channel, _ in notices]
            app_names = [app_name for _, app_name in notices]
            asked_at = loop.time()
            try:
                rows = await self._send(ANNOUNCE, {"channels": channels, "app_names": app_names})
                self._watched = bool(rows[0][0])
                self._checked_at = asked_at
            except StoreUnavailableError as error:  # nobody is listening either
                _log.debug("baton: NOTIFY of %s failed (%s)", app_names, error)
            except Exception:
                _log.warning("baton: NOTIFY of %s failed", app_names, exc_info=True)
            if self._hurried:
                continue
            self._pause = pause = loop.create_future()
            loop.call_later(_SPACING, _end_pause, pause)
            await pause
            self._pause = None

    def _nobody_watches(self) -> bool:
        """Whether the last look, still fresh (`_WATCHERS_FRESH`), found no process
        listening to questions: changes to them are dropped without a statement."""
        if self._watched:
            return False
        return asyncio.get_running_loop().time() < self._checked_at + _WATCHERS_FRESH


def _end_pause(pause: asyncio.Future[None]) -> None:
    if not pause.done():  # `flush` may have ended it sooner
        pause.set_result(None)

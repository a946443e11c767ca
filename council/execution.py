"""Running one council batch: one member, a slice of a run's items, with up to the member's concurrency of
requests in flight from ONE worker process on the async OpenAI client.

Threads. The HTTP side runs on an asyncio event loop in a helper thread. Every database access is handed
back to the thread that called `batch_work` (the Celery task's thread, or a test's), which serves them
one at a time until the loop is done (`_Bridge`). So the ORM runs only where Django expects it — the
task's own connection, transaction and clean-up, correct on SQLite and PostgreSQL alike — and an in-flight
request costs a coroutine, a socket and its buffers (kilobytes), not a process.

Limits. The member's concurrency is global: the batch leases that many of the member's `MemberSlot`
rows (fewer when other batches of the member hold some; it takes more as they free up) and runs one
vote per leased slot. Its rate limit is the shared `MemberPace` reservation, awaited without blocking.
A request is bounded by the client timeout; the batch starts votes for COUNCIL_BATCH_WINDOW seconds and
cuts off what is still in flight at its own deadline (well before the soft time limit), caching the
replies received so far and leaving the rest to a continuation task. Transient errors (429, 5xx, time-
outs, connection errors) are retried inside the vote by the one policy, `services.retry_delay`
(Retry-After honoured; a 429's Retry-After pauses the whole batch), COUNCIL_MAX_RETRIES times, then the
vote is an error row "gave up after N attempts".
"""

import asyncio
import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from celery.exceptions import SoftTimeLimitExceeded
from django.db import DatabaseError

from council import conf, services
from council.client import (
    PermanentCallError,
    Reply,
    TransientCallError,
    async_client_for,
    chat_async,
    reported_joined,
)
from council.models import CouncilBatch, CouncilVote, ResponseCache
from council.prompts import parse_answer, prompt_hash
from council.throttle import Throttled, pace_next, slots_lease, slots_release
from goldkey.errors import ApplicationError
from goldkey.lib.jsonio import column_length

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 0.25  # results are written in one transaction about this often (and at the end)
CANCEL_CHECK_SECONDS = 1.0  # how soon a cancelled run stops starting votes
TOP_UP_SECONDS = 1.0  # how often a batch short of slots asks for more
PREPARE_CHUNK = 16  # prompts built per trip to the task's thread


@dataclass
class Outcome:
    """A finished vote (or error row) waiting to be written."""

    item_id: int
    status: str
    values: dict
    error: str = ""
    calls: int = 0
    response_model: str = ""
    system_fingerprint: str = ""


@dataclass
class _Vote:
    calls: int = 0
    transient: int = 0
    answers: list = field(default_factory=list)
    models: list = field(default_factory=list)  # reported per reply, in order
    fingerprints: list = field(default_factory=list)

    def saw(self, model: str, fingerprint: str) -> None:
        self.models.append(model)
        self.fingerprints.append(fingerprint)

    def outcome(self, item_id: int, values: dict) -> "Outcome":
        return Outcome(item_id, CouncilVote.Status.OK, values, "", self.calls,
                       reported_joined(self.models, column_length(CouncilVote, "response_model")),
                       reported_joined(self.fingerprints, column_length(CouncilVote, "system_fingerprint")))


class _GiveUp(Exception):
    pass


class _Interrupted(BaseException):
    """The task's thread was interrupted (soft time limit) while serving this database call."""


class _Bridge:
    """Database calls from the event loop, run in the caller's thread (see the module docstring)."""

    def __init__(self):
        self.requests: queue.SimpleQueue = queue.SimpleQueue()

    async def call(self, fn, /, *args, **kwargs):
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.requests.put((fn, args, kwargs, future, loop))
        return await future

    def close(self) -> None:
        self.requests.put(None)

    def serve(self) -> None:
        while (request := self.requests.get()) is not None:
            fn, args, kwargs, future, loop = request
            try:
                result, error = fn(*args, **kwargs), None
            except SoftTimeLimitExceeded:
                # Meant for the task, not for the vote that asked: that one is interrupted, and execute()
                # winds the batch down.
                loop.call_soon_threadsafe(_resolve, future, None, _Interrupted())
                raise
            except Exception as exc:  # handed to the coroutine that asked
                result, error = None, exc
            loop.call_soon_threadsafe(_resolve, future, result, error)


def _resolve(future: asyncio.Future, result, error) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def batch_work(*, batch_id: int, holder: str, started: float | None = None) -> dict:
    """Work on one batch as `holder` (a task id). Returns counts; raises Throttled when none of the
    member's slots is free (the task retries shortly)."""
    started = time.monotonic() if started is None else started
    batch = services.council_batch_claim(batch_id=batch_id, holder=holder)
    if batch is None:  # finished, held by a live task, or the run is not running
        return {"batch": batch_id, "skipped": True}
    pending = services.council_batch_pending(batch=batch)
    if not pending:
        services.council_batch_release(batch=batch, holder=holder, leftover=False)
        services._run_finish_if_complete(batch.run)
        return {"batch": batch_id, "voted": 0, "left": 0}
    member = batch.member
    slots = slots_lease(member, holder, min(member.concurrency, len(pending)), conf.lease_seconds())
    if not slots:
        services.council_batch_unclaim(batch=batch, holder=holder)
        raise Throttled(1.0)
    runner = _BatchRunner(batch=batch, holder=holder, pending=pending, slots=slots, started=started)
    try:
        runner.items = {i.pk: i for i in services.council_batch_items(item_ids=pending)}
        runner.execute()
    except SoftTimeLimitExceeded:
        # Our own deadline comes first, so something hung (the database?): what is missing goes on in a
        # continuation now rather than waiting for the sweep.
        logger.warning("council batch %s: soft time limit reached; handing the rest on", batch_id)
    finally:
        slots_release(runner.slots, holder)
    left = services.council_batch_pending(batch=batch)
    stopped = services.run_stopped(run_id=batch.run_id)
    services.council_batch_release(
        batch=batch, holder=holder, leftover=bool(left) and not stopped, progressed=runner.recorded > 0
    )
    return {"batch": batch_id, "voted": runner.recorded, "left": len(left), "stopped": bool(left) and stopped}


class _BatchRunner:
    def __init__(self, *, batch: CouncilBatch, holder: str, pending: list[int], slots: list[int], started: float):
        self.batch, self.run, self.member = batch, batch.run, batch.member
        self.prompt = batch.run.prompt_version
        self.holder = holder
        self.queue = deque(pending)  # items whose vote has not started
        self.to_prepare = deque(pending)  # items whose prompt is not built yet (same order, runs ahead)
        self.ready: dict[int, tuple] = {}  # item id → (steps, Phase 1 key, cached Phase 1 reply) or an exception
        self.preparing: asyncio.Future | None = None
        self.slots = list(slots)
        self.items: dict = {}
        self.started = started
        self.bridge = _Bridge()
        self.outcomes: list[Outcome] = []
        self.answers: list[ResponseCache] = []  # replies to cache, written with the next flush
        self.recorded = 0
        self.stop_starting = False
        self.paused_until = 0.0  # loop time: a 429's Retry-After holds every vote of the batch
        self.error: BaseException | None = None

    # -- thread plumbing ------------------------------------------------------------------------

    def execute(self) -> None:
        thread = threading.Thread(target=self._loop_thread, name=f"council-batch-{self.batch.pk}", daemon=True)
        thread.start()
        try:
            self.bridge.serve()
        except BaseException:
            # The soft time limit (or an interrupt) hit this thread: stop the loop, then let it propagate.
            self.stop_starting = True
            loop = getattr(self, "loop", None)
            if loop is not None:
                loop.call_soon_threadsafe(self._cancel_main)
            self._serve_until_done(thread)
            raise
        thread.join()
        if self.error is not None:
            raise self.error

    def _serve_until_done(self, thread: threading.Thread) -> None:
        """Answer the loop's last database calls (flush on the way out) while it winds down."""
        deadline = time.monotonic() + 10
        while thread.is_alive() and time.monotonic() < deadline:
            try:
                request = self.bridge.requests.get(timeout=0.1)
            except queue.Empty:
                continue
            if request is None:
                break
            fn, args, kwargs, future, loop = request
            try:
                result, error = fn(*args, **kwargs), None
            except Exception as exc:
                result, error = None, exc
            loop.call_soon_threadsafe(_resolve, future, result, error)

    def _loop_thread(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # re-raised in the task's thread by execute()
            self.error = exc
        finally:
            self.bridge.close()

    def _cancel_all(self) -> None:
        for task in getattr(self, "workers", []):
            task.cancel()

    def _cancel_main(self) -> None:
        """Stop the whole batch: _main's clean-up still cancels the votes and flushes what is done."""
        self.stop_starting = True
        main = getattr(self, "main_task", None)
        if main is not None:
            main.cancel()

    # -- the batch ------------------------------------------------------------------------------

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.main_task = asyncio.current_task()
        try:
            client = async_client_for(self.member)
        except ApplicationError as exc:  # e.g. the member's API key variable is not set: nothing will work
            await self.bridge.call(services.council_run_stall, run_id=self.run.pk, reason=str(exc))
            self.queue.clear()
            return
        self.client = client
        self.workers: list[asyncio.Task] = []
        try:
            for slot in self.slots:
                self._spawn(slot)
            await self._monitor()
        finally:
            for task in self.workers:
                task.cancel()
            await asyncio.gather(*self.workers, return_exceptions=True)
            await self._flush()
            await client.close()

    def _spawn(self, slot: int) -> None:
        self.workers.append(asyncio.create_task(self._worker(slot)))

    async def _monitor(self) -> None:
        """Flush results, watch for cancel, the window and the deadline, top up slots — until all is done."""
        loop = self.loop
        window_ends = self.started + conf.batch_window()
        deadline = self.started + conf.task_deadline()
        next_cancel_check = next_top_up = loop.time()
        while any(not t.done() for t in self.workers):
            await asyncio.sleep(FLUSH_SECONDS)
            now = time.monotonic()
            await self._flush()
            if now >= deadline:
                self.stop_starting = True
                self._cancel_all()  # still in flight at the task's own deadline: left for the continuation
                break
            if now >= window_ends:
                self.stop_starting = True
            if loop.time() >= next_cancel_check:
                next_cancel_check = loop.time() + CANCEL_CHECK_SECONDS
                if await self.bridge.call(services.run_stopped, run_id=self.run.pk):
                    self.stop_starting = True
            active = sum(not t.done() for t in self.workers)
            if (
                not self.stop_starting and len(self.queue) > active and active < self.member.concurrency
                and loop.time() >= next_top_up
            ):
                next_top_up = loop.time() + TOP_UP_SECONDS
                want = min(self.member.concurrency - len(self.slots), len(self.queue) - active)
                if want > 0:
                    more = await self.bridge.call(slots_lease, self.member, self.holder, want, conf.lease_seconds())
                    for slot in more:
                        if slot not in self.slots:
                            self.slots.append(slot)
                            self._spawn(slot)
        if self.workers:
            await asyncio.gather(*self.workers, return_exceptions=True)

    async def _worker(self, slot: int) -> None:
        try:
            while self.queue and not self.stop_starting:
                item_id = self.queue.popleft()
                item = self.items.get(item_id)
                if item is None:
                    continue  # deleted meanwhile
                try:
                    prepared = await self._prepared(item_id)
                    outcome = await self._vote(item, prepared)  # not `self.outcomes.append(await …)`: a flush swaps the list
                except DatabaseError:
                    raise  # the database is away: this batch stops; the sweep sends it again later
                except Exception as exc:
                    # A bug or bad data for this item (not the endpoint: its errors are handled in _vote): an
                    # error row that names it, rather than a batch that is sent again and fails forever.
                    logger.exception("council batch %s: item %s failed", self.batch.pk, item_id)
                    outcome = Outcome(item_id, CouncilVote.Status.ERROR, {}, f"internal error: {exc!r}")
                self.outcomes.append(outcome)
        finally:
            # Out of work: give the slot back at once so another batch of the member can use it.
            if slot in self.slots and not self.stop_starting and not self.queue:
                self.slots.remove(slot)
                try:
                    await self.bridge.call(slots_release, [slot], self.holder)
                except Exception:  # released at the end of the batch anyway
                    self.slots.append(slot)

    async def _flush(self) -> None:
        outcomes, self.outcomes = self.outcomes, []
        answers, self.answers = self.answers, []
        if outcomes or answers:
            await self.bridge.call(
                services.council_outcomes_record, run=self.run, member_id=self.member.pk, outcomes=outcomes,
                answers=answers,
            )
            self.recorded += len(outcomes)

    # -- one vote -------------------------------------------------------------------------------

    async def _prepared(self, item_id: int) -> tuple:
        """The item's prompt, built in the task's thread a chunk of items at a time ahead of the votes, so the
        database work is off the path from one reply to the next request."""
        while item_id not in self.ready:
            if self.preparing is None or self.preparing.done():
                self.preparing = asyncio.ensure_future(self._prepare_next())
            await asyncio.shield(self.preparing)
        result = self.ready.pop(item_id)
        if len(self.ready) < self.member.concurrency and self.to_prepare and self.preparing.done():
            self.preparing = asyncio.ensure_future(self._prepare_next())  # read ahead
        if isinstance(result, Exception):
            raise result
        return result

    async def _prepare_next(self) -> None:
        chunk = [self.to_prepare.popleft() for _ in range(min(PREPARE_CHUNK, len(self.to_prepare)))]
        if chunk:
            self.ready.update(await self.bridge.call(self._prepare_many, chunk))

    def _prepare_many(self, item_ids: list[int]) -> dict[int, tuple]:
        """In the task's thread: each item's steps, and the cached reply to Phase 1 if there is one (one
        look-up for the chunk). A failure is kept per item (an error row), except the database's."""
        prepared: dict = {}
        keys: dict[int, str] = {}
        for item_id in item_ids:
            item = self.items.get(item_id)
            try:
                steps = services._item_steps(item, self.prompt)
            except DatabaseError:
                raise
            except Exception as exc:
                logger.exception("council batch %s: item %s cannot be asked", self.batch.pk, item_id)
                prepared[item_id] = exc
                continue
            first = [{"role": "system", "content": self.prompt.system}, {"role": "user", "content": steps[0].user}]
            keys[item_id] = self._key(first)
            prepared[item_id] = steps
        cached = services.cached_replies(model=self.member.model, keys=list(keys.values()))
        for item_id, key in keys.items():
            prepared[item_id] = (prepared[item_id], key, cached.get(key))
        return prepared

    def _key(self, messages: list[dict]) -> str:
        member = self.member
        return prompt_hash({"messages": messages, "temperature": member.temperature, "max_tokens": member.max_tokens})

    async def _vote(self, item, prepared: tuple) -> Outcome:
        """Phase 1, then Phase 2 in the same chat; one Outcome. A malformed reply is asked again once with a
        correction; a second malformed reply is an error row, never a vote."""
        vote = _Vote()
        steps, key, cached = prepared
        messages = [{"role": "system", "content": self.prompt.system}]
        values: dict = {}
        # A later step can only be in the cache if every earlier reply came from it (the cached chain of a
        # previous run): after a fresh reply, no look-up.
        chain_cached = True
        try:
            for index, step in enumerate(steps):
                messages.append({"role": "user", "content": step.user})
                if index:
                    key = self._key(messages)
                    cached = await self.bridge.call(services.cached_reply, model=self.member.model, key=key) if chain_cached else None
                from_cache = cached is not None
                reply = cached if from_cache else await self._call(vote, messages)
                vote.saw(reply.model, reply.system_fingerprint)
                content = reply.content
                chain_cached = chain_cached and from_cache
                answer, problems = parse_answer(content, self.prompt.protocol, step.keys, item.gold_label)
                if problems and not from_cache:
                    retry_messages = messages + [
                        {"role": "assistant", "content": content},
                        {"role": "user", "content": "Your reply was not valid: " + "; ".join(problems)
                         + ". Reply again with ONLY the JSON object."},
                    ]
                    reply = await self._call(vote, retry_messages)
                    vote.saw(reply.model, reply.system_fingerprint)
                    content = reply.content
                    answer, problems = parse_answer(content, self.prompt.protocol, step.keys, item.gold_label)
                if problems:
                    self.answers.extend(vote.answers)
                    return Outcome(
                        item.pk, CouncilVote.Status.ERROR, {},
                        f"phase {step.phase}: malformed answer after one retry: {'; '.join(problems)}", vote.calls,
                    )
                if not from_cache:
                    vote.answers.append(ResponseCache(
                        model=self.member.model, prompt_hash=key, content=content,
                        response_model=reply.model, system_fingerprint=reply.system_fingerprint,
                    ))
                values.update(answer)
                messages.append({"role": "assistant", "content": content})
        except (PermanentCallError, _GiveUp) as exc:
            self.answers.extend(vote.answers)
            return Outcome(item.pk, CouncilVote.Status.ERROR, {}, str(exc), vote.calls)
        except BaseException:
            # Cut off (deadline, cancel): keep the replies received so the continuation does not ask again.
            self.answers.extend(vote.answers)
            raise
        self.answers.extend(vote.answers)
        return vote.outcome(item.pk, values)

    async def _call(self, vote: _Vote, messages: list[dict]) -> Reply:
        """One reply from the member: paced, retried on transient errors by the one retry policy."""
        loop = self.loop
        while True:
            if (pause := self.paused_until - loop.time()) > 0:
                await asyncio.sleep(pause)
            if self.member.requests_per_minute:
                if (wait := await self.bridge.call(pace_next, self.member)) > 0:
                    await asyncio.sleep(wait)
            vote.calls += 1
            try:
                return await chat_async(self.client, self.member, messages)
            except TransientCallError as exc:
                vote.transient += 1
                if vote.transient > conf.max_transient_retries():
                    raise _GiveUp(f"gave up after {vote.transient} attempts: {exc}") from exc
                delay = services.retry_delay(vote.transient - 1, exc.retry_after)
                if exc.retry_after is not None:  # the member asked us to slow down: every vote waits
                    self.paused_until = max(self.paused_until, loop.time() + delay)
                await self.bridge.call(
                    services.council_batch_waiting, batch_id=self.batch.pk, seconds=delay,
                    reason=f"{exc} — retry {vote.transient} of at most {conf.max_transient_retries()}",
                )
                await asyncio.sleep(delay)

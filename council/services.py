"""Writes for the council: members, prompt versions, runs and their batches, votes (produced or imported),
cancel, resume and the sweep that makes every run reach a final state."""

import json
import random
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.db import connection, transaction
from django.db.models import Case, Count, F, PositiveIntegerField, Prefetch, Q, When
from django.utils import timezone

import protocols
from annotation.models import Campaign
from council import conf
from council.client import Reply
from council.models import CouncilBatch, CouncilMember, CouncilRun, CouncilVote, PromptVersion, ResponseCache
from council.prompts import DEFAULT_PROMPT_NAME, DEFAULT_TEMPLATES, build_steps
from goldkey.errors import ApplicationError
from goldkey.lib.jsonio import (
    ErrorLog,
    ImportFailed,
    column_length,
    json_key_lines,
    read_json_document,
    text_too_long,
)
from items.models import Evidence, Item, ItemSet
from items.selectors import excerpts_for, recipient_turns

IMPORTED = "imported"


# ---------------------------------------------------------------------------------------------
# Members and prompts


@transaction.atomic
def council_member_add(
    *,
    name: str,
    base_url: str = "",
    model: str = "",
    api_key_env: str = "",
    is_generator: bool = False,
    temperature: float = 0.0,
    max_tokens: int = 800,
    requests_per_minute: int = 60,
    concurrency: int = 4,
    timeout_seconds: float = 60.0,
) -> tuple[CouncilMember, bool]:
    """Create or update the member called `name`. Returns (member, created)."""
    if not name.strip():
        raise ApplicationError("a member needs a name")
    if concurrency < 1:
        raise ApplicationError("concurrency must be at least 1")
    for field, value in (("name", name), ("base_url", base_url), ("model", model), ("api_key_env", api_key_env)):
        if problem := text_too_long(value, column_length(CouncilMember, field)):
            raise ApplicationError(f"field '{field}': {problem}")
    member, created = CouncilMember.objects.update_or_create(
        name=name,
        defaults=dict(
            base_url=base_url, model=model, api_key_env=api_key_env, is_generator=is_generator,
            temperature=temperature, max_tokens=max_tokens, requests_per_minute=requests_per_minute,
            concurrency=concurrency, timeout_seconds=timeout_seconds,
        ),
    )
    return member, created


def prompt_version_default(*, protocol: str) -> PromptVersion:
    prompt, _ = PromptVersion.objects.get_or_create(
        name=DEFAULT_PROMPT_NAME[protocol], defaults={"protocol": protocol, **DEFAULT_TEMPLATES[protocol]}
    )
    return prompt


def members_by_names(names: list[str]) -> list[CouncilMember]:
    found = {m.name: m for m in CouncilMember.objects.filter(name__in=names)}
    missing = [n for n in names if n not in found]
    if missing:
        raise ApplicationError(f"no council member(s) named {', '.join(missing)} (an administrator adds members in the admin, or with manage.py council_member_add)")
    return [found[n] for n in names]




# ---------------------------------------------------------------------------------------------
# Runs


@transaction.atomic
def member_configuration(member: CouncilMember) -> dict:
    """What a member was when a run started: everything that shapes its replies (never the key itself,
    only the variable naming it)."""
    return {
        "model": member.model, "base_url": member.base_url, "api_key_env": member.api_key_env,
        "temperature": member.temperature, "max_tokens": member.max_tokens, "timeout_seconds": member.timeout_seconds,
        "requests_per_minute": member.requests_per_minute, "concurrency": member.concurrency,
        "is_generator": member.is_generator,
    }


def council_run_start(
    *, campaign: Campaign, members: list[CouncilMember], prompt_version: PromptVersion | None = None, created_by=None
) -> CouncilRun:
    """Create a run, its batches (each member's items in slices of COUNCIL_BATCH_SIZE) and send one task per
    batch once the transaction commits. Earlier error rows of these members under this prompt are cleared
    so they are tried again; votes are kept (a batch skips items that have theirs) and answers already
    cached are not requested again."""
    if not members:
        raise ApplicationError("choose at least one council member")
    prompt_version = prompt_version or prompt_version_default(protocol=campaign.protocol)
    if prompt_version.protocol != campaign.protocol:
        raise ApplicationError(f"prompt '{prompt_version.name}' is for {prompt_version.protocol}, not {campaign.protocol}")
    item_ids = list(Item.objects.filter(item_set_id=campaign.item_set_id).order_by("external_id").values_list("id", flat=True))
    if not item_ids:
        raise ApplicationError(f"campaign '{campaign.slug}' has no items")
    run = CouncilRun.objects.create(
        campaign=campaign, prompt_version=prompt_version, status=CouncilRun.Status.RUNNING,
        total_items=len(item_ids), members_count=len(members), created_by=created_by,
        member_config={m.name: member_configuration(m) for m in members},
    )
    run.members.set(members)
    CouncilVote.objects.filter(
        campaign=campaign, member__in=members, prompt_version=prompt_version.name, status=CouncilVote.Status.ERROR
    ).delete()
    _batches_create_and_send(run, {m.pk: item_ids for m in members})
    return run


def _batches_create_and_send(run: CouncilRun, items_by_member: dict[int, list[int]]) -> list[CouncilBatch]:
    """Slice each member's items into batches and send them (after commit), members interleaved so the
    worker's processes start on different members first."""
    size = conf.batch_size()
    now = timezone.now()
    rows = []
    for start in range(0, max((len(ids) for ids in items_by_member.values()), default=0), size):
        for member_id, ids in items_by_member.items():
            if ids[start:start + size]:
                rows.append(CouncilBatch(run=run, member_id=member_id, item_ids=ids[start:start + size], sent_at=now))
    batches = CouncilBatch.objects.bulk_create(rows)
    if connection.features.can_return_rows_from_bulk_insert:
        ids = [b.pk for b in batches]
    else:  # only new rows of this run have no holder and were sent `now`
        ids = list(CouncilBatch.objects.filter(run=run, sent_at=now, finished=False).order_by("id").values_list("id", flat=True))
    transaction.on_commit(lambda: _batches_send(ids))
    return batches


def _batches_send(batch_ids: list[int]) -> list[int]:
    """Send one task per batch; the ids that could not be sent (broker down) are marked for the sweep."""
    from council.tasks import council_batch  # tasks import this module: import at call time

    failed = []
    for batch_id in batch_ids:
        try:
            council_batch.delay(batch_id)
        except Exception:  # any broker failure: the sweep sends it again
            failed.append(batch_id)
    if failed:
        CouncilBatch.objects.filter(id__in=failed).update(sent_at=None)
    return failed


def _pending_pairs(run: CouncilRun) -> dict[int, list[int]]:
    """member id → items of the run that have neither a vote nor an error row (in item order)."""
    members = list(run.members.values_list("id", flat=True))
    done = set(
        CouncilVote.objects.filter(
            campaign_id=run.campaign_id, member_id__in=members, prompt_version=run.prompt_version.name
        ).values_list("member_id", "item_id")
    )
    item_ids = list(Item.objects.filter(item_set_id=run.campaign.item_set_id).order_by("external_id").values_list("id", flat=True))
    pending = {m: [i for i in item_ids if (m, i) not in done] for m in members}
    return {m: ids for m, ids in pending.items() if ids}


@transaction.atomic
def council_run_resume(*, run: CouncilRun) -> int:
    """Send again every (member, item) of the run that has no vote or error row and is not being worked on
    right now — after a stall, or for a broker that lost messages. Safe at any time: a batch skips items
    that have their row. Returns how many (member, item) pairs were sent."""
    run = CouncilRun.objects.select_for_update().select_related("prompt_version", "campaign").get(pk=run.pk)
    if run.cancelled:
        raise ApplicationError(f"run {run.pk} was cancelled")
    now = timezone.now()
    live = CouncilBatch.objects.filter(run=run, finished=False, lease_until__gt=now).exclude(holder="")
    busy = {(b.member_id, i) for b in live for i in b.item_ids}
    pending = {m: [i for i in ids if (m, i) not in busy] for m, ids in _pending_pairs(run).items()}
    pending = {m: ids for m, ids in pending.items() if ids}
    # The batches not in flight are replaced by fresh ones over exactly what is missing.
    CouncilBatch.objects.filter(run=run, finished=False).exclude(pk__in=[b.pk for b in live]).update(finished=True)
    if pending or run.status == CouncilRun.Status.STALLED:
        CouncilRun.objects.filter(pk=run.pk).update(status=CouncilRun.Status.RUNNING, finished_at=None, stalled_reason="")
    if pending:
        _batches_create_and_send(run, pending)
    else:
        _run_finish_if_complete(run)
    return sum(len(ids) for ids in pending.values())


def council_run_cancel(*, run: CouncilRun) -> CouncilRun:
    """Batches stop starting votes within a second and queued ones do nothing; answers already recorded stay."""
    CouncilRun.objects.filter(
        pk=run.pk, status__in=[CouncilRun.Status.QUEUED, CouncilRun.Status.RUNNING, CouncilRun.Status.STALLED]
    ).update(cancelled=True, status=CouncilRun.Status.CANCELLED, finished_at=timezone.now())
    run.refresh_from_db()
    return run


def council_batch_waiting(*, batch_id: int, seconds: float, reason: str) -> None:
    """The batch waits `seconds` before it calls again after a transient error: recorded for the run page
    (a member that sits still is retrying, not stuck)."""
    CouncilBatch.objects.filter(pk=batch_id).update(
        waiting_until=timezone.now() + timedelta(seconds=seconds), waiting_reason=reason[:300]
    )


def council_run_stall(*, run_id: int, reason: str) -> None:
    """The run cannot finish by itself: say why (shown on its page; `council_run --resume` tries again)."""
    CouncilRun.objects.filter(pk=run_id, status=CouncilRun.Status.RUNNING).update(
        status=CouncilRun.Status.STALLED, stalled_reason=reason[:2000]
    )


# Run members never change after council_run_start (the tasks are enqueued once they are set), so a
# worker process reads them once per run instead of joining them into every completion count.
# Keyed by (id, created_at): an id alone can come back (SQLite reuses rolled-back ids; a flushed database).
_run_member_ids: dict[tuple, tuple[int, ...]] = {}


def _members_of_run(run: CouncilRun) -> tuple[int, ...]:
    key = (run.pk, run.created_at)
    ids = _run_member_ids.get(key)
    if ids is None:
        if len(_run_member_ids) > 256:  # a long-lived worker sees many runs; keep the memo small
            _run_member_ids.clear()
        ids = _run_member_ids[key] = tuple(
            CouncilRun.members.through.objects.filter(councilrun_id=run.pk).values_list("councilmember_id", flat=True)
        )
    return ids


def _run_finish_if_complete(run: CouncilRun) -> bool:
    """One count: the run is finished when every (member, item) has its row (vote or error)."""
    have = CouncilVote.objects.filter(
        campaign_id=run.campaign_id, prompt_version=run.prompt_version.name, member_id__in=_members_of_run(run)
    ).count()
    if have >= run.total_items * run.members_count:
        CouncilRun.objects.filter(pk=run.pk, status__in=[CouncilRun.Status.RUNNING, CouncilRun.Status.STALLED]).update(
            status=CouncilRun.Status.FINISHED, finished_at=timezone.now()
        )
        return True
    return False


def _item_steps(item: Item, prompt: PromptVersion):
    spec = protocols.of_item(item)
    view = protocols.blind_view(item)
    excerpts = excerpts_for(item) if spec.shows_excerpts else []
    phase2 = None
    if spec.has_phase2:
        # What Phase 2 shows a human annotator of this item, and only that.
        shows = {fact for question in spec.asked(2, item.gold_label) for fact in question.shows}
        phase2 = {"gold_type": item.gold_label, "quote": item.contradicted_quote}
        if "recipient_turns" in shows:
            phase2["index"] = [
                {"dia_id": t.dia_id, "date": t.session.date_time_raw, "speaker": t.speaker, "text": t.text}
                for t in recipient_turns(item)
            ]
    return build_steps(prompt, prompt.protocol, view, excerpts, phase2)


# ---------------------------------------------------------------------------------------------
# Batches: the writes of a batch task (council/execution.py runs the calls)


def council_batch_claim(*, batch_id: int, holder: str) -> CouncilBatch | None:
    """Take the batch for `holder` (a task id) until the lease ends; None when another live task holds it,
    it is finished, or its run is no longer running (cancelled, stalled, finished). A redelivered task
    takes back its own claim at once — and that counts as a resend: the process that held it died under it
    (worker-lost rejection, a restored Redis message), so a batch that kills its process every time stalls
    the run instead of being delivered forever."""
    now = timezone.now()
    claimable = Q(holder="") | Q(holder=holder) | Q(lease_until__lt=now)
    taken = CouncilBatch.objects.filter(
        claimable, pk=batch_id, finished=False, run__status=CouncilRun.Status.RUNNING, run__cancelled=False
    ).update(
        holder=holder, lease_until=now + timedelta(seconds=conf.lease_seconds()),
        resends=Case(When(holder=holder, then=F("resends") + 1), default=F("resends"), output_field=PositiveIntegerField()),
    )
    if not taken:
        return None
    batch = CouncilBatch.objects.select_related("run__prompt_version", "run__campaign", "member").get(pk=batch_id)
    if batch.resends > conf.max_resends():
        council_run_stall(run_id=batch.run_id, reason=_stall_reason(batch, len(council_batch_pending(batch=batch))))
        CouncilBatch.objects.filter(pk=batch_id, holder=holder).update(holder="", lease_until=None)
        return None
    return batch


def _stall_reason(batch: CouncilBatch, missing: int) -> str:
    return (
        f"member '{batch.member.name}': {missing} vote(s) still missing after their batch was sent again "
        f"{batch.resends} times (its task keeps dying or no worker takes it; see the worker log). "
        f"`manage.py council_run {batch.run.campaign.slug} --resume {batch.run_id}` tries again."
    )


def council_batch_pending(*, batch: CouncilBatch) -> list[int]:
    """The batch's items without a vote or error row, in batch order (one query)."""
    run = batch.run
    done = set(
        CouncilVote.objects.filter(
            campaign_id=run.campaign_id, member_id=batch.member_id, prompt_version=run.prompt_version.name,
            item_id__in=batch.item_ids,
        ).values_list("item_id", flat=True)
    )
    return [i for i in batch.item_ids if i not in done]


def council_batch_items(*, item_ids: list[int]) -> list[Item]:
    """The items with what the prompt shows (conversation, evidence with turns and sessions): three queries."""
    items = (
        Item.objects.select_related("conversation")
        .prefetch_related(Prefetch("evidence", queryset=Evidence.objects.select_related("turn__session")))
        .in_bulk(item_ids)
    )
    return [items[i] for i in item_ids if i in items]


def council_batch_release(*, batch: CouncilBatch, holder: str, leftover: bool, progressed: bool = False) -> None:
    """The task is done with the batch: finished, or (`leftover`) handed on to a continuation task, sent now.
    A task that recorded votes clears the batch's resend count: it is not a batch that keeps dying."""
    rows = CouncilBatch.objects.filter(pk=batch.pk, holder=holder)
    if not leftover:
        rows.update(holder="", lease_until=None, finished=True)
        return
    reset = {"resends": 0} if progressed else {}
    if rows.update(holder="", lease_until=None, sent_at=timezone.now(), **reset):
        _batches_send([batch.pk])


def council_batch_unclaim(*, batch: CouncilBatch, holder: str) -> None:
    """Give the batch back without working on it (its task retries shortly)."""
    CouncilBatch.objects.filter(pk=batch.pk, holder=holder).update(holder="", lease_until=None, sent_at=timezone.now())


def council_outcomes_record(*, run: CouncilRun, member_id: int, outcomes: list, answers: list[ResponseCache]) -> None:
    """Votes and error rows of a batch, with the replies they were built from (and replies of votes cut off
    by a deadline), in one transaction. Each (campaign, member, item, prompt) is stored once: the unique
    constraint is the arbiter, so a row written meanwhile by a duplicate delivery wins and this one is dropped."""
    with transaction.atomic():
        if outcomes:
            CouncilVote.objects.bulk_create(
                [
                    CouncilVote(
                        campaign_id=run.campaign_id, member_id=member_id, item_id=o.item_id,
                        prompt_version=run.prompt_version.name, status=o.status, values=o.values, error=o.error[:2000],
                        run=run, attempts=min(o.calls, 32767),
                        response_model=o.response_model[:400], system_fingerprint=o.system_fingerprint[:400],
                    )
                    for o in outcomes
                ],
                ignore_conflicts=True,
            )
        _cache_store(answers)
    if outcomes:
        _run_finish_if_complete(run)


def _cache_store(answers: list[ResponseCache]) -> None:
    if answers:
        ResponseCache.objects.bulk_create(answers, ignore_conflicts=True)


_REPLY_FIELDS = ("content", "response_model", "system_fingerprint")


def cached_reply(*, model: str, key: str) -> Reply | None:
    row = ResponseCache.objects.filter(model=model, prompt_hash=key).values_list(*_REPLY_FIELDS).first()
    return Reply(*row) if row else None


def cached_replies(*, model: str, keys: list[str]) -> dict[str, Reply]:
    if not keys:
        return {}
    rows = ResponseCache.objects.filter(model=model, prompt_hash__in=keys).values_list("prompt_hash", *_REPLY_FIELDS)
    return {key: Reply(*reply) for key, *reply in rows}


def run_stopped(*, run_id: int) -> bool:
    """True when the run no longer runs (cancelled, stalled, finished): a batch starts no more votes."""
    return not CouncilRun.objects.filter(pk=run_id, status=CouncilRun.Status.RUNNING, cancelled=False).exists()


def retry_delay(attempt: int, retry_after: float | None) -> float:
    """The one retry policy: Retry-After when the server gave one; else exponential backoff with jitter, capped."""
    if retry_after is not None:
        return min(retry_after, conf.backoff_cap())
    base = conf.backoff_base() * (2**attempt)
    return min(conf.backoff_cap(), base * (0.5 + random.random() / 2))


# ---------------------------------------------------------------------------------------------
# The sweep: runs always reach a final state


def council_sweep() -> dict:
    """Find batches of running runs that are neither finished nor in flight (claimed, lease not expired)
    nor recently sent (trusting the broker for one lease period), and send them again: their message was
    lost (a broker restarted without saving, the file-system broker's message died with a killed worker)
    or their worker died. A run is finished when every row is there; a batch sent again COUNCIL_MAX_RESENDS
    times while the run made no progress (no vote for a lease period) stalls its run with the reason. Safe to run from several workers at once: each
    re-send is a compare-and-set on the batch row. Returns counts for logging."""
    now = timezone.now()
    recent = now - timedelta(seconds=conf.lease_seconds())
    result = {"runs": 0, "resent": 0, "finished": 0, "stalled": 0}
    resend: list[int] = []
    running = CouncilRun.objects.filter(status=CouncilRun.Status.RUNNING, cancelled=False)
    for run in running.select_related("prompt_version", "campaign"):
        result["runs"] += 1
        if _run_finish_if_complete(run):
            result["finished"] += 1
            continue
        open_batches = list(
            CouncilBatch.objects.filter(run=run, finished=False).select_related("member", "run__prompt_version", "run__campaign")
        )
        if not open_batches:  # rows missing but no batch for them (a run started before batches existed)
            pending = _pending_pairs(run)
            if pending:
                _batches_create_and_send(run, pending)
                result["resent"] += sum(1 for _ in pending)
            continue
        progressing = None  # read once per run, only when a batch needs sending again
        for batch in open_batches:
            if batch.holder and batch.lease_until and batch.lease_until > now:
                continue  # in flight
            if batch.sent_at is not None and batch.sent_at > recent and not batch.holder:
                continue  # sent recently: queued behind other work, or about to start
            pending = council_batch_pending(batch=batch)
            if not pending:
                CouncilBatch.objects.filter(pk=batch.pk).update(finished=True, holder="", lease_until=None)
                continue
            if progressing is None:
                progressing = CouncilVote.objects.filter(run=run, created_at__gt=recent).exists()
            # While the run is making progress, a batch not taken for a lease period is most likely queued
            # behind others: send it again (a duplicate message is a no-op) without counting it against the run.
            if not progressing and batch.resends >= conf.max_resends():
                council_run_stall(run_id=run.pk, reason=_stall_reason(batch, len(pending)))
                result["stalled"] += 1
                break
            # Compare-and-set: of several sweeping workers, one sends it.
            if CouncilBatch.objects.filter(pk=batch.pk, sent_at=batch.sent_at, resends=batch.resends, holder=batch.holder).update(
                sent_at=now, resends=F("resends") + (0 if progressing else 1), holder="", lease_until=None
            ):
                resend.append(batch.pk)
    if resend:
        _batches_send(resend)
        result["resent"] += len(resend)
    return result


def gates_member_check(*, item_set: ItemSet, llm_member: CouncilMember | None) -> None:
    """A protocol whose sets have gates of their own (`ProtocolSpec.set_gates`: a verification gate through a
    council member) cannot run them without a member: refused before anything is queued."""
    if protocols.for_kind(item_set.kind).set_gates and llm_member is None:
        raise ApplicationError(f"item set '{item_set.name}': its gate reads the items through a council member: choose one")


def gates_run_enqueue(*, item_set_id: int, llm_member: CouncilMember | None = None) -> None:
    """Run the gates over an item set on the worker (after the current transaction commits)."""
    gates_member_check(item_set=ItemSet.objects.get(pk=item_set_id), llm_member=llm_member)

    def enqueue():
        from council.tasks import gates_run_task  # tasks import this module: import at call time

        gates_run_task.delay(item_set_id, llm_member.pk if llm_member else None)

    transaction.on_commit(enqueue)


# ---------------------------------------------------------------------------------------------
# Replay of released council files


@dataclass(frozen=True)
class ImportedVote:
    where: str  # "FILE:LINE" of the record, for messages
    item: Item
    values: dict


def imported_votes_save(*, campaign: Campaign, member: CouncilMember, votes: list[ImportedVote]) -> dict:
    """The one policy for imported votes (released council answer files, released judge files): an
    imported file is evidence, so an imported vote is never rewritten. Re-importing the same values
    changes nothing; a file that gives an item other values than the vote already imported for this
    member is refused whole, each change named by FILE:LINE and item (import it under another member
    name to keep both). Runs in the caller's transaction; writes only new votes."""
    existing = dict(
        CouncilVote.objects.filter(campaign=campaign, member=member, prompt_version=IMPORTED).values_list("item_id", "values")
    )
    log = ErrorLog()
    for vote in votes:
        stored = existing.get(vote.item.pk)
        if stored is not None and stored != vote.values:
            log.add(
                vote.where,
                f"item '{vote.item.external_id}': '{member.name}' already has an imported vote {json.dumps(stored, sort_keys=True)}, "
                f"this file says {json.dumps(vote.values, sort_keys=True)} (an imported vote is never rewritten)",
            )
    log.raise_if_any()
    fresh = [
        CouncilVote(campaign=campaign, member=member, item=vote.item, prompt_version=IMPORTED, values=vote.values)
        for vote in votes
        if vote.item.pk not in existing
    ]
    CouncilVote.objects.bulk_create(fresh, batch_size=2000)
    return {"created": len(fresh), "unchanged": len(votes) - len(fresh)}


@transaction.atomic
def council_votes_import(*, campaign: Campaign, path: Path, member_name: str, is_generator: bool | None = None) -> dict:
    """A released council answer file (`{"annotator", "answers": {item_id: {...}}}`) as one member's
    votes under prompt version "imported". All-or-nothing; re-importing the same file changes nothing,
    a file that changes an imported vote is refused (`imported_votes_save`)."""
    path = Path(path)
    if problem := text_too_long(member_name, column_length(CouncilMember, "name")):
        raise ImportFailed([f"field 'member': {problem}"])
    doc, data = read_json_document(path)
    log = ErrorLog()
    if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
        log.add(f"{path.name}:1", "expected an object with an 'answers' object")
        log.raise_if_any()
    lines = json_key_lines(doc.text, ("answers",))
    items = {i.external_id: i for i in Item.objects.filter(item_set_id=campaign.item_set_id).only("id", "external_id", "gold_label")}
    votes = []
    for external_id, values in data["answers"].items():
        where = f"{path.name}:{lines.get(external_id, 1)}: item '{external_id}'"
        item = items.get(external_id)
        if item is None:
            log.add(where, f"not an item of campaign '{campaign.slug}'")
            continue
        if not isinstance(values, dict):
            log.add(where, "answer must be an object")
            continue
        for problem in protocols.get(campaign.protocol).validate_values(values, item.gold_label):
            log.add(where, problem)
        votes.append(ImportedVote(where, item, values))
    log.raise_if_any()
    member, created = CouncilMember.objects.get_or_create(name=member_name)
    if is_generator is not None and member.is_generator != is_generator:
        member.is_generator = is_generator
        member.save(update_fields=["is_generator"])
    saved = imported_votes_save(campaign=campaign, member=member, votes=votes)
    return {"member": member.name, "member_created": created, **saved}


def votes_summary(*, campaign: Campaign) -> dict:
    return dict(
        CouncilVote.objects.filter(campaign=campaign).values_list("member__name").annotate(n=Count("id")).order_by()
    )

"""Writes for the council: members, prompt versions, runs, votes (produced or imported), cancel."""

import random
from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef, Prefetch
from django.utils import timezone

import protocols
from annotation.models import Campaign
from council import conf
from council.client import PermanentCallError, chat
from council.models import CouncilMember, CouncilRun, CouncilVote, PromptVersion, ResponseCache
from council.prompts import DEFAULT_PROMPT_NAME, DEFAULT_TEMPLATES, build_steps, parse_answer, prompt_hash
from council.throttle import pace_reserve, slot_acquire, slot_release
from goldkey.errors import ApplicationError
from items.models import Evidence, Item, ItemKind
from items.parsing import ErrorLog, read_json
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
        raise ApplicationError(f"no council member(s) named {', '.join(missing)} (add them with council_member_add)")
    return [found[n] for n in names]




# ---------------------------------------------------------------------------------------------
# Runs


@transaction.atomic
def council_run_start(
    *, campaign: Campaign, members: list[CouncilMember], prompt_version: PromptVersion | None = None, created_by=None
) -> CouncilRun:
    """Create a run and enqueue one task per (member, item) once the transaction commits. Earlier error
    rows of these members under this prompt are cleared so they are tried again; votes are kept (a
    task finding its vote does nothing) and answers already cached are not requested again."""
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
    )
    run.members.set(members)
    CouncilVote.objects.filter(
        campaign=campaign, member__in=members, prompt_version=prompt_version.name, status=CouncilVote.Status.ERROR
    ).delete()
    member_ids = [m.pk for m in members]

    def enqueue():
        from council.tasks import council_vote

        for item_id in item_ids:
            for member_id in member_ids:
                council_vote.delay(run.pk, member_id, item_id)

    transaction.on_commit(enqueue)
    return run


def council_run_resume(*, run: CouncilRun) -> int:
    """Enqueue again every (member, item) of the run that has no vote or error row yet — for a broker
    that lost messages (the file-system broker has no acknowledgements). Safe at any time: a task
    finding its vote does nothing. Returns how many tasks were sent."""
    if run.cancelled:
        raise ApplicationError(f"run {run.pk} was cancelled")
    members = list(run.members.values_list("id", flat=True))
    done = set(
        CouncilVote.objects.filter(
            campaign_id=run.campaign_id, member_id__in=members, prompt_version=run.prompt_version.name
        ).values_list("member_id", "item_id")
    )
    item_ids = Item.objects.filter(item_set_id=run.campaign.item_set_id).values_list("id", flat=True)
    pending = [(m, i) for i in item_ids for m in members if (m, i) not in done]
    if run.status == CouncilRun.Status.FINISHED and pending:
        CouncilRun.objects.filter(pk=run.pk).update(status=CouncilRun.Status.RUNNING, finished_at=None)

    def enqueue():
        from council.tasks import council_vote

        for member_id, item_id in pending:
            council_vote.delay(run.pk, member_id, item_id)

    transaction.on_commit(enqueue)
    return len(pending)


def council_run_cancel(*, run: CouncilRun) -> CouncilRun:
    """Tasks not yet started see the flag and stop; answers already recorded stay."""
    CouncilRun.objects.filter(pk=run.pk, status__in=[CouncilRun.Status.QUEUED, CouncilRun.Status.RUNNING]).update(
        cancelled=True, status=CouncilRun.Status.CANCELLED, finished_at=timezone.now()
    )
    run.refresh_from_db()
    return run


# Run members never change after council_run_start (the tasks are enqueued once they are set), so a
# worker process reads them once per run instead of joining them into every vote's completion count.
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


def _run_finish_if_complete(run: CouncilRun) -> None:
    """One count: the run is finished when every (member, item) has its row (vote or error)."""
    have = CouncilVote.objects.filter(
        campaign_id=run.campaign_id, prompt_version=run.prompt_version.name, member_id__in=_members_of_run(run)
    ).count()
    if have >= run.total_items * run.members_count:
        CouncilRun.objects.filter(pk=run.pk, status=CouncilRun.Status.RUNNING).update(
            status=CouncilRun.Status.FINISHED, finished_at=timezone.now()
        )


def _vote_record(
    *, run: CouncilRun, member_id: int, item_id: int, status: str, values: dict, error: str, attempts: int,
    answers: list[ResponseCache] = (),
) -> CouncilVote:
    """Insert the one vote of (campaign, member, item, prompt), with the replies it was built from stored in
    the response cache in the same transaction (one commit per vote); a duplicate delivery finds the
    existing row."""
    try:
        with transaction.atomic():
            vote = CouncilVote.objects.create(
                campaign_id=run.campaign_id, member_id=member_id, item_id=item_id,
                prompt_version=run.prompt_version.name, status=status, values=values, error=error[:2000],
                run=run, attempts=attempts,
            )
            _cache_store(answers)
    except IntegrityError:
        _cache_store(answers)
        vote = CouncilVote.objects.get(
            campaign_id=run.campaign_id, member_id=member_id, item_id=item_id, prompt_version=run.prompt_version.name
        )
    _run_finish_if_complete(run)
    return vote


def _item_steps(item: Item, prompt: PromptVersion):
    view = protocols.blind_view(item)
    excerpts = excerpts_for(item)
    phase2 = None
    if item.kind == ItemKind.TWIST:
        phase2 = {"gold_type": item.gold_type, "quote": item.contradicted_quote}
        if item.gold_type != "contradicting":
            phase2["index"] = [
                {"dia_id": t.dia_id, "date": t.session.date_time_raw, "speaker": t.speaker, "text": t.text}
                for t in recipient_turns(item)
            ]
    return build_steps(prompt, prompt.protocol, view, excerpts, phase2)


class _Caller:
    """A vote's calls to its member: answers from the cache when present, else through one of the member's
    concurrency slots. The slot is leased at the first real call and kept until `release()` (the end of the
    vote): one lease per vote instead of one per call, and Phase 2 never queues behind other tasks."""

    def __init__(self, member: CouncilMember, holder: str):
        self.member, self.holder = member, holder
        self.slot: int | None = None
        self.calls = 0

    def complete(self, messages: list[dict]) -> tuple[str, str, bool]:
        """The reply for these exact messages: from the cache, else from the endpoint (one call)."""
        member = self.member
        key = prompt_hash({"messages": messages, "temperature": member.temperature, "max_tokens": member.max_tokens})
        cached = ResponseCache.objects.filter(model=member.model, prompt_hash=key).values_list("content", flat=True).first()
        if cached is not None:
            return cached, key, True
        if self.slot is None:
            self.slot = slot_acquire(member, self.holder, lease_seconds=conf.hard_time_limit())
        pace_reserve(member)
        self.calls += 1
        return chat(member, messages), key, False

    def release(self) -> None:
        if self.slot is not None:
            slot_release(self.slot, self.holder)
            self.slot = None


def _cache_store(answers: list[ResponseCache]) -> None:
    if answers:
        ResponseCache.objects.bulk_create(answers, ignore_conflicts=True)


def council_vote_produce(*, run_id: int, member_id: int, item_id: int, holder: str, attempt: int = 0) -> CouncilVote | None:
    """Ask one member about one item (Phase 1, then Phase 2 in the same chat) and record exactly one
    vote. Returns None when there is nothing to do (cancelled run, vote already recorded).

    Raises TransientCallError / Throttled for the task to retry later (replies already received are cached
    first, so the retry does not ask again). A malformed reply is asked again once with a correction; a
    second malformed reply is recorded as an error row, never as a vote."""
    already_voted = CouncilVote.objects.filter(
        campaign_id=OuterRef("campaign_id"), member_id=member_id, item_id=item_id,
        prompt_version=OuterRef("prompt_version__name"),
    )
    # One query: the run, its prompt, and whether this vote exists (re-read every time: cancel must be seen).
    run = (
        CouncilRun.objects.select_related("prompt_version").annotate(already_voted=Exists(already_voted))
        .filter(pk=run_id).first()
    )
    if run is None or run.cancelled:  # a stale message for a run that is gone, or a cancelled run
        return None
    if run.already_voted:
        return None
    prompt = run.prompt_version
    member = CouncilMember.objects.get(pk=member_id)
    item = (
        Item.objects.select_related("conversation")
        .prefetch_related(Prefetch("evidence", queryset=Evidence.objects.select_related("turn__session")))
        .get(pk=item_id)
    )
    messages = [{"role": "system", "content": prompt.system}]
    values: dict = {}
    caller = _Caller(member, holder)
    answers: list[ResponseCache] = []  # valid replies to cache, written with the vote

    def record(status: str, error: str = "") -> CouncilVote:
        caller.release()  # the call is over: free the member's slot before the writes
        return _vote_record(
            run=run, member_id=member_id, item_id=item_id, status=status, values=values, error=error,
            attempts=attempt + caller.calls, answers=answers,
        )

    try:
        for step in _item_steps(item, prompt):
            messages.append({"role": "user", "content": step.user})
            content, key, from_cache = caller.complete(messages)
            answer, problems = parse_answer(content, prompt.protocol, step.keys, item.gold_type)
            if problems and not from_cache:
                retry_messages = messages + [
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": "Your reply was not valid: " + "; ".join(problems)
                     + ". Reply again with ONLY the JSON object."},
                ]
                content, _, _ = caller.complete(retry_messages)
                answer, problems = parse_answer(content, prompt.protocol, step.keys, item.gold_type)
            if problems:
                return record(
                    CouncilVote.Status.ERROR, f"phase {step.phase}: malformed answer after one retry: {'; '.join(problems)}"
                )
            if not from_cache:
                answers.append(ResponseCache(model=member.model, prompt_hash=key, content=content))
            values.update(answer)
            messages.append({"role": "assistant", "content": content})
    except PermanentCallError as exc:
        return record(CouncilVote.Status.ERROR, str(exc))
    except BaseException:
        # Transient error, throttling, soft time limit: keep what was answered so the retry does not ask again.
        caller.release()
        _cache_store(answers)
        raise
    finally:
        caller.release()
    return record(CouncilVote.Status.OK)


def council_vote_give_up(*, run_id: int, member_id: int, item_id: int, error: str, attempts: int) -> CouncilVote:
    """Retries exhausted (or out of time): record the error row so the run can finish."""
    run = CouncilRun.objects.select_related("prompt_version").get(pk=run_id)
    return _vote_record(
        run=run, member_id=member_id, item_id=item_id, status=CouncilVote.Status.ERROR, values={}, error=error,
        attempts=attempts,
    )


def retry_delay(attempt: int, retry_after: float | None) -> float:
    """Retry-After when the server gave one; else exponential backoff with jitter, capped."""
    if retry_after is not None:
        return min(retry_after, conf.backoff_cap())
    base = conf.backoff_base() * (2**attempt)
    return min(conf.backoff_cap(), base * (0.5 + random.random() / 2))


def gates_run_enqueue(*, item_set_id: int, llm_member: CouncilMember | None = None) -> None:
    """Run the gates over an item set on the worker (after the current transaction commits)."""

    def enqueue():
        from council.tasks import gates_run_task

        gates_run_task.delay(item_set_id, llm_member.pk if llm_member else None)

    transaction.on_commit(enqueue)


# ---------------------------------------------------------------------------------------------
# Replay of released council files


@transaction.atomic
def council_votes_import(*, campaign: Campaign, path: Path, member_name: str, is_generator: bool | None = None) -> dict:
    """A released council answer file (`{"annotator", "answers": {item_id: {...}}}`) as one member's
    votes under prompt version "imported". All-or-nothing; re-importing the same file changes nothing."""
    path = Path(path)
    data = read_json(path)
    log = ErrorLog()
    if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
        log.add(f"{path.name}:1", "expected an object with an 'answers' object")
        log.raise_if_any()
    items = {i.external_id: i for i in Item.objects.filter(item_set_id=campaign.item_set_id).only("id", "external_id", "gold_type")}
    rows = []
    for external_id, values in data["answers"].items():
        where = f"{path.name}: item '{external_id}'"
        item = items.get(external_id)
        if item is None:
            log.add(where, f"not an item of campaign '{campaign.slug}'")
            continue
        if not isinstance(values, dict):
            log.add(where, "answer must be an object")
            continue
        for problem in protocols.get(campaign.protocol).validate_values(values, item.gold_type):
            log.add(where, problem)
        rows.append((item, values))
    log.raise_if_any()
    member, created = CouncilMember.objects.get_or_create(name=member_name)
    if is_generator is not None and member.is_generator != is_generator:
        member.is_generator = is_generator
        member.save(update_fields=["is_generator"])
    existing = dict(
        CouncilVote.objects.filter(campaign=campaign, member=member, prompt_version=IMPORTED).values_list("item_id", "values")
    )
    changed = [item.external_id for item, values in rows if item.pk in existing and existing[item.pk] != values]
    if changed:
        raise ApplicationError(
            f"{len(changed)} imported vote(s) of '{member_name}' differ from this file (first: {changed[0]})"
        )
    fresh = [
        CouncilVote(campaign=campaign, member=member, item=item, prompt_version=IMPORTED, values=values)
        for item, values in rows
        if item.pk not in existing
    ]
    CouncilVote.objects.bulk_create(fresh)
    return {"member": member.name, "member_created": created, "created": len(fresh), "unchanged": len(rows) - len(fresh)}


def votes_summary(*, campaign: Campaign) -> dict:
    return dict(
        CouncilVote.objects.filter(campaign=campaign).values_list("member__name").annotate(n=Count("id")).order_by()
    )

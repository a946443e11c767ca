"""Writes for the council: members, prompt versions, runs, votes (produced or imported), cancel."""

import random
from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from annotation.models import Campaign
from annotation.protocols import validate_values
from council import conf
from council.client import PermanentCallError, chat
from council.models import CouncilMember, CouncilRun, CouncilVote, PromptVersion, ResponseCache
from council.prompts import DEFAULT_PROMPT_NAME, DEFAULT_TEMPLATES, build_steps, parse_answer, prompt_hash
from council.throttle import pace_reserve, slot_acquire, slot_release
from goldkey.errors import ApplicationError, NotFound
from items.models import Item, ItemKind
from items.parsing import ErrorLog, read_json
from items.selectors import blind_view, excerpts_for, items_with_excerpts, recipient_turns

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


def campaign_by_slug(slug: str) -> Campaign:
    try:
        return Campaign.objects.select_related("item_set").get(slug=slug)
    except Campaign.DoesNotExist as exc:
        raise NotFound(f"no campaign '{slug}'") from exc


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
        total_items=len(item_ids), created_by=created_by,
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


def _run_finish_if_complete(run_id: int) -> None:
    run = CouncilRun.objects.get(pk=run_id)
    expected = run.total_items * run.members.count()
    have = CouncilVote.objects.filter(
        campaign_id=run.campaign_id, member__in=run.members.all(), prompt_version=run.prompt_version.name,
        item__item_set_id=run.campaign.item_set_id,
    ).count()
    if have >= expected:
        CouncilRun.objects.filter(pk=run_id, status=CouncilRun.Status.RUNNING).update(
            status=CouncilRun.Status.FINISHED, finished_at=timezone.now()
        )


def _vote_record(*, run: CouncilRun, member_id: int, item_id: int, status: str, values: dict, error: str, attempts: int) -> CouncilVote:
    """Insert the one vote of (campaign, member, item, prompt); a duplicate delivery finds the existing row."""
    try:
        with transaction.atomic():
            vote = CouncilVote.objects.create(
                campaign_id=run.campaign_id, member_id=member_id, item_id=item_id,
                prompt_version=run.prompt_version.name, status=status, values=values, error=error[:2000],
                run=run, attempts=attempts,
            )
    except IntegrityError:
        vote = CouncilVote.objects.get(
            campaign_id=run.campaign_id, member_id=member_id, item_id=item_id, prompt_version=run.prompt_version.name
        )
    _run_finish_if_complete(run.pk)
    return vote


def _item_steps(item: Item, prompt: PromptVersion):
    view = blind_view(item)
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


def _complete_cached(member: CouncilMember, messages: list[dict], holder: str, calls: list[int]) -> tuple[str, str, bool]:
    """The reply for these exact messages: from the cache, else from the endpoint (one call)."""
    key = prompt_hash({"messages": messages, "temperature": member.temperature, "max_tokens": member.max_tokens})
    cached = ResponseCache.objects.filter(model=member.model, prompt_hash=key).values_list("content", flat=True).first()
    if cached is not None:
        return cached, key, True
    slot = slot_acquire(member, holder, lease_seconds=conf.hard_time_limit())
    try:
        pace_reserve(member)
        calls[0] += 1
        return chat(member, messages), key, False
    finally:
        slot_release(slot, holder)


def _cache_store(model: str, key: str, content: str) -> None:
    ResponseCache.objects.bulk_create([ResponseCache(model=model, prompt_hash=key, content=content)], ignore_conflicts=True)


def council_vote_produce(*, run_id: int, member_id: int, item_id: int, holder: str, attempt: int = 0) -> CouncilVote | None:
    """Ask one member about one item (Phase 1, then Phase 2 in the same chat) and record exactly one
    vote. Returns None when there is nothing to do (cancelled run, vote already recorded).

    Raises TransientCallError / Throttled for the task to retry later. A malformed reply is asked again
    once with a correction; a second malformed reply is recorded as an error row, never as a vote."""
    run = CouncilRun.objects.select_related("prompt_version", "campaign").filter(pk=run_id).first()
    if run is None or run.cancelled:  # a stale message for a run that is gone, or a cancelled run
        return None
    prompt = run.prompt_version
    existing = CouncilVote.objects.filter(
        campaign_id=run.campaign_id, member_id=member_id, item_id=item_id, prompt_version=prompt.name
    ).first()
    if existing is not None:
        return None
    member = CouncilMember.objects.get(pk=member_id)
    item = items_with_excerpts(Item.objects.filter(pk=item_id)).get()
    messages = [{"role": "system", "content": prompt.system}]
    values: dict = {}
    calls = [0]
    try:
        for step in _item_steps(item, prompt):
            messages.append({"role": "user", "content": step.user})
            content, key, from_cache = _complete_cached(member, messages, holder, calls)
            answer, problems = parse_answer(content, prompt.protocol, step.keys, item.gold_type)
            if problems and not from_cache:
                retry_messages = messages + [
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": "Your reply was not valid: " + "; ".join(problems)
                     + ". Reply again with ONLY the JSON object."},
                ]
                content, _, _ = _complete_cached(member, retry_messages, holder, calls)
                answer, problems = parse_answer(content, prompt.protocol, step.keys, item.gold_type)
            if problems:
                return _vote_record(
                    run=run, member_id=member_id, item_id=item_id, status=CouncilVote.Status.ERROR, values=values,
                    error=f"phase {step.phase}: malformed answer after one retry: {'; '.join(problems)}",
                    attempts=attempt + calls[0],
                )
            _cache_store(member.model, key, content)
            values.update(answer)
            messages.append({"role": "assistant", "content": content})
    except PermanentCallError as exc:
        return _vote_record(
            run=run, member_id=member_id, item_id=item_id, status=CouncilVote.Status.ERROR, values=values,
            error=str(exc), attempts=attempt + calls[0],
        )
    return _vote_record(
        run=run, member_id=member_id, item_id=item_id, status=CouncilVote.Status.OK, values=values, error="",
        attempts=attempt + calls[0],
    )


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
        for problem in validate_values(campaign.protocol, values, item.gold_type):
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

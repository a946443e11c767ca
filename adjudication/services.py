"""Writes for adjudication: decisions (web, import) and the released decisions file. Every path that
records a decision goes through `decision_save`."""

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.db import connection, transaction
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.utils import timezone

import protocols
from adjudication import queue as q
from adjudication.models import Action, Decision, DecisionRevision, QueueItem, QueueState
from adjudication.selectors import QueueEntry, campaign_data, queue_from_data
from annotation.models import Answer, AnswerRevision, Campaign
from annotation.services import campaign_lock
from council.models import CouncilVote
from goldkey import roles
from goldkey.errors import ApplicationError
from goldkey.lib.bulk import bulk_insert
from goldkey.lib.jsonio import ErrorLog, ImportFailed, json_key_lines, read_json_document
from items.models import Item
from protocols.base import MAX_NOTE_CHARS


@dataclass
class DecisionResult:
    decision: Decision
    changed: bool
    # The campaign's queue state as the decision's transaction left it, when that left nothing for a sync to
    # apply (queue_decision_recorded): what the request's next queue_sync returns instead of reading it again.
    queue: QueueState | None = None
    # The decided item's place in the queue order (its stored entry's sort_key, read by the decision), when it
    # is queued: where the next undecided item is sought from (stored_queue.next_undecided's `after_key`).
    sort_key: int | None = None


# A decision's note is held to the same limit as an annotator's (protocols.base.MAX_NOTE_CHARS): it is
# carried into the release bundle and every page that lists decisions.
NOTE_MAX_CHARS = MAX_NOTE_CHARS


def _check_decision(*, campaign: Campaign, item: Item, action: str, new_gold: str, note: str, source: str) -> list[str]:
    problems = []
    choices = f"{', '.join(Action.values[:-1])} or {Action.values[-1]}"
    if not action:
        problems.append(f"choose a decision: {choices}")
    elif action not in Action.values:
        problems.append(f"'{action}' is not a decision: choose {choices}")
    if item.item_set_id != campaign.item_set_id:
        problems.append(f"item '{item.external_id}' is not in campaign '{campaign.slug}'")
    if action == Action.RELABEL:
        allowed = protocols.get(campaign.protocol).gold_values
        if new_gold not in allowed:
            problems.append(f"a relabel needs a new label: choose one of {', '.join(allowed)}"
                            + (f" ('{new_gold}' is not one)" if new_gold else ""))
    elif new_gold:
        problems.append("only a relabel carries a new label")
    # Interactive decisions must say why; a released trail is recorded as it was published.
    if action in (Action.DROP, Action.RELABEL) and not note.strip() and source != "import":
        problems.append(f"a {action} decision needs a note saying why")
    if len(note) > NOTE_MAX_CHARS:
        problems.append(f"the note is {len(note):,} characters long: keep it under {NOTE_MAX_CHARS:,}")
    return problems


def decision_save(
    *,
    campaign: Campaign,
    item: Item,
    action: str,
    new_gold: str = "",
    note: str = "",
    user=None,
    source: str = "web",
) -> DecisionResult:
    """Record (or change) the adjudicator's decision on one item: keep, drop or relabel, with a note
    (required for drop and relabel), who and when. Every change appends a DecisionRevision; saving the
    same decision again changes nothing. Decisions are made while the campaign is closed: not while
    annotators may still change the answers they rest on, and never after its key is frozen."""
    problems = _check_decision(campaign=campaign, item=item, action=action, new_gold=new_gold, note=note, source=source)
    spec = protocols.get(campaign.protocol)
    if action == Action.KEEP and spec.gold_from_answers and not problems:
        labels = {
            (values or {}).get(spec.primary_key)
            for values in Answer.objects.filter(assignment__enrollment__campaign=campaign, assignment__item=item).values_list("values", flat=True)
        }
        labels.discard(None)
        if len(labels) != 1:
            # The gold is the agreed label, else the adjudicated one: "keep" has nothing to keep here.
            problems.append("the annotators' labels differ (or are missing): set the adjudicated label with relabel")
    if problems:
        raise ApplicationError(f"{item.external_id}: " + "; ".join(problems), extra={"errors": problems})
    with transaction.atomic():
        # Hold the campaign row: a freeze waits for this decision, or this decision sees the freeze.
        campaign_lock(campaign=campaign, status=Campaign.Status.CLOSED, doing="record decisions")
        # Lock the row: two adjudicators saving at once must not both write revision n+1.
        decision = Decision.objects.select_for_update().filter(campaign=campaign, item=item).first()
        if decision is not None and (decision.action, decision.new_gold, decision.note) == (action, new_gold, note):
            return DecisionResult(decision, False)
        if decision is None:
            decision = Decision(campaign=campaign, item=item, revision=0)
        decision.action, decision.new_gold, decision.note, decision.decided_by = action, new_gold, note, user
        decision.revision += 1
        decision.save()
        DecisionRevision.objects.create(
            decision=decision, revision=decision.revision, action=action, new_gold=new_gold, note=note, decided_by=user
        )
        # A decision leaves the queue's reasons as they are; it makes the item decided and changes the
        # figures on the queue page.
        state, sort_key = queue_decision_recorded(campaign=campaign, decision=decision)
    return DecisionResult(decision, True, state, sort_key)


def _items_by_id(campaign: Campaign) -> dict[str, Item]:
    return {i.external_id: i for i in Item.objects.filter(item_set_id=campaign.item_set_id)}


def decisions_import(
    *, campaign: Campaign, path: Path, user=None, adjudicator_unknown: bool = False, dry_run: bool = False
) -> dict:
    """The released decisions file `{"exported", "decisions": {item_id: {"action", "note"?, "new_gold"?}}}`.
    Validated in full, then all-or-nothing. Items not in the file are kept (they need no record);
    an item in the file that is not queued is still recorded.

    The file does not say who decided: `user` is the adjudicator, recorded on every decision, or
    `adjudicator_unknown` says that nobody knows — the datasheet then says so, instead of claiming an
    adjudication independent of the annotators."""
    if user is None and not adjudicator_unknown:
        raise ApplicationError(
            "name the adjudicator who took these decisions (--by USERNAME), or say that it is not known "
            "(--adjudicator-unknown): the release's datasheet discloses whether the adjudicator was an annotator"
        )
    if user is not None and adjudicator_unknown:
        raise ApplicationError("give either the adjudicator (--by) or --adjudicator-unknown, not both")
    if user is not None:
        roles.require_author(user, message=f"'{user.username}' is not an author: only authors adjudicate")
    path = Path(path)
    doc, data = read_json_document(path)
    if not isinstance(data, dict) or not isinstance(data.get("decisions"), dict):
        raise ImportFailed([f'{path.name}:1: expected {{"exported", "decisions": {{item_id: {{"action", "note"?}}}}}}'])
    items = _items_by_id(campaign)
    log = ErrorLog()
    parsed = []
    lines = json_key_lines(doc.text, ("decisions",))
    for item_id, record in data["decisions"].items():
        where = f"{path.name}:{lines.get(item_id, 1)}: {item_id}"
        if not isinstance(record, dict):
            log.add(where, 'a decision must be an object {"action", "note"?}')
            continue
        unknown = set(record) - {"action", "note", "new_gold"}
        if unknown:
            log.add(where, f"unknown field(s) {', '.join(sorted(unknown))}")
        item = items.get(item_id)
        if item is None:
            log.add(where, f"no item '{item_id}' in campaign '{campaign.slug}'")
            continue
        action, note, new_gold = record.get("action", ""), record.get("note", ""), record.get("new_gold", "")
        if not all(isinstance(v, str) for v in (action, note, new_gold)):
            log.add(where, "action, note and new_gold must be strings")
            continue
        for problem in _check_decision(campaign=campaign, item=item, action=action, new_gold=new_gold, note=note, source="import"):
            log.add(where, problem)
        parsed.append((item, action, new_gold, note))
    log.raise_if_any()
    counts = {"decisions": len(parsed), "changed": 0, "by_action": {}}
    for _, action, _, _ in parsed:
        counts["by_action"][action] = counts["by_action"].get(action, 0) + 1
    if dry_run:
        return counts | {"dry_run": True}
    with transaction.atomic():
        for item, action, new_gold, note in parsed:
            result = decision_save(
                campaign=campaign, item=item, action=action, new_gold=new_gold, note=note, user=user, source="import"
            )
            counts["changed"] += result.changed
    return counts | {"dry_run": False}


def iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def decisions_export(*, campaign: Campaign, exported: str | None = None) -> dict:
    """The released decisions format; `note` and `new_gold` appear only when they carry something."""
    decisions = {}
    for d in Decision.objects.filter(campaign=campaign).select_related("item").order_by("item__external_id"):
        record = {"action": d.action}
        if d.note:
            record["note"] = d.note
        if d.new_gold:
            record["new_gold"] = d.new_gold
        decisions[d.item.external_id] = record
    return {"exported": exported or iso_now(), "decisions": decisions}


def dumps(payload: dict) -> str:
    return json.dumps(payload, indent=1, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# The stored queue (adjudication.models.QueueItem): every entry is computed by the queue's one rule,
# `selectors.queue_from_data`, over the campaign (when built) or over the few items that changed.

# More changed items than this and the queue is rebuilt whole: an IN list of thousands of ids is
# refused by SQLite, and one pass over the campaign is then cheaper than many small ones.
REFRESH_LIMIT = 500

# How long a write may stay uncommitted. PostgreSQL hands out ids when a row is inserted, so a
# transaction holding a lower id can commit after one holding a higher id that a sync has already
# seen; the marks therefore only move past rows older than this, and the ids above the mark that were
# applied are remembered instead. SQLite has one writer at a time, which commits before the next
# takes an id: there the mark moves at once (and no sync re-reads the rows of the last seconds).
COMMIT_GRACE = {"postgresql": timedelta(seconds=10)}

# How many ids above its decision mark a decision may add to the queue state itself (queue_decision_recorded).
SEEN_LIMIT = 200

# sort_key = rank · 2³² + ordinal: the queue order in one column (see QueueItem).
RANK_SHIFT = 2**32


def _entry_fields(entry: QueueEntry | None, ordinal: int, decided: bool) -> dict:
    if entry is None:  # not queued
        return {"queued": False, "sort_key": q.suggestion_rank("") * RANK_SHIFT + ordinal, "reasons": [],
                "suggestion": "", "suggestion_why": "", "blocking": False, "decided": decided, "band": ""}
    return {"queued": True, "sort_key": q.suggestion_rank(entry.suggestion) * RANK_SHIFT + ordinal,
            "reasons": list(entry.reasons), "suggestion": entry.suggestion, "suggestion_why": entry.suggestion_why,
            "blocking": entry.blocking, "decided": decided, "band": entry.band}


# What the stored entries are built from, each read as (id, item id, when written, member or None,
# this campaign's?) rows after a mark. Answers matter only while the campaign is annotating; a decision
# only makes its item decided (its reasons do not depend on it). A sync reads them by the primary key's
# range over every campaign and keeps this campaign's: filtered by campaign in SQL, SQLite walks the
# campaign's rows from the campaign side (every answer of a 100,000-item campaign, 0.7 s) to find the
# few above the mark. Other campaigns' rows move the mark past them, so each is read about once. The
# build reads the campaign's own rows (it loads the whole campaign anyway).

def _vote_rows(campaign: Campaign, after: int, *, own: bool = False) -> list[tuple]:
    rows = CouncilVote.objects.filter(id__gt=after, **({"campaign": campaign} if own else {})).order_by("id")
    return [
        (vote_id, item_id, created, name if status == CouncilVote.Status.OK else None, campaign_id == campaign.pk)
        for vote_id, item_id, created, name, status, campaign_id in rows.values_list(
            "id", "item_id", "created_at", "member__name", "status", "campaign_id"
        )
    ]  # a failed call (an error row) is no vote: no member


def _revision_rows(campaign: Campaign, after: int, *, own: bool = False) -> list[tuple]:
    rows = AnswerRevision.objects.filter(
        id__gt=after, **({"answer__assignment__enrollment__campaign": campaign} if own else {})
    ).order_by("id")
    return [
        (revision_id, item_id, saved, None, campaign_id == campaign.pk)
        for revision_id, item_id, saved, campaign_id in rows.values_list(
            "id", "answer__assignment__item_id", "saved_at", "answer__assignment__enrollment__campaign_id"
        )
    ]


def _decision_rows(campaign: Campaign, after: int, *, own: bool = False) -> list[tuple]:
    rows = Decision.objects.filter(id__gt=after, **({"campaign": campaign} if own else {})).order_by("id")
    return [
        (decision_id, item_id, decided, None, campaign_id == campaign.pk)
        for decision_id, item_id, decided, campaign_id in rows.values_list("id", "item_id", "decided_at", "campaign_id")
    ]


def _advance(rows: list[tuple], mark: int, now: datetime) -> tuple[int, list[int]]:
    """The new mark (past every row, in id order, written before the commit grace) and the ids above it."""
    grace = COMMIT_GRACE.get(connection.vendor, timedelta(0))
    for row in rows:
        if grace and row[2] >= now - grace:
            break
        mark = row[0]
    return mark, [row[0] for row in rows if row[0] > mark]


@dataclass
class _Changes:
    votes: list[tuple]
    revisions: list[tuple]
    decisions: list[tuple]

    def fresh(self, state: QueueState) -> tuple[list, list, list]:
        """The rows not applied yet."""
        votes, revisions, decisions = set(state.votes_seen), set(state.answers_seen), set(state.decisions_seen)
        return (
            [r for r in self.votes if r[4] and r[0] not in votes],
            [r for r in self.revisions if r[4] and r[0] not in revisions],
            [r for r in self.decisions if r[4] and r[0] not in decisions],
        )

    def record(self, state: QueueState, now: datetime) -> None:
        state.votes_mark, state.votes_seen = _advance(self.votes, state.votes_mark, now)
        state.answers_mark, state.answers_seen = _advance(self.revisions, state.answers_mark, now)
        state.decisions_mark, state.decisions_seen = _advance(self.decisions, state.decisions_mark, now)


def _changes(campaign: Campaign, state: QueueState, *, own: bool = False) -> _Changes:
    # A table whose newest id is at or below its mark (read with the state, see _state_with_newest) has
    # nothing above it to read.
    def above(mark: int, newest: str) -> bool:
        return (getattr(state, newest, mark + 1) or 0) > mark

    return _Changes(
        votes=_vote_rows(campaign, state.votes_mark, own=own) if above(state.votes_mark, "newest_vote") else [],
        revisions=[] if state.answers_final or not above(state.answers_mark, "newest_revision")
        else _revision_rows(campaign, state.answers_mark, own=own),
        decisions=_decision_rows(campaign, state.decisions_mark, own=own)
        if above(state.decisions_mark, "newest_decision") else [],
    )


# Each table the marks follow, for _pending: its model, the path to its rows' campaign, the field of when
# a row was written, and the state's (mark, ids seen above it, newest id) fields.
_HELD = (
    (CouncilVote, "campaign_id", "created_at", ("votes_mark", "votes_seen", "newest_vote")),
    (AnswerRevision, "answer__assignment__enrollment__campaign_id", "saved_at", ("answers_mark", "answers_seen", "newest_revision")),
    (Decision, "campaign_id", "decided_at", ("decisions_mark", "decisions_seen", "newest_decision")),
)


def _pending(campaign: Campaign, state: QueueState, now: datetime) -> bool:
    """Whether a sync would change anything: a row of this campaign above a mark and not applied yet, or
    a mark that moves (the first row above it is older than the commit grace). The same answer as
    reading the rows (_changes), from their ids and one comparison in SQL: inside the grace after a bulk
    write, tens of thousands of rows stay above a mark, and building them for every read of the queue
    took 150 ms (30,000 council votes) where their ids take a few."""
    grace = COMMIT_GRACE.get(connection.vendor, timedelta(0))
    for model, campaign_path, written, (mark_field, seen_field, newest_field) in _HELD:
        mark = getattr(state, mark_field)
        if (getattr(state, newest_field, mark + 1) or 0) <= mark or (model is AnswerRevision and state.answers_final):
            continue  # nothing above the mark, or answers that can no longer change (see _changes)
        if not grace:
            return True  # every row above the mark moves it
        # In id order, each row's campaign and whether it is older than the grace (a boolean: a time read
        # for each of them cost most of the rows' time).
        rows = model.objects.filter(id__gt=mark).order_by("id").annotate(
            old=ExpressionWrapper(Q(**{f"{written}__lt": now - grace}), output_field=BooleanField())
        ).values_list("id", campaign_path, "old")
        seen = set(getattr(state, seen_field))
        for n, (row_id, campaign_id, old) in enumerate(rows):
            if (n == 0 and old) or (campaign_id == campaign.pk and row_id not in seen):
                return True
    return False


def _state_with_newest(campaign: Campaign, *, lock: bool = False, entry_of: int | None = None) -> QueueState | None:
    """The campaign's queue state with the newest id of each table its marks follow (`newest_vote`,
    `newest_revision`, `newest_decision`: each the last entry of a primary-key index), in one query: when
    none is above its mark, nothing changed. `entry_of`: an item whose stored entry is read with it, as
    `entry_id`, `entry_queued`, `entry_blocking`, `entry_decided` and `entry_sort_key` (None when it has
    none). `lock`: the state row stays locked until the transaction ends.

    Written out in SQL rather than built from querysets: every adjudication page and every decision reads
    it, and Django spent 1.1 ms of CPU building it with its three subqueries, 2.2 ms with the entry's (a
    tenth of a decision answered with the next page), where this statement costs ~0.1 ms."""
    table = {model: connection.ops.quote_name(model._meta.db_table)
             for model in (QueueState, QueueItem, CouncilVote, AnswerRevision, Decision)}
    # The state's columns named, not `state.*`: on PostgreSQL the statement is prepared on the connection,
    # and a prepared statement whose columns change under it (a migration adding one) fails.
    columns = ", ".join(f"state.{connection.ops.quote_name(f.column)}" for f in QueueState._meta.concrete_fields)
    sql = (
        f"SELECT {columns}, (SELECT MAX(id) FROM {table[CouncilVote]}) AS newest_vote,"
        f" (SELECT MAX(id) FROM {table[AnswerRevision]}) AS newest_revision,"
        f" (SELECT MAX(id) FROM {table[Decision]}) AS newest_decision,"
        " entry.id AS entry_id, entry.queued AS entry_queued, entry.blocking AS entry_blocking,"
        " entry.decided AS entry_decided, entry.sort_key AS entry_sort_key"
        f" FROM {table[QueueState]} state LEFT JOIN {table[QueueItem]} entry"
        " ON entry.campaign_id = state.campaign_id AND entry.item_id = %s"  # no entry for NULL
        " WHERE state.campaign_id = %s"
    )
    if lock and connection.features.has_select_for_update:  # SQLite has one writer at a time: no row locks
        sql += " FOR UPDATE OF state"
    return next(iter(QueueState.objects.raw(sql, [entry_of, campaign.pk])), None)


def _nothing_above(state: QueueState) -> bool:
    return (
        (state.newest_vote or 0) <= state.votes_mark
        and (state.newest_decision or 0) <= state.decisions_mark
        and (state.answers_final or (state.newest_revision or 0) <= state.answers_mark)
    )



@transaction.atomic
def queue_build(*, campaign: Campaign) -> QueueState:
    """Build the campaign's stored queue in one pass: a row per item, queued or not, in external-id order."""
    state, _ = QueueState.objects.select_for_update().get_or_create(campaign=campaign)
    now = timezone.now()
    answers_final = campaign.status != Campaign.Status.ANNOTATING
    # Read what the build includes before loading it: a row written after this is applied by a later sync.
    state.votes_mark = state.answers_mark = state.decisions_mark = 0
    state.answers_final = answers_final
    changes = _changes(campaign, state, own=True)
    data = campaign_data(campaign)
    entries = {entry.item.id: entry for entry in queue_from_data(data)}
    QueueItem.objects.filter(campaign=campaign).delete()
    rows = [
        {"campaign_id": campaign.pk, "item_id": item.id, "ordinal": ordinal, "place": 0,
         **_entry_fields(entries.get(item.id), ordinal, item.id in data.decisions)}
        for ordinal, item in enumerate(data.items)
    ]
    for place, row in enumerate(sorted((r for r in rows if r["queued"]), key=lambda r: r["sort_key"])):
        row["place"] = place
    bulk_insert(QueueItem, rows)
    changes.record(state, now)
    state.n_items, state.n_queued = len(data.items), len(entries)
    state.council_members = data.council_members
    state.version += 1
    state.save()
    return state


def _queue_refresh(campaign: Campaign, state: QueueState, item_ids: set[int]) -> None:
    """Recompute the stored entries of `item_ids` (at most REFRESH_LIMIT) with the queue's one rule."""
    data = campaign_data(campaign, item_ids=item_ids, council_members=state.council_members)
    entries = {entry.item.id: entry for entry in queue_from_data(data)}
    rows = list(QueueItem.objects.filter(campaign=campaign, item_id__in=item_ids))
    reordered = False
    for row in rows:
        was = (row.queued, row.sort_key)
        for name, value in _entry_fields(entries.get(row.item_id), row.ordinal, row.item_id in data.decisions).items():
            setattr(row, name, value)
        state.n_queued += int(row.queued) - int(was[0])
        reordered = reordered or (row.queued, row.sort_key) != was and (row.queued or was[0])
    QueueItem.objects.bulk_update(rows, list(_entry_fields(None, 0, False)))
    if reordered:
        _queue_renumber(campaign)


def _queue_renumber(campaign: Campaign) -> None:
    """Every queued entry's `place` from the queue order, in one statement over the queue's index (the
    ORM has no UPDATE from a window function; UPDATE … FROM is PostgreSQL's and SQLite's since 3.33).
    Only the rows whose place moved are written."""
    table = connection.ops.quote_name(QueueItem._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET place = ranked.n FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY sort_key) - 1 AS n "
            f"FROM {table} WHERE campaign_id = %s AND queued) AS ranked "
            f"WHERE {table}.id = ranked.id AND {table}.place <> ranked.n",
            [campaign.pk],
        )


def queue_sync(*, campaign: Campaign, recorded: QueueState | None = None) -> QueueState:
    """The campaign's stored queue, brought up to date: built on its first use, then refreshed for the
    items whose answers (while the campaign is annotating) or council votes changed since, and marked
    decided where a decision was written.

    Changes are found by id marks (`QueueState`) rather than by each writer remembering to call in:
    answers and votes are written by lower layers, which may not import this app, and a decision
    written by any path counts. One indexed query when nothing is above the marks, whatever the
    campaign size (on PostgreSQL, rows of the last seconds stay above them: see COMMIT_GRACE; their ids
    are then looked at again, a query per table that has any: _pending). A vote from a member the stored queue has not
    counted yet changes the council band of every item, so the queue is then rebuilt whole.

    `recorded`: the state a decision of this request left with nothing to apply (DecisionResult.queue): it
    is what this sync would find, as of the decision's commit, and is returned without reading it again or
    looking at the rows the commit grace holds above the marks (a row committed since is the next sync's)."""
    if recorded is not None and recorded.answers_final:  # a campaign that has just closed is synced in full
        return recorded
    state = _state_with_newest(campaign)
    if state is None:
        return queue_build(campaign=campaign)
    closing = not state.answers_final and campaign.status != Campaign.Status.ANNOTATING
    if _nothing_above(state) and not closing:
        return state
    now = timezone.now()
    if not (closing or _pending(campaign, state, now)):
        return state
    with transaction.atomic():
        # Another request may be applying the same rows: one at a time, each on the latest marks.
        state = _state_with_newest(campaign, lock=True)
        changes = _changes(campaign, state)
        votes, revisions, decisions = changes.fresh(state)
        new_members = {row[3] for row in votes if row[3]} - set(state.council_members)
        items = {row[1] for row in votes} | {row[1] for row in revisions}
        if new_members or len(items) > REFRESH_LIMIT:
            return queue_build(campaign=campaign)
        if items:
            _queue_refresh(campaign, state, items)
        decided = sorted({row[1] for row in decisions})
        for start in range(0, len(decided), REFRESH_LIMIT):  # an imported decisions file: thousands at once
            QueueItem.objects.filter(campaign=campaign, item_id__in=decided[start:start + REFRESH_LIMIT]).update(decided=True)
        if items or decisions:
            state.version += 1
        changes.record(state, now)
        if not state.answers_final:
            # Answers cannot change once the campaign is closed: the revisions read now are the last.
            state.answers_final = campaign.status != Campaign.Status.ANNOTATING
        state.save()
    return state


def queue_decision_recorded(*, campaign: Campaign, decision: Decision) -> tuple[QueueState | None, int | None]:
    """A decision was saved (in the caller's transaction): its item is decided, the cached decision
    counts move with it (when they were current), the queue page's figures are out of date, and a new
    decision row is taken as applied, as a sync would take it, so the next read of the queue has nothing
    to do. (A sync would find the new decision too; this keeps the stored queue exact at commit on the
    service path, and marks a changed decision, which makes no new row.) Returns the state it left when
    that leaves a sync nothing to apply — no vote or answer above its mark, and every decision row above
    the mark read here and found applied — for the sync the request makes next (queue_sync's `recorded`),
    else None; and the item's sort_key when it is queued (DecisionResult.sort_key), else None."""
    # Locked: a sync applying rows, or another decision, reads and writes the same marks and counts. The
    # item's stored entry is read with it, and the newest ids (_state_with_newest), so that the state it
    # leaves tells a sync right after whether anything is left to apply.
    state = _state_with_newest(campaign, lock=True, entry_of=decision.item_id)
    if state is None:  # no stored queue yet: its build reads every decision
        return None, None
    counts_current = state.counts_version == state.version
    if state.entry_id is not None and not state.entry_decided:
        QueueItem.objects.filter(pk=state.entry_id).update(decided=True)
        if state.entry_queued and counts_current:
            state.n_decided += 1
            state.n_undecided -= int(state.entry_blocking)
    # Nothing above the mark (a changed decision, which makes no new row, with none written since).
    decisions_applied = (state.newest_decision or 0) <= state.decisions_mark
    if decision.pk > state.decisions_mark and len(state.decisions_seen) < SEEN_LIMIT:  # a new row
        # The rows above the mark, read and passed as a sync would (few: the mark follows every sync),
        # unless one of this campaign's is not applied yet: the next sync applies it, and then this one.
        # (A changed decision keeps its row. Many rows held above the mark — an imported file's decisions
        # inside one PostgreSQL transaction, all younger than the grace — are left to the next sync,
        # which reads them once, instead of each decision re-reading all before it.)
        # The row right after the mark with none held above it (on SQLite, each decision after the
        # last): no row lies between the mark and it (ids are integers), so it is the row the mark moves
        # to, without a read. (A younger row another transaction committed above it, on PostgreSQL,
        # stays above the mark, where the next sync reads it, as it reads every row there.)
        alone = decision.pk == state.decisions_mark + 1 and not state.decisions_seen
        rows = ([(decision.pk, decision.item_id, decision.decided_at, None, True)] if alone
                else _decision_rows(campaign, state.decisions_mark))
        seen = {*state.decisions_seen, decision.pk}
        if not any(row[4] and row[0] not in seen for row in rows):
            state.decisions_mark, state.decisions_seen = _advance(rows, state.decisions_mark, timezone.now())
            # Every row above the mark was read (or, alone, none is above the new one but its own).
            decisions_applied = not alone or state.newest_decision == decision.pk
    state.version += 1
    if counts_current:
        state.counts_version = state.version
    state.save(update_fields=["n_decided", "n_undecided", "decisions_mark", "decisions_seen", "version", "counts_version"])
    others_applied = (state.newest_vote or 0) <= state.votes_mark and (
        state.answers_final or (state.newest_revision or 0) <= state.answers_mark)
    sort_key = state.entry_sort_key if state.entry_queued else None
    return (state if decisions_applied and others_applied else None), sort_key


def queue_page_cache_store(*, state: QueueState, counts: tuple[int, int] | None = None, figures: dict | None = None) -> None:
    """Cache the queue page's decision counts and/or figures for the state `state.version` (see
    pages.queue_page_view); a change since (the row's version moved on) leaves the cache as it was."""
    fields = {}
    if counts is not None:
        fields.update(n_decided=counts[0], n_undecided=counts[1], counts_version=state.version)
    if figures is not None:
        fields.update(figures=figures, figures_version=state.version)
    QueueState.objects.filter(pk=state.pk, version=state.version).update(**fields)

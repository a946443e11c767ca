"""Reads for the council: triage bands and flags, pairwise kappa, run progress. Constant queries."""

from collections import Counter
from itertools import combinations

from django.db.models import Count, Q
from django.utils import timezone

import protocols
from annotation.models import Campaign
from council.models import CouncilBatch, CouncilMember, CouncilRun, CouncilVote, GateVerdict
from goldkey.lib.statistics import cohen_kappa, paired
from items.models import Item
from protocols.base import BANDS


def band_for(gold_verdict: str, verdicts: list[str | None], *, protocol: str) -> str:
    """PROTOCOL §4. `verdicts` has one entry per council member (None: no vote); cannot-tell abstains.
    The one band rule (protocols.base.council_band), the queue's too."""
    return protocols.get(protocol).band(gold_verdict, verdicts)


def flags_for(votes: dict[str, dict], *, protocol: str) -> list[dict]:
    """Per member, the answers the protocol flags (TWIST: q2 'no', claim not self-contained; q3
    'conflict', with the turn)."""
    flags = []
    for name, values in votes.items():
        for flag in protocols.get(protocol).council_flags:
            if values.get(flag.key) == flag.value:
                flags.append({"member": name, "flag": flag.name, "turn": values.get(flag.turn_key, "") if flag.turn_key else ""})
    return flags


def council_votes(campaign: Campaign, prompt_version: str | None = None):
    qs = CouncilVote.objects.filter(campaign=campaign, status=CouncilVote.Status.OK)
    if prompt_version:
        qs = qs.filter(prompt_version=prompt_version)
    return qs.select_related("member").only(
        "item_id", "values", "prompt_version", "created_at", "member__name", "member__is_generator"
    ).order_by("created_at", "id")


def triage_sealed(campaign: Campaign) -> bool:
    """The triage page shows detector votes (e.g. a Lapse judge's labels) only once they may be seen: a
    protocol that seals them until every disagreement is decided keeps them off this page until the
    campaign is frozen (the council cannot see the adjudication queue; the adjudication pages unseal them
    as soon as the last disagreement is decided)."""
    return protocols.get(campaign.protocol).detectors_sealed_until_decided and campaign.status != Campaign.Status.FROZEN


def detector_sealed_campaigns():
    """The campaigns whose detector labels no page outside adjudication may show yet (as `triage_sealed`),
    as a subquery of ids for the admin's lists."""
    sealing = [p.name for p in protocols.specs() if p.detectors_sealed_until_decided]
    return Campaign.objects.filter(protocol__in=sealing).exclude(status=Campaign.Status.FROZEN).values("pk")


def triage(campaign: Campaign, prompt_version: str | None = None) -> dict:
    """Every item of the campaign with its gold, each member's vote, band and flags; members in
    name order with their circularity; pairwise kappa on q1. Two queries whatever the size."""
    latest: dict[tuple[int, str], dict] = {}
    members: dict[str, bool] = {}
    for vote in council_votes(campaign, prompt_version):
        latest[(vote.item_id, vote.member.name)] = vote.values  # later votes win (ordered by time)
        members[vote.member.name] = vote.member.is_generator
    names = sorted(members)
    spec = protocols.get(campaign.protocol)
    rows = []
    items = Item.objects.filter(item_set_id=campaign.item_set_id).only("id", "external_id", "gold_label", "content").order_by("external_id")
    for item in items:
        votes = {name: latest.get((item.pk, name), {}) for name in names}
        gold = spec.verdict_of(item.gold_label)
        band = spec.council_band(item.gold_label, [votes[n] for n in names])
        flags = flags_for(votes, protocol=campaign.protocol)
        rows.append({
            "item_id": item.pk, "external_id": item.external_id, "gold_type": item.gold_label, "gold_verdict": gold,
            "draft": item.draft, "recipient": item.recipient, "votes": votes, "band": band, "flags": flags,
            "triage": band != "unanimous_match" or bool(flags),
        })
    kappas = {}
    for a, b in combinations(names, 2):
        x, y = paired([r["votes"][a].get("q1") for r in rows], [r["votes"][b].get("q1") for r in rows])
        kappas[f"{a}|{b}"] = {"kappa": cohen_kappa(x, y), "n": len(x)}
    return {
        "members": [{"name": n, "is_generator": members[n]} for n in names],
        "rows": rows,
        "bands": {band: sum(r["band"] == band for r in rows) for band in BANDS} if names else {},
        "pairwise_kappa": kappas,
        "triage_candidates": sum(r["triage"] for r in rows),
    }


def circularity_note(members: list[dict]) -> str:
    generators = [m["name"] for m in members if m["is_generator"]]
    if not generators:
        return ""
    return (
        f"Circularity: {', '.join(generators)} also generated these items; "
        f"{'its' if len(generators) == 1 else 'their'} votes may share the generator's blind spots."
    )


def council_report(campaign: Campaign, prompt_version: str | None = None) -> dict:
    data = triage(campaign, prompt_version)
    return {
        "campaign": campaign.slug,
        "bands": data["bands"],
        "pairwise_kappa": {pair: round(v["kappa"], 4) for pair, v in data["pairwise_kappa"].items()},
        "pairwise_n": {pair: v["n"] for pair, v in data["pairwise_kappa"].items()},
        "members": data["members"],
        "triage_candidates": data["triage_candidates"],
        "flags": dict(Counter(f"{f['member']}|{f['flag']}" for r in data["rows"] for f in r["flags"])),
        "circularity": circularity_note(data["members"]),
    }


# What a member of a run is doing, as its progress shows it.
STATE_DONE, STATE_RETRYING, STATE_CALLING, STATE_WAITING, STATE_ENDED = "done", "retrying", "calling", "waiting", "ended"


def _member_states(run: CouncilRun) -> dict[int, dict]:
    """Per member id: what its open batches are doing (one query). Retrying after a transient error wins
    over calling, which wins over waiting for a worker (a batch sent, not picked up, or short of a slot)."""
    now = timezone.now()
    states: dict[int, dict] = {}
    rank = {STATE_RETRYING: 0, STATE_CALLING: 1, STATE_WAITING: 2}
    for batch in CouncilBatch.objects.filter(run=run, finished=False).values(
        "member_id", "holder", "lease_until", "waiting_until", "waiting_reason"
    ):
        if batch["waiting_until"] is not None and batch["waiting_until"] > now:
            seconds = (batch["waiting_until"] - now).total_seconds()
            state = {"state": STATE_RETRYING, "detail": batch["waiting_reason"], "retry_in": round(seconds, 1)}
        elif batch["holder"] and (batch["lease_until"] is None or batch["lease_until"] > now):
            state = {"state": STATE_CALLING, "detail": "", "retry_in": None}
        else:
            state = {"state": STATE_WAITING, "detail": "waiting for a worker", "retry_in": None}
        current = states.get(batch["member_id"])
        if current is None or rank[state["state"]] < rank[current["state"]]:
            states[batch["member_id"]] = state
    return states


def run_progress(run: CouncilRun) -> dict:
    """Per member: done, errors, remaining and what it is doing (three queries)."""
    members = list(run.members.order_by("name").values("id", "name", "is_generator"))
    counts = {
        row["member_id"]: row
        for row in CouncilVote.objects.filter(
            campaign_id=run.campaign_id, prompt_version=run.prompt_version.name, member__in=[m["id"] for m in members]
        ).values("member_id").annotate(
            done=Count("id", filter=Q(status=CouncilVote.Status.OK)),
            errors=Count("id", filter=Q(status=CouncilVote.Status.ERROR)),
        ).order_by()
    }
    ended = run.status in (CouncilRun.Status.FINISHED, CouncilRun.Status.CANCELLED, CouncilRun.Status.STALLED)
    states = {} if ended else _member_states(run)
    out = []
    for m in members:
        c = counts.get(m["id"], {"done": 0, "errors": 0})
        remaining = max(0, run.total_items - c["done"] - c["errors"])
        if remaining == 0:
            state = {"state": STATE_DONE, "detail": "", "retry_in": None}
        elif ended:
            state = {"state": STATE_ENDED, "detail": "", "retry_in": None}
        else:
            state = states.get(m["id"], {"state": STATE_WAITING, "detail": "waiting for a worker", "retry_in": None})
        out.append({"member": m["name"], "is_generator": m["is_generator"], "done": c["done"], "errors": c["errors"],
                    "remaining": remaining, "total": run.total_items, **state})
    finished = all(m["remaining"] == 0 for m in out)
    return {
        "run": run.pk, "status": run.status, "cancelled": run.cancelled, "prompt_version": run.prompt_version.name,
        "stalled_reason": run.stalled_reason,
        "members": out, "finished": finished,
        # Cancel is offered while the run can still start votes: not once it has ended.
        "can_cancel": not (ended or run.cancelled or finished),
    }


def runs_for_campaign(campaign: Campaign):
    return CouncilRun.objects.filter(campaign=campaign).select_related("prompt_version").prefetch_related("members")


def members_all():
    return CouncilMember.objects.order_by("name")


def gate_summary():
    """Per item set: items checked and blocking rejects per gate, warnings per gate (one query)."""
    summary: dict[str, dict] = {}
    per_gate: dict[tuple[str, str], int] = {}
    rows = GateVerdict.objects.values("item_set__name", "gate", "blocking", "passed").annotate(n=Count("id")).order_by()
    for row in rows:
        entry = summary.setdefault(row["item_set__name"], {"rejected": {}, "warnings": {}, "checked": 0})
        per_gate[row["item_set__name"], row["gate"]] = per_gate.get((row["item_set__name"], row["gate"]), 0) + row["n"]
        if row["passed"]:
            continue
        bucket = "rejected" if row["blocking"] else "warnings"
        entry[bucket][row["gate"]] = entry[bucket].get(row["gate"], 0) + row["n"]
    # Items checked: the gate that ran on the most of them (the first structural gate runs on every item; a
    # protocol with only a verification gate of its own has that one).
    for (name, _), n in per_gate.items():
        summary[name]["checked"] = max(summary[name]["checked"], n)
    return summary


def gate_rejects(item_set) -> list[dict]:
    """Every item a blocking gate rejected, with all its verdicts — for audits and release exports."""
    verdicts = GateVerdict.objects.filter(item_set=item_set).select_related("item").order_by("item__external_id", "gate")
    by_item: dict[str, list[dict]] = {}
    rejected: set[str] = set()
    for v in verdicts:
        by_item.setdefault(v.item.external_id, []).append(
            {"gate": v.gate, "passed": v.passed, "blocking": v.blocking, "detail": v.detail}
        )
        if v.blocking and not v.passed:
            rejected.add(v.item.external_id)
    return [{"id": external_id, "verdicts": by_item[external_id]} for external_id in sorted(rejected)]

"""Generation gates (PROTOCOL §5): structural, model-free checks and the verification-as-seen LLM gate.

Each gate is a pure function of the item (with its evidence turns and conversation prefetched) that
returns (passed, detail). `gates_run` stores one GateVerdict per (item, gate); rejects keep their verdicts.
"""

import re
import time

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils.module_loading import import_string

import protocols
from council.client import PermanentCallError, TransientCallError, chat
from council.models import CouncilMember, GateVerdict, ResponseCache
from council.prompts import SCHEMA_MARKER, format_excerpts, prompt_hash
from council.services import gates_member_check, retry_delay
from goldkey.errors import ApplicationError
from goldkey.lib.jsonsafe import json_loads_checked
from items.models import EVIDENCE_ROLE, Item, ItemSet
from items.selectors import excerpts_for, items_with_excerpts
from items.services import TWIST_V0_SCHEMA
from protocols import twist_b

DIA_ID = re.compile(r"^D(\d+):(\d+)$")
SENTENCE_END = ".!?…"
STRUCTURAL = ("recipient_speaker", "verbatim_quote", "evidence_ids")
WARNINGS = ("addressee",)
VERIFICATION = "verification"
NOT_APPLICABLE = "not applicable: "


def _normalize(text: str) -> str:
    """Letter case, surrounding whitespace, sentence-final punctuation and inner runs of spaces."""
    return re.sub(r"\s+", " ", text.strip().rstrip(SENTENCE_END).strip()).lower()


def _evidence(item: Item) -> list:
    """The turns a TWIST Track B item cites as its evidence (its citations in that role)."""
    return [ev for ev in item.evidence.all() if ev.role == EVIDENCE_ROLE]


def gate_recipient_speaker(item: Item) -> tuple[bool, str]:
    others = [f"{ev.turn.dia_id} by {ev.turn.speaker}" for ev in _evidence(item) if ev.turn.speaker != item.recipient]
    if others:
        return False, f"cited turn(s) not spoken by the recipient {item.recipient}: {', '.join(others)}"
    return True, ""


def gate_verbatim_quote(item: Item) -> tuple[bool, str]:
    if item.gold_label != twist_b.CONTRADICTING:
        return True, "not a contradicting item"
    if item.item_set.schema == TWIST_V0_SCHEMA:
        return True, NOT_APPLICABLE + "the v0 pilot schema carries no contradicted quotes"
    quote = _normalize(item.contradicted_quote)
    if not quote:
        return False, "contradicting item without a contradicted_quote (absence-based?)"
    for ev in _evidence(item):
        if quote in _normalize(ev.turn.text):
            return True, f"quote found in {ev.turn.dia_id}"
    return False, "the quote is not in any cited turn"


def gate_evidence_ids(item: Item) -> tuple[bool, str]:
    evidence = _evidence(item)
    if not evidence:
        return False, "no evidence cited"
    problems = []
    seen = set()
    for ev in evidence:
        turn = ev.turn
        if not DIA_ID.match(turn.dia_id):
            problems.append(f"'{turn.dia_id}' is not of the form D<session>:<turn>")
        elif turn.conversation_id != item.conversation_id:
            problems.append(f"'{turn.dia_id}' is not a turn of {item.conversation.external_id}")
        elif int(DIA_ID.match(turn.dia_id).group(1)) != turn.session.number:
            problems.append(f"'{turn.dia_id}' does not name its session ({turn.session.number})")
        if turn.dia_id in seen:
            problems.append(f"'{turn.dia_id}' cited twice")
        seen.add(turn.dia_id)
    return (not problems), "; ".join(problems)


def gate_addressee(item: Item) -> tuple[bool, str]:
    """Non-blocking: the draft addresses the conversation's other participant by name (a likely role flip)."""
    if item.conversation is None:
        return True, ""
    other = item.conversation.other_speaker(item.recipient)
    name = re.escape(other.split()[0]) if other else ""
    if not name:
        return True, ""
    vocative = re.compile(
        rf"(^\W*(?:(?:hey|hi|hello|dear|oh|wow|congrats|congratulations|thanks|thank you)\W+)?{name}\b)|(,\s*{name}\s*[,.!?])",
        re.IGNORECASE,
    )
    if vocative.search(item.draft):
        return False, f"the draft to {item.recipient} addresses {other} by name"
    return True, ""


STRUCTURAL_GATES = {
    "recipient_speaker": gate_recipient_speaker,
    "verbatim_quote": gate_verbatim_quote,
    "evidence_ids": gate_evidence_ids,
    "addressee": gate_addressee,
}

VERIFY_SYSTEM = "You are validating an item for a benchmark of memory systems. Answer with a single JSON object only."
VERIFY_PROMPT = """You see ONLY (a) a few excerpts retrieved from a long conversation record, exactly as a vetting system
would see them, and (b) a draft message someone proposes to send to {recipient}. Judge strictly from the excerpt text.

Excerpts:
{excerpts}

Draft to {recipient}:
{draft}

1. contradicts — would sending the draft contradict the record? The dated excerpts are the LATEST known record — do
not excuse an incompatibility by imagining undocumented later changes. Acknowledging a change, asking a question about
a possible change, or merely discussing the same topic is NOT a contradiction.
2. claim_stated — do the excerpts BY THEMSELVES explicitly state, in {recipient}'s own words, the fact or stance at
issue? Answer false if identifying it requires guessing who a plan belongs to, resolving a pronoun, or reading between
the lines of a reply.

Reply with ONLY a JSON object of this shape:
{marker} {{"contradicts": [true, false], "claim_stated": [true, false]}}"""


def verification_messages(item: Item) -> list[dict]:
    """From the dated, standalone excerpts only: no type, family, rationale, quote or generation context."""
    return [
        {"role": "system", "content": VERIFY_SYSTEM},
        {"role": "user", "content": VERIFY_PROMPT.format(
            recipient=item.recipient, draft=item.draft, excerpts=format_excerpts(excerpts_for(item)), marker=SCHEMA_MARKER
        )},
    ]


def parse_verification(content: str) -> dict | None:
    try:
        data = json_loads_checked(content.strip())
    except ValueError:  # JSONDecodeError and JsonRefused (deep nesting, NaN) alike: not a verdict
        return None
    if not isinstance(data, dict) or set(data) != {"contradicts", "claim_stated"}:
        return None
    if not all(isinstance(v, bool) for v in data.values()):
        return None
    return data


def verifier_reply(member: CouncilMember, messages: list[dict], parse, retries: int = 2) -> tuple[object, str, str]:
    """(the parsed verdict, the reply, '') of a verification gate's call, or (None, reply or '', why not).
    A reply already cached for this member and prompt is reused; a transient error is retried a few times,
    waiting as every council call does (`retry_delay`: the server's Retry-After, else capped backoff); a
    reply `parse` cannot read is asked again. Only a reply that parses is cached."""
    key = prompt_hash({"messages": messages, "temperature": member.temperature, "max_tokens": member.max_tokens})
    content = ResponseCache.objects.filter(model=member.model, prompt_hash=key).values_list("content", flat=True).first()
    verdict = parse(content) if content is not None else None
    attempts = 0
    last_error = ""
    while verdict is None and attempts <= retries:
        attempts += 1
        try:
            content = chat(member, messages)
        except TransientCallError as exc:
            content = None
            last_error = str(exc)
            if attempts <= retries:
                time.sleep(retry_delay(attempts - 1, exc.retry_after))
            continue
        except PermanentCallError as exc:
            return None, "", f"verifier error: {exc}"
        verdict = parse(content)
        last_error = f"malformed verifier reply: {content[:200]!r}"
    if verdict is None:
        return None, content or "", f"no verdict from {member.name}: {last_error}"
    ResponseCache.objects.bulk_create(
        [ResponseCache(model=member.model, prompt_hash=key, content=content)], ignore_conflicts=True
    )
    return verdict, content, ""


def gate_verification(item: Item, member: CouncilMember, retries: int = 2) -> tuple[bool, str]:
    """A contradicting item survives only with contradicts AND claim_stated; a consistent one only
    without contradicts. No verdict after the retries is a blocking failure that says why."""
    verdict, _, failure = verifier_reply(member, verification_messages(item), parse_verification, retries)
    if verdict is None:
        return False, failure
    text = f"contradicts={verdict['contradicts']} claim_stated={verdict['claim_stated']}"
    if item.gold_label == twist_b.CONTRADICTING:
        return verdict["contradicts"] and verdict["claim_stated"], text
    return not verdict["contradicts"], text


def gates_run(*, item_set_id: int, llm_member_id: int | None = None) -> dict:
    """Every gate on every item of the set; one stored verdict per (item, gate), replaced on re-run.
    The LLM gate runs only on items that passed the blocking structural gates (as in generation). A set whose
    protocol names gates of its own (`ProtocolSpec.set_gates`) runs those instead, through the member."""
    item_set = ItemSet.objects.get(pk=item_set_id)
    member = CouncilMember.objects.get(pk=llm_member_id) if llm_member_id else None
    own = protocols.for_kind(item_set.kind).set_gates
    if own:  # the protocol's sets have gates of their own, in its wing (named by dotted path: council does not import it)
        gates_member_check(item_set=item_set, llm_member=member)
        return import_string(own)(item_set_id=item_set.pk, llm_member_id=member.pk)
    items = list(
        items_with_excerpts(Item.objects.filter(item_set=item_set).select_related("item_set"))
    )
    verdicts: list[GateVerdict] = []
    rejected_by_gate = {gate: 0 for gate in (*STRUCTURAL, *((VERIFICATION,) if member else ()))}
    warnings = {gate: 0 for gate in WARNINGS}
    not_applicable = {gate: 0 for gate in STRUCTURAL}
    passed_items = 0
    for item in items:
        blocking_failed = False
        for gate, check in STRUCTURAL_GATES.items():
            ok, detail = check(item)
            if detail.startswith(NOT_APPLICABLE):
                not_applicable[gate] += 1
            blocking = gate not in WARNINGS
            verdicts.append(GateVerdict(item_set=item_set, item=item, gate=gate, passed=ok, blocking=blocking, detail=detail))
            if not ok and blocking:
                rejected_by_gate[gate] += 1
                blocking_failed = True
            elif not ok:
                warnings[gate] += 1
        if member is not None and not blocking_failed:
            ok, detail = gate_verification(item, member)
            verdicts.append(GateVerdict(item_set=item_set, item=item, gate=VERIFICATION, passed=ok, detail=detail))
            if not ok:
                rejected_by_gate[VERIFICATION] += 1
                blocking_failed = True
        passed_items += not blocking_failed
    verdicts_store(item_set=item_set, verdicts=verdicts)
    return {
        "item_set": item_set.name, "checked": len(items), "passed": passed_items,
        "rejected_by_gate": rejected_by_gate, "warnings": warnings, "llm": member.name if member else None,
        "not_applicable": {gate: n for gate, n in not_applicable.items() if n},
    }


def verdicts_store(*, item_set: ItemSet, verdicts: list[GateVerdict], gates: tuple[str, ...] | None = None) -> None:
    """Replace the item set's gate verdicts (those of `gates` only, when named) and set each item's
    `gate_rejected` from its blocking failures: the item's own flag is what campaigns and keys read (they sit
    below the council in the layers)."""
    with transaction.atomic():
        old = GateVerdict.objects.filter(item_set=item_set)
        (old.filter(gate__in=gates) if gates is not None else old).delete()
        GateVerdict.objects.bulk_create(verdicts, batch_size=2000)
        Item.objects.filter(item_set=item_set).update(gate_rejected=Exists(
            GateVerdict.objects.filter(item=OuterRef("pk"), blocking=True, passed=False)
        ))


def item_set_by_name(name: str) -> ItemSet:
    try:
        return ItemSet.objects.get(name=name)
    except ItemSet.DoesNotExist as exc:
        raise ApplicationError(f"no item set named '{name}'") from exc

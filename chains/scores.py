"""A TWIST Track C run's scores (TWIST §3.4; docs/twist_c.md): a memory system's free-text answers to a frozen
Track C key's queries, graded by an LLM judge through the council's client, and the report that shows the
judge beside the figures.

The judge must be admissible on Track C decoys (`chains.decoys`, `judged-decoys/2`): its latest calibration
for the same model is read, and a judge that has none, whose model changed since, or that failed a class is
refused with a message naming the failing classes. Every figure carries an interval (Wilson; Newcombe's
for resolution responsiveness, a difference of two rates), and the report pins the judge's model, its judge
prompt version and its per-class calibration. `chain_run_import` stores a run's grades with its judge pinned
(`chains.models.ChainRun`), and the score page reports them through the same `run_report`.
"""

import hashlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.db import transaction

from chains.gates import chain_items_query, chain_of
from chains.models import ChainRun
from council.client import PermanentCallError, TransientCallError, chat
from council.models import CouncilMember
from goldkey.errors import ApplicationError
from goldkey.lib import statistics as st
from goldkey.lib.jsonio import ErrorLog, column_length, read_jsonl, text_too_long
from judges.models import JudgeCalibration
from keys.models import GoldKey
from protocols import judged
from protocols.twist_c import SPEC, decoys, metrics
from protocols.twist_c import chain as tc
from protocols.twist_c import judge as chain_judge
from scoring.services import _scorable_key

MAX_ANSWER = 20_000  # a free-text answer: a few pages at most
METRIC_LABELS = {
    "current_answer_rate": "current-answer rate (C1, C2)",
    "stale_answer_rate": "stale-answer rate (C1, C2)",
    "history_retention": "history retention, every state in order (C3)",
    "stale_after_resolution": "stale after resolution (C4)",
    "coexistence_retention": "coexistence retention (HN-C1; Goldkey's control metric)",
}


def judge_admitted(member: CouncilMember) -> JudgeCalibration:
    """The judge's latest Track C calibration, if it is admissible for this model; else ApplicationError naming
    why (the failing classes, when it failed)."""
    calibration = JudgeCalibration.objects.filter(member=member, template_version=decoys.DECOY_VERSION).first()
    if calibration is None:
        raise ApplicationError(f"judge {member.name} has no Track C decoy calibration ({decoys.DECOY_VERSION}): "
                               "run decoy_calibration on a Track C item set first")
    if calibration.judge_model != member.model:
        raise ApplicationError(f"judge {member.name} was calibrated as {calibration.judge_model}, not {member.model}: "
                               "calibrate the model that scores")
    if not calibration.admissible:
        raise ApplicationError(decoys.refusal(member.name, calibration.results.get("failing") or ["not admissible"]))
    return calibration


def _answers(path: Path, known: set[str]) -> dict[str, str]:
    """{"item_id": str, "answer": str} per line, every id a key item, each once; all or nothing."""
    log = ErrorLog()
    answers: dict[str, str] = {}
    for line, record in read_jsonl(path, log):
        where = f"{path.name}:{line}"
        item_id, answer = record.get("item_id"), record.get("answer")
        if not isinstance(item_id, str) or not item_id:
            log.add(where, "field 'item_id': must be a non-empty string")
        elif item_id not in known:
            log.add(where, f"field 'item_id': '{item_id}' is not an item of this key")
        elif item_id in answers:
            log.add(where, f"field 'item_id': '{item_id}' is answered twice")
        if not isinstance(answer, str):
            log.add(where, "field 'answer': must be a string")
        elif len(answer) > MAX_ANSWER:
            log.add(where, f"field 'answer': {len(answer):,} characters; an answer holds at most {MAX_ANSWER:,}")
        if not log.errors and isinstance(item_id, str) and isinstance(answer, str):
            answers[item_id] = answer
    if not answers and not log.errors:
        log.add(f"{path.name}:1", "no answers in file")
    log.raise_if_any()
    return answers


def _grade(member: CouncilMember, prompt: str) -> str:
    messages = [{"role": "user", "content": prompt}]
    try:
        reply = chat(member, messages)
    except TransientCallError:
        reply = chat(member, messages)
    return judged.judge_verdict(reply)


def _track_c_key(version: str) -> GoldKey:
    key = _scorable_key(version)  # frozen, and its entries still hash to what was sealed
    if key.kind != SPEC.item_kind:
        raise ApplicationError(f"key '{key.version}' is not a TWIST Track C key")
    return key


def key_chains(key: GoldKey) -> dict[str, tc.ChainItem]:
    """The chains of a frozen key's kept items, by external id (four queries), with the gold answer, the step values
    and the superseded values the key froze into its entries: a run is graded against the sealed key, whatever
    became of its items since."""
    frozen = {external_id: {SPEC.quote_field: quote, **(detail or {})}
              for external_id, quote, detail in key.entries.values_list("external_id", "quote", "detail")}
    return {item.external_id: chain_of(item, frozen=frozen[item.external_id])
            for item in chain_items_query(key.campaign.item_set) if item.external_id in frozen}


def run_grades(*, member: CouncilMember, chains: dict[str, tc.ChainItem], answers: dict[str, str]) -> dict[str, dict]:
    """The judge's yes / no grades of each answer: {item id: {"gold": bool[, "stale": bool]}} (the prompts of
    `judge.answer_prompts`: against the gold, and for an update chain against the belief it replaced)."""
    jobs = [(item_id, part, prompt) for item_id, answer in answers.items()
            for part, prompt in chain_judge.answer_prompts(chains[item_id], answer).items()]
    try:
        with ThreadPoolExecutor(max_workers=max(1, member.concurrency)) as pool:
            replies = list(pool.map(lambda job: _grade(member, job[2]), jobs))
    except (TransientCallError, PermanentCallError) as exc:
        raise ApplicationError(f"judge {member.name} could not grade the run: {exc}") from exc
    grades: dict[str, dict[str, bool]] = {item_id: {} for item_id in answers}
    for (item_id, part, _), verdict in zip(jobs, replies, strict=True):
        grades[item_id][part] = verdict == "correct"
    return grades


def run_report(*, key_version: str, chains: dict[str, tc.ChainItem], grades: dict[str, dict], judge: dict,
               calibration: JudgeCalibration) -> dict:
    """Each metric with its interval, from a run's grades, beside the judge that gave them (`judge`: its
    "member", "model" and "judge_prompt_version") and the calibration that admitted it. Missing answers count
    as "other" (neither current nor stale): a system that says nothing has not retained anything. The one
    report of a run, whether just graded (`chain_run_report`) or stored (`chains.selectors`)."""
    verdicts = [
        (chain, metrics.answer_verdict(chain, gold_yes=grades[item_id].get("gold", False),
                                       stale_yes=grades[item_id].get("stale", False))
         if item_id in grades else metrics.ANSWERED_OTHER)
        for item_id, chain in sorted(chains.items())
    ]
    counts = metrics.run_metrics(verdicts)
    figures = {
        name: {"label": METRIC_LABELS[name], "k": c["k"], "n": c["n"], "rate": c["k"] / c["n"] if c["n"] else None,
               "wilson": list(st.wilson_interval(c["k"], c["n"]))}
        for name, c in counts.items()
    }
    before, after = counts["stale_answer_rate"], counts["stale_after_resolution"]
    responsiveness = metrics.resolution_responsiveness(counts)
    figures["resolution_responsiveness"] = {
        "label": "resolution responsiveness (stale-answer rate minus stale after resolution)",
        "rate": responsiveness,
        "newcombe": list(st.newcombe_difference_interval(before["k"], before["n"], after["k"], after["n"]))
        if responsiveness is not None else None,
    }
    return st.json_safe({
        "key": key_version, "items": len(chains), "answered": len(grades),
        "verdicts": {chain.id: verdict for chain, verdict in verdicts},
        "metrics": figures,
        "judge": {
            **judge,
            "calibration": {"id": calibration.pk, "created_at": calibration.created_at.isoformat(), "seed": calibration.seed,
                            "decoys": calibration.template_version, "item_set": calibration.item_set.name,
                            "admissible": calibration.admissible, "classes": calibration.results.get("classes", {}),
                            "gold": calibration.results.get("gold", {})},
        },
    })


def _judge_pinned(member: CouncilMember) -> dict:
    return {"member": member.name, "model": member.model, "judge_prompt_version": chain_judge.JUDGE_PROMPT_VERSION}


def chain_run_report(*, version: str, path: Path, member: CouncilMember) -> dict:
    """Grade a run's answers (`path`) to a frozen Track C key with an admissible judge, and report each metric
    with its interval beside the judge's calibration. Stores nothing (`chain_run_import` stores the grades)."""
    key = _track_c_key(version)
    calibration = judge_admitted(member)
    chains = key_chains(key)
    grades = run_grades(member=member, chains=chains, answers=_answers(Path(path), set(chains)))
    return run_report(key_version=key.version, chains=chains, grades=grades, judge=_judge_pinned(member),
                      calibration=calibration)


def chain_run_import(*, version: str, path: Path, member: CouncilMember, system: str, user=None) -> ChainRun:
    """Grade a run's answers to a frozen Track C key with an admissible judge and store the grades, the judge
    pinned beside them (its model, prompt version and the calibration that admitted it). All or nothing: a bad
    file, a judge that is refused or a call that fails stores nothing; a system already scored against the key
    is refused (import it under another name)."""
    system = system.strip()
    if not system:
        raise ApplicationError("system: give the run's system a name")
    if problem := text_too_long(system, column_length(ChainRun, "system")):
        raise ApplicationError(f"system: {problem}")  # before the judge is called: its grades would be lost
    key = _track_c_key(version)
    if ChainRun.objects.filter(key=key, system=system).exists():
        raise ApplicationError(f"system '{system}' already has a run scored against '{key.version}'")
    calibration = judge_admitted(member)
    path = Path(path)
    chains = key_chains(key)
    answers = _answers(path, set(chains))
    grades = run_grades(member=member, chains=chains, answers=answers)  # the judge's calls, outside the transaction
    pinned = _judge_pinned(member)
    with transaction.atomic():
        return ChainRun.objects.create(
            key=key, system=system, source_name=path.name, source_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
            member=member, judge=pinned["member"], judge_model=pinned["model"],
            judge_prompt_version=pinned["judge_prompt_version"], calibration=calibration, grades=grades, imported_by=user,
        )

"""The Lapse pair gate (pure): the two members of every matched pair of stimuli are compared token by
token, and the pair is rejected if they differ anywhere outside the intended marking (the verb group and
a bound phrase). `build_with_gate` is the builder's output with every rejected pair dropped."""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass
from datetime import date

from lapse.stimuli import FRAME_BY_SLUG, PAIRS, Stimulus, stimuli_build, tokenize


def matched_pairs(stimuli: list[Stimulus]) -> list[tuple[Stimulus, Stimulus]]:
    """Members that share everything but the form, for each pair type of PAIRS."""
    index = {}
    for s in stimuli:
        index[(s.component, s.arm, s.frame, s.cluster, s.carrier, s.lexeme_pair, s.gap, s.form)] = s
    pairs = []
    for key, s in index.items():
        for marked, control in PAIRS:
            if s.form == marked:
                other = index.get((*key[:-1], control))
                if other is not None:
                    pairs.append((s, other))
    return pairs


def pair_gate(a: Stimulus, b: Stimulus) -> list[str]:
    """Problems with a matched pair (empty = passes): the two members may differ only in the verb
    group and a bound phrase; everything else — carrier, date, query, witness — must be identical."""
    problems = []
    for attr in ("frame", "cluster", "gap", "gap_date", "carrier", "query", "witness", "eval_date"):
        if getattr(a, attr) != getattr(b, attr):
            problems.append(f"{attr} differs: {getattr(a, attr)!r} vs {getattr(b, attr)!r}")
    if a.form == b.form:
        problems.append(f"both members have form '{a.form}'")
    frame = FRAME_BY_SLUG.get(a.frame)
    if frame is None:
        return problems + [f"unknown frame '{a.frame}'"]
    allowed = frame.marking_tokens() | {a.bound.split()[-1] if a.bound else "", b.bound.split()[-1] if b.bound else ""}
    allowed.discard("")
    tokens_a, tokens_b = tokenize(a.history), tokenize(b.history)
    matcher = difflib.SequenceMatcher(a=tokens_a, b=tokens_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changed = tokens_a[i1:i2] + tokens_b[j1:j2]
        outside = [t for t in changed if t.lower() not in allowed]
        if outside:
            problems.append(
                f"differs outside the marking: {' '.join(tokens_a[i1:i2])!r} vs {' '.join(tokens_b[j1:j2])!r}"
            )
    return problems


@dataclass
class BuildReport:
    eval_date: str
    stimuli: list[Stimulus]
    pairs_checked: int
    rejected: list[dict]

    def counts(self) -> dict:
        def tally(attr):
            out: dict[str, int] = {}
            for s in self.stimuli:
                out[getattr(s, attr)] = out.get(getattr(s, attr), 0) + 1
            return dict(sorted(out.items()))

        return {
            "n_stimuli": len(self.stimuli),
            "per_component": tally("component"),
            "per_arm": tally("arm"),
            "per_frame": tally("frame"),
            "per_form": tally("form"),
            "per_gap": tally("gap"),
            "per_carrier": tally("carrier"),
            "pairs_checked": self.pairs_checked,
            "pairs_rejected": len(self.rejected),
        }

    def sha256(self) -> str:
        body = "\n".join(json.dumps(s.as_dict(), sort_keys=True) for s in self.stimuli)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


def build_with_gate(*, eval_date: date) -> BuildReport:
    """Build every stimulus and gate every matched pair; a rejected pair drops both members."""
    stimuli = stimuli_build(eval_date=eval_date)
    pairs = matched_pairs(stimuli)
    rejected, dropped = [], set()
    for a, b in pairs:
        problems = pair_gate(a, b)
        if problems:
            rejected.append({"pair": [a.case_id, b.case_id], "problems": problems})
            dropped.update({a.case_id, b.case_id})
    kept = [s for s in stimuli if s.case_id not in dropped]
    return BuildReport(eval_date=eval_date.isoformat(), stimuli=kept, pairs_checked=len(pairs), rejected=rejected)

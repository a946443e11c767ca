"""Reads of TWIST Track C runs: who may read a key's Track C scores, and every stored run's report."""

from chains.models import ChainRun
from chains.scores import key_chains, run_report
from goldkey import roles
from goldkey.errors import NotFound
from keys import selectors as key_selectors
from keys.models import GoldKey
from protocols.twist_c import SPEC


def get_chain_key_for_author(version: str, user) -> GoldKey:
    """A frozen Track C key whose runs `user` may read: authors only (a run's per-item verdicts and its judge's
    calibration are an author's working material), and only a key they may read at all
    (`keys.selectors.get_key_for_user`: an author annotating one of its items is blind to it). The one check
    the score page and its API make."""
    roles.require_author(user, message="Only authors may open a key's Track C scores.")
    key = key_selectors.get_key_for_user(version, user)
    if key.kind != SPEC.item_kind or not key.is_frozen:
        raise NotFound(f"no frozen TWIST Track C key '{version}'")
    return key


def chain_runs(key: GoldKey) -> list[ChainRun]:
    return list(ChainRun.objects.filter(key=key).select_related("calibration__item_set").order_by("id"))


def chain_run_reports(key: GoldKey) -> list[dict]:
    """Every run stored against the key with its report (`chains.scores.run_report`, recomputed from the run's
    grades and the key's chains), in import order: a constant number of queries whatever the number of runs."""
    runs = chain_runs(key)
    if not runs:
        return []
    chains = key_chains(key)
    return [
        {"id": run.pk, "system": run.system, "source": {"name": run.source_name, "sha256": run.source_sha256},
         "imported_at": run.imported_at.isoformat(),
         **run_report(key_version=key.version, chains=chains, grades=run.grades, calibration=run.calibration,
                      judge={"member": run.judge, "model": run.judge_model, "judge_prompt_version": run.judge_prompt_version})}
        for run in runs
    ]

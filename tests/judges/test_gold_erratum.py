"""An accepted "the gold answer is wrong" flag is a fix-reference erratum of the frozen key: it names the
question and carries the corrected gold answer; an author accepts it by labelling every answer to that
question against the corrected answer on a re-judge page (an LLM judge's verdicts as suggestions), and the
derived version carries those labels, marked, with the whole trail in changes_from_parent.jsonl. The
parent's sealed bytes never change."""

import json

import pytest
from rest_framework.test import APIClient

from adjudication.services import decision_save
from annotation.services import campaign_create
from annotation.transfer import answers_load
from council.services import council_member_add
from goldkey.errors import ApplicationError
from items.models import Item, ItemSet
from judges.services import answer_external_id, judged_release_import, judged_sample_create
from keys.models import Erratum, KeyEntry, Provenance
from keys.releases import release_files
from keys.services import erratum_decide, erratum_file, erratum_rejudge, key_derive, key_freeze, key_publish
from protocols import judged
from tests.conftest import close_campaign
from tests.judges.test_release_import import TINY, answer, write_run
from tests.judges.test_release_sample import annotate, write_runs

pytestmark = pytest.mark.django_db

NEW_GOLD = "cobalt blue"
# The second run's answer states the corrected gold in the frame the fake strict judge accepts.
RIGHT = judged.TEMPLATES[judged.GOLD].format(answer=NEW_GOLD)
R1, R2 = "tiny.json_testlog_r1", "tiny.json_testlog_r2"
FIRST, SECOND = answer_external_id("tiny0001", R1), answer_external_id("tiny0001", R2)
NOTE = "The evidence says the shed is cobalt blue."


@pytest.fixture
def key(tmp_path, annotator_a, annotator_b, author):
    """A frozen key over both runs' answers, A having flagged tiny0001's gold on the first run's answer."""
    runs = [
        write_run(tmp_path / f"{R1}.jsonl.eval-results-judge-x", [answer("tiny0001"), answer("tiny0002")]),
        write_run(tmp_path / f"{R2}.jsonl.eval-results-judge-x", [answer("tiny0001", label=False, hypothesis=RIGHT)]),
    ]
    judged_release_import(questions=TINY, runs=runs, item_set_name="tiny")
    item_set = Item.objects.get(external_id=FIRST).item_set
    campaign = campaign_create(slug="erratum", item_set=item_set, annotators=[annotator_a, annotator_b], seed=3)
    verdicts = {FIRST: "incorrect", SECOND: "incorrect", answer_external_id("tiny0002", R1): "correct"}
    answers_load(campaign=campaign, annotator="A", answers={
        **{i: {"verdict": v} for i, v in verdicts.items()},
        FIRST: {"verdict": "incorrect", "gold_wrong": "yes", "gold_wrong_note": NOTE}})
    answers_load(campaign=campaign, annotator="B", answers={i: {"verdict": v} for i, v in verdicts.items()})
    close_campaign(campaign, author)
    decision_save(campaign=campaign, item=Item.objects.get(external_id=FIRST), action="relabel", new_gold="incorrect",
                  note="against the released gold; the flag goes to errata", user=author)
    key = key_freeze(campaign=campaign, version="tiny-v1", user=author)
    key_publish(key=key, user=author)
    return key


def file_fix(key, user, question="tiny0001", value=NEW_GOLD) -> Erratum:
    return erratum_file(key=key, item_external_id=question, kind=Erratum.Kind.FIX_REFERENCE, value=value,
                        description=NOTE, user=user)


def test_a_fix_reference_erratum_is_filed_through_the_key_page_form_naming_the_question(client, key, annotator_a):
    client.force_login(annotator_a)
    response = client.post(f"/keys/{key.version}/errata/", {
        "item": "tiny0001", "kind": "fix-reference", "value": NEW_GOLD, "description": NOTE})
    assert response.status_code == 302
    erratum = Erratum.objects.get(key=key)
    assert (erratum.kind, erratum.item_external_id, erratum.value) == ("fix-reference", "tiny0001", NEW_GOLD)


def test_a_fix_reference_erratum_is_filed_through_the_api(key, annotator_a):
    api = APIClient()
    api.force_authenticate(annotator_a)
    response = api.post(f"/api/keys/{key.version}/errata/", {
        "item": "tiny0001", "kind": "fix-reference", "value": NEW_GOLD, "description": NOTE}, format="json")
    assert response.status_code == 201 and response.json()["rejudged"] == {}


@pytest.mark.parametrize(("question", "value", "refusal"), [
    ("tiny9999", NEW_GOLD, "not a question"),
    ("tiny0001", "", "corrected reference answer"),
])
def test_a_fix_reference_erratum_needs_a_cited_question_and_the_corrected_answer(key, annotator_a, question, value, refusal):
    with pytest.raises(ApplicationError, match=refusal):
        file_fix(key, annotator_a, question=question, value=value)


def test_a_fix_reference_erratum_is_not_accepted_without_re_judging_its_answers(key, annotator_a, author):
    erratum = file_fix(key, annotator_a)
    with pytest.raises(ApplicationError, match="re-judge page"):
        erratum_decide(erratum=erratum, accept=True, note="yes", user=author)
    assert erratum_decide(erratum=erratum, accept=False, note="the released gold stands", user=author).status == "rejected"


def test_the_re_judge_page_shows_the_new_gold_beside_every_answer_to_the_question(client, key, annotator_a, author):
    erratum = file_fix(key, annotator_a)
    client.force_login(author)
    html = client.get(f"/keys/errata/{erratum.pk}/rejudge/").content.decode()
    assert f'data-testid="new-reference"><strong>{NEW_GOLD}</strong>' in html
    assert html.count('data-testid="rejudge-row"') == 2 and FIRST in html and SECOND in html
    assert "From what you&#x27;ve told me, the answer is cobalt blue." in html  # the answers themselves


def test_the_re_judge_page_is_for_authors(client, key, annotator_a):
    erratum = file_fix(key, annotator_a)
    client.force_login(annotator_a)
    assert client.get(f"/keys/errata/{erratum.pk}/rejudge/").status_code == 403


def test_a_configured_judge_suggests_its_verdict_against_the_new_gold(client, key, annotator_a, author, fake_llm):
    council_member_add(name="strict", base_url=fake_llm.base_url, model="fake-judge-strict", timeout_seconds=5.0)
    erratum = file_fix(key, annotator_a)
    client.force_login(author)
    html = client.get(f"/keys/errata/{erratum.pk}/rejudge/?judge=strict").content.decode()
    rows = html.split('data-testid="rejudge-row"')[1:]
    suggested = {row.split("</td>")[0].split(">")[-1]: row.split('data-testid="suggestion">')[1].split("<")[0] for row in rows}
    assert suggested == {FIRST: "incorrect", SECOND: "correct"}


@pytest.fixture
def derived(client, key, annotator_a, author):
    erratum = file_fix(key, annotator_a)
    client.force_login(author)
    response = client.post(f"/keys/errata/{erratum.pk}/rejudge/", {
        f"label-{FIRST}": "incorrect", f"label-{SECOND}": "correct", f"suggested-{SECOND}": "correct",
        "judge": "strict", "note": "the flag holds: the shed is cobalt blue"})
    assert response.status_code == 302
    return key_derive(parent=key, version="tiny-v2", user=author)


def test_the_form_accepts_the_erratum_with_every_label_and_who_decided(derived, author):
    erratum = Erratum.objects.get(kind="fix-reference")
    assert (erratum.status, erratum.decided_by) == ("accepted", author)
    assert erratum.rejudged == {FIRST: {"gold": "incorrect", "suggested": "", "judge": ""},
                                SECOND: {"gold": "correct", "suggested": "correct", "judge": "strict"}}


def test_every_answer_to_the_question_is_re_judged_in_the_derived_version(derived, key):
    entries = {e.external_id: e for e in KeyEntry.objects.filter(key=derived)}
    assert (entries[FIRST].gold, entries[SECOND].gold) == ("incorrect", "correct")
    assert {entries[FIRST].provenance, entries[SECOND].provenance} == {Provenance.CHANGED_BY_ERRATUM}
    other = answer_external_id("tiny0002", R1)
    assert entries[other].provenance == KeyEntry.objects.get(key=key, external_id=other).provenance


def test_each_re_judged_entry_carries_the_corrected_reference_under_the_hash_and_the_parent_the_released_one(derived, key):
    released = Item.objects.get(external_id=FIRST).context.content["answer"]
    parent = {e.external_id: e.detail for e in KeyEntry.objects.filter(key=key)}
    assert parent[FIRST] == parent[SECOND] == {"answer": released} != {"answer": NEW_GOLD}
    (key_file,) = [c for p, c in release_files(derived).items() if p.split("/")[-1] == "key.jsonl"]
    records = {r["id"]: r for r in map(json.loads, key_file.decode().splitlines())}
    assert records[FIRST]["reference"] == records[SECOND]["reference"] == NEW_GOLD
    assert records[answer_external_id("tiny0002", R1)]["reference"] != NEW_GOLD


def test_the_parent_keys_sealed_bytes_are_unchanged(client, key, annotator_a, author):
    before, sha = release_files(key), key.sha256
    erratum = file_fix(key, annotator_a)
    erratum_rejudge(erratum=erratum, labels={FIRST: "incorrect", SECOND: "correct"}, note="holds", user=author)
    key_derive(parent=key, version="tiny-v2", user=author)
    key.refresh_from_db()
    assert key.sha256 == sha and release_files(key) == before


def test_the_derived_release_carries_the_re_judged_trail_in_changes_from_parent(derived, author):
    (changes,) = [c for p, c in release_files(derived).items() if p.endswith("changes_from_parent.jsonl")]
    rows = {r["item"]: r for r in map(json.loads, changes.decode().splitlines())}
    assert set(rows) == {FIRST, SECOND}
    trail = rows[SECOND]["errata"][0]
    assert (trail["kind"], trail["question"], trail["reference"], trail["decided_by"]) == (
        "fix-reference", "tiny0001", NEW_GOLD, author.get_username())
    assert trail["rejudged"] == {"gold": "correct", "suggested": "correct", "judge": "strict"}
    assert rows[SECOND]["fields"]["verdict"] == ["incorrect", "correct"]
    assert rows[FIRST]["fields"]["reference"][1] == NEW_GOLD  # its verdict stands, against the new reference


def test_a_re_judge_that_leaves_an_answer_unlabelled_is_refused_naming_the_field(key, annotator_a, author):
    erratum = file_fix(key, annotator_a)
    with pytest.raises(ApplicationError) as refused:
        erratum_rejudge(erratum=erratum, labels={FIRST: "incorrect"}, note="", user=author)
    assert refused.value.extra["errors"] == [f"field 'labels.{SECOND}': '' is not one of correct, incorrect"]
    assert Erratum.objects.get(pk=erratum.pk).status == "filed"


def test_the_derived_versions_judge_audit_compares_the_judge_with_the_re_judged_labels(tmp_path, annotator_a, annotator_b, author):
    judged_release_import(questions=TINY, runs=write_runs(tmp_path), item_set_name="tiny")
    sample = judged_sample_create(item_set=ItemSet.objects.get(name="tiny"), slug="tiny-sample",
                                  annotators=[annotator_a, annotator_b], half_width=0.3, seed=5, minimum=1, user=author)
    annotate(sample.campaign, author)
    key = key_freeze(campaign=sample.campaign, version="LME-TINY-v1", user=author)
    question = KeyEntry.objects.filter(key=key).select_related("item__context").first().item.context.external_id
    flip = {"correct": "incorrect", "incorrect": "correct"}
    # The first answer's label flips, any other stays: the judge then agrees with one label more or one fewer.
    entries = list(KeyEntry.objects.filter(key=key, item__context__external_id=question).order_by("external_id"))
    labels = {e.external_id: flip[e.gold] if n == 0 else e.gold for n, e in enumerate(entries)}
    erratum = file_fix(key, author, question=question)
    erratum_rejudge(erratum=erratum, labels=labels, note="re-judged", user=author)
    derived = key_derive(parent=key, version="LME-TINY-v2", user=author)

    def agreed(version) -> int:
        judge = {i: h["judge"]["label"] == "yes" for i, h in Item.objects.values_list("external_id", "content__hidden")}
        return sum(judge[e.external_id] == (e.gold == "correct") for e in KeyEntry.objects.filter(key=version))

    overall = derived.manifest["judge_audit"]["agreement"][0]
    assert overall["agreement"]["k"] == agreed(derived) != agreed(key) == key.manifest["judge_audit"]["agreement"][0]["agreement"]["k"]


def test_the_api_re_judges_with_every_label_and_a_missing_one_is_a_json_400_naming_the_field(key, annotator_a, author):
    erratum = file_fix(key, annotator_a)
    api = APIClient()
    api.force_authenticate(author)
    url = f"/api/errata/{erratum.pk}/rejudge/"
    refused = api.post(url, {"labels": {FIRST: "incorrect"}, "note": "holds"}, format="json")
    assert refused.status_code == 400 and f"labels.{SECOND}" in json.dumps(refused.json())
    accepted = api.post(url, {"labels": {FIRST: "incorrect", SECOND: "correct"}, "note": "holds"}, format="json")
    assert accepted.status_code == 200 and accepted.json()["rejudged"][SECOND]["gold"] == "correct"
    api.force_authenticate(annotator_a)
    assert api.post(f"/api/errata/{file_fix(key, author, question='tiny0002').pk}/rejudge/",
                    {"labels": {}, "note": "x"}, format="json").status_code == 403

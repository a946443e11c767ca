"""The admin of system runs and their predictions: read-only records, for authors and admins only."""

import json

import pytest

from scoring import selectors as score_selectors
from scoring import services as score_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored_run(frozen_key, author, tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps({"item_id": e.item_id, "aligned": False, "evidence": ["D1:1"]}) + "\n"
                            for e in score_selectors.key_items(frozen_key)))
    [run] = score_services.score_import(version=frozen_key.version, path=path, system="flatrag:openai", user=author)
    return run


def run_admin_urls(run) -> list[str]:
    return ["/admin/scoring/systemrun/", f"/admin/scoring/systemrun/{run.pk}/change/",
            f"/admin/scoring/runprediction/?run__id__exact={run.pk}",
            f"/admin/scoring/runprediction/{run.predictions.first().pk}/change/"]


def test_an_author_reads_a_run_and_its_predictions_in_the_admin(client, author, stored_run):
    client.force_login(author)
    assert "flatrag" in client.get("/admin/scoring/systemrun/").content.decode()
    page = client.get(f"/admin/scoring/systemrun/{stored_run.pk}/change/").content.decode()
    count = stored_run.predictions.count()
    assert stored_run.source_sha256 in page and f"{count} predictions" in page
    assert 'name="system"' not in page and 'name="_save"' not in page  # shown, not a form
    listing = client.get(f"/admin/scoring/runprediction/?run__id__exact={stored_run.pk}").content.decode()
    assert all(p.item_external_id in listing for p in stored_run.predictions.all())


def test_an_author_cannot_change_add_or_delete_a_run_or_a_prediction(client, author, stored_run):
    client.force_login(author)
    change = client.post(f"/admin/scoring/systemrun/{stored_run.pk}/change/",
                         {"system": "forged", "configuration": "x", "ingest": 1, "source_name": "f", "source_sha256": "0" * 64})
    assert change.status_code == 403
    prediction = stored_run.predictions.order_by("pk").first()
    assert client.post(f"/admin/scoring/runprediction/{prediction.pk}/change/", {"aligned": "on"}).status_code == 403
    assert client.get("/admin/scoring/systemrun/add/").status_code == 403
    assert client.post(f"/admin/scoring/systemrun/{stored_run.pk}/delete/", {"post": "yes"}).status_code == 403
    stored_run.refresh_from_db()
    prediction.refresh_from_db()
    assert (stored_run.system, stored_run.configuration, prediction.aligned) == ("flatrag", "openai", False)


def test_an_annotator_cannot_reach_runs_in_the_admin_even_as_staff_with_every_model_permission(client, annotator_a, stored_run):
    from django.contrib.auth.models import Permission

    client.force_login(annotator_a)
    for url in run_admin_urls(stored_run):
        assert client.get(url).status_code == 302  # not staff: sent to the admin login
    annotator_a.is_staff = True
    annotator_a.save()
    annotator_a.user_permissions.set(Permission.objects.filter(content_type__app_label="scoring"))
    client.force_login(annotator_a)
    for url in run_admin_urls(stored_run):
        assert client.get(url).status_code == 403, url
    assert "systemrun" not in client.get("/admin/").content.decode()

"""Public errata without a flood: a repeat is refused, and one account has a bounded number awaiting a decision."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from goldkey.errors import ApplicationError
from keys.models import Erratum
from keys.services import MAX_OPEN_ERRATA_PER_USER, erratum_decide, erratum_file


def _file(key, user, item="s-0000", description="not self-contained"):
    return erratum_file(key=key, item_external_id=item, kind="drop", description=description, user=user)


def test_the_same_erratum_twice_is_refused_naming_the_first(frozen_key, outsider, annotator_a):
    first = _file(frozen_key, outsider)
    with pytest.raises(ApplicationError, match=f"erratum {first.pk} already proposes this for 's-0000'"):
        _file(frozen_key, annotator_a, description="said differently")
    assert Erratum.objects.count() == 1


def test_the_same_erratum_may_be_filed_again_once_the_first_is_decided(frozen_key, outsider, author):
    erratum_decide(erratum=_file(frozen_key, outsider), accept=False, note="it is self-contained", user=author)
    assert _file(frozen_key, outsider).status == Erratum.Status.FILED


def _fill(key, user):
    # Distinct items, so none is a repeat of another.
    for n in range(MAX_OPEN_ERRATA_PER_USER):
        Erratum.objects.create(key=key, item_external_id=f"x-{n}", kind="drop", description="d", filed_by=user)


def test_an_account_with_too_many_errata_awaiting_a_decision_is_refused(frozen_key, outsider):
    _fill(frozen_key, outsider)
    with pytest.raises(ApplicationError, match=f"you have {MAX_OPEN_ERRATA_PER_USER} errata awaiting a decision") as caught:
        _file(frozen_key, outsider)
    assert caught.value.status_code == 429
    assert Erratum.objects.filter(item_external_id="s-0000").count() == 0


def test_the_api_answers_429_when_the_limit_is_reached(frozen_key, outsider):
    _fill(frozen_key, outsider)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=outsider).key}")
    response = client.post(
        f"/api/keys/{frozen_key.version}/errata/", {"item": "s-0000", "kind": "drop", "description": "x"}, format="json"
    )
    assert response.status_code == 429
    assert "awaiting a decision" in response.json()["detail"]


def test_authors_are_not_limited(frozen_key, author):
    _fill(frozen_key, author)
    assert _file(frozen_key, author).filed_by == author

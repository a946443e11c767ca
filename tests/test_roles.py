"""One author check: `goldkey.roles.is_author` / `require_author`, used by every page, API view,
service and admin; no other module reads a user's groups."""

import re
from pathlib import Path

import pytest

from goldkey import roles
from goldkey.errors import NotAllowed

ROOT = Path(__file__).resolve().parents[1]
APPS = ("items", "annotation", "council", "adjudication", "keys", "lapse", "goldkey")
# Reading groups (or the superuser flag) to decide what a user may do; writing them (demo users) is fine.
READS_ROLES = re.compile(r"\.groups\.(filter|values_list|all|exists)\(|\.is_superuser\b(?!=)|name=['\"]author['\"]")


def test_an_author_and_an_admin_pass_the_author_check(author, admin_user):
    for user in (author, admin_user):
        assert roles.is_author(user)
        roles.require_author(user)


@pytest.mark.parametrize("persona", ["annotator_a", "outsider"])
def test_annotators_and_outsiders_are_refused_with_the_callers_message(persona, request):
    user = request.getfixturevalue(persona)
    assert not roles.is_author(user)
    with pytest.raises(NotAllowed, match="Only authors may open the council pages."):
        roles.require_author(user, message="Only authors may open the council pages.")


def test_no_acting_user_is_refused():
    with pytest.raises(NotAllowed, match="Only authors may open this page."):
        roles.require_author(None)


def test_only_the_admin_site_needs_staff_as_well(author, annotator_a, admin_user):
    assert roles.is_staff_author(author) and roles.is_staff_author(admin_user)
    assert not roles.is_staff_author(annotator_a)


def test_no_module_but_roles_reads_a_users_groups():
    offending = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts or path == ROOT / "goldkey" / "roles.py":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if READS_ROLES.search(line):
                    offending.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offending == [], "ask goldkey.roles instead:\n" + "\n".join(offending)

"""Who may see what of a campaign. Declared once; every page, API view, export and admin uses it.

Gold, the adjudication queue, council votes, agreement figures and other annotators' answers are
"unblinded" material. An author may see them — unless the author is also an annotator in that campaign
and has not yet submitted their own annotation (the campaign records when they did, for disclosure).
"""

from annotation.models import Campaign, Enrollment
from goldkey import roles
from goldkey.errors import NotAllowed


def can_view_unblinded(user, campaign: Campaign) -> bool:
    if not roles.is_author(user):
        return False
    enrollment = Enrollment.objects.filter(campaign=campaign, annotator=user).only("submitted_at").first()
    return enrollment is None or enrollment.submitted_at is not None


def require_unblinded(user, campaign: Campaign) -> None:
    if not can_view_unblinded(user, campaign):
        if roles.is_author(user):
            raise NotAllowed(
                f"You are an annotator in '{campaign.slug}': its gold, queue, council votes and agreement "
                "open once you have submitted your own annotation."
            )
        raise NotAllowed("Only authors may open this page.")

"""What the home page suggests each person does next (reads only, a fixed number of queries whatever the
number of items): an annotator resumes their open work; an author sees the campaigns and keys that wait
for them — a queue to decide, a key to build or freeze, errata to review or apply; someone with no role
learns how to get one. It lives in keys, the top of the core, because the author's path ends here."""

from dataclasses import dataclass

from django.db.models import Count, Q

from adjudication.models import QueueItem, QueueState
from annotation import access
from annotation.models import Campaign, Enrollment
from annotation.selectors import enrollment_progress
from goldkey import roles
from keys.models import Erratum, GoldKey
from keys.selectors import campaigns_ready_for_a_key, keys_hidden_from


@dataclass(frozen=True)
class Step:
    kind: str  # resume | close | decide | build | freeze | publish | errata | derive
    text: str
    link_name: str  # a url name
    link_args: tuple
    link_text: str


def annotator_steps(user) -> list[dict]:
    """The annotator's open enrollments (not handed in, campaign still annotating), with progress (one query)."""
    enrollments = (
        Enrollment.objects.filter(annotator=user, submitted_at__isnull=True, ended_at__isnull=True,
                                  campaign__status=Campaign.Status.ANNOTATING)
        .select_related("campaign").order_by("-campaign__created_at")
    )
    return [{"campaign": e.campaign, **enrollment_progress(e)} for e in enrollments]


def author_steps(user) -> list[Step]:
    """For an author: what waits for them, most urgent first (eight queries). Campaigns they are still
    blind to (they annotate in them) are left out: even a count of their queue is theirs to see later."""
    if not roles.is_author(user):
        return []
    blind = access.blind_campaigns(user)
    steps: list[Step] = []
    # Annotation over, every enrollment handed in: the campaign can be closed.
    for campaign in (
        Campaign.objects.filter(status=Campaign.Status.ANNOTATING).exclude(pk__in=blind)
        .annotate(n=Count("enrollments"), open=Count("enrollments", filter=Q(enrollments__submitted_at__isnull=True,
                                                                             enrollments__ended_at__isnull=True)))
        .filter(n__gt=0, open=0).order_by("slug")
    ):
        steps.append(Step("close", f"Every annotator of {campaign.slug} has handed in: close the campaign to adjudicate it.",
                          "annotation:overview", (campaign.slug,), "campaign overview"))
    # Closed campaigns whose stored queue holds undecided items that hold a key back (one aggregate).
    undecided = dict(
        QueueItem.objects.filter(campaign__status=Campaign.Status.CLOSED, queued=True, blocking=True, decided=False)
        .exclude(campaign__in=blind).values_list("campaign__slug").annotate(n=Count("pk")).order_by()
    )
    for slug, n in sorted(undecided.items()):
        steps.append(Step("decide", f"{slug}: {n} queued item{'s' if n != 1 else ''} to decide.",
                          "adjudication:queue", (slug,), "open the queue"))
    ready = campaigns_ready_for_a_key(user)
    built = set(QueueState.objects.filter(campaign__in=[c.pk for c in ready]).values_list("campaign_id", flat=True))
    for campaign in ready:
        if campaign.pk not in built:  # the queue is built when it is first opened
            steps.append(Step("decide", f"{campaign.slug} is closed: adjudicate its disagreements.",
                              "adjudication:queue", (campaign.slug,), "open the queue"))
        elif campaign.slug not in undecided:
            steps.append(Step("build", f"{campaign.slug} is closed and has no key yet: build a draft to review.",
                              "keys:build", (campaign.slug,), "build the key"))
    hidden = keys_hidden_from(user)
    for key in GoldKey.objects.filter(status=GoldKey.Status.DRAFT).exclude(pk__in=hidden).order_by("version"):
        steps.append(Step("freeze", f"Draft {key.version} waits for review: freeze it, or rebuild it.",
                          "keys:detail", (key.version,), "review the draft"))
    for key in (
        GoldKey.objects.filter(status=GoldKey.Status.FROZEN, publication__isnull=True).exclude(pk__in=hidden)
        .order_by("version")
    ):
        steps.append(Step("publish", f"{key.version} is frozen and embargoed: publish it when its release may be public.",
                          "keys:detail", (key.version,), "publish the key"))
    errata = (
        Erratum.objects.filter(Q(status=Erratum.Status.FILED) | Q(status=Erratum.Status.ACCEPTED, applied_in__isnull=True))
        .exclude(key__in=hidden)
        .values_list("key__version", "status").annotate(n=Count("pk")).order_by("key__version", "status")
    )
    for version, status, n in errata:
        if status == Erratum.Status.FILED:
            steps.append(Step("errata", f"{version}: {n} errat{'a' if n != 1 else 'um'} to review.",
                              "keys:detail", (version,), "review errata"))
        else:
            steps.append(Step("derive", f"{version}: {n} accepted errat{'a' if n != 1 else 'um'} to release in a new version.",
                              "keys:derive", (version,), "preview the next version"))
    return steps

"""Commands name a campaign by slug."""

from annotation.models import Campaign
from goldkey.errors import NotFound


def campaign_by_slug(slug: str) -> Campaign:
    campaign = Campaign.objects.filter(slug=slug).select_related("item_set").first()
    if campaign is None:
        known = ", ".join(Campaign.objects.order_by("slug").values_list("slug", flat=True)[:20]) or "none"
        raise NotFound(f"no campaign '{slug}' (campaigns: {known})")
    return campaign

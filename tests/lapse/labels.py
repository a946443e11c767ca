"""Test helpers: an item's scorer labels and automatic label, read the way the selectors read them."""

from lapse.models import ScorerLabel
from lapse.selectors import item_automatic_label, scorer_labels


def labels_of(item) -> dict[str, str]:
    """{scorer: label} of one item."""
    return dict(ScorerLabel.objects.filter(item=item).values_list("scorer", "label"))


def automatic_of(item) -> tuple[str | None, bool]:
    """(automatic label, flagged) of one item."""
    return item_automatic_label(item, scorer_labels([item.id]).get(item.id))

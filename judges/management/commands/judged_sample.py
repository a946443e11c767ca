from django.contrib.auth import get_user_model

from goldkey.errors import ApplicationError
from goldkey.lib.commands import GoldkeyCommand
from items.models import ItemSet
from judges.services import judged_sample_create, judged_sample_draw


class Command(GoldkeyCommand):
    help = (
        "Draw a designed sample of an item set's judged answers and create the campaign that annotates it: "
        "seeded, stratified by question type, abstention and cross-run disagreement (questions whose judge "
        "labels differ across runs oversampled), sized for the Wilson half-width asked for on a population "
        "proportion. The design (seed, strata, weights) goes into the key's datasheet."
    )
    dry_run_option = True
    acting_user_option = True

    def add_command_arguments(self, parser):
        parser.add_argument("item_set", help="the judged-answer item set (judged_import)")
        parser.add_argument("--campaign", required=True, help="the new campaign's slug")
        parser.add_argument("--annotators", nargs="+", required=True, metavar="USERNAME")
        parser.add_argument("--half-width", type=float, required=True, help="Wilson half-width at 95%%, e.g. 0.05")
        parser.add_argument("--seed", type=int, required=True)
        parser.add_argument("--oversample", type=float, default=2.0, help="disputed strata's weight (default 2)")
        parser.add_argument("--minimum", type=int, default=2, help="answers drawn at least per stratum (default 2)")

    def run(self, **o) -> dict:
        item_set = ItemSet.objects.filter(name=o["item_set"]).first()
        if item_set is None:
            raise ApplicationError(f"no item set named '{o['item_set']}'")
        options = {"half_width": o["half_width"], "seed": o["seed"], "oversample": o["oversample"], "minimum": o["minimum"]}
        if o["dry_run"]:
            sample, _ = judged_sample_draw(item_set=item_set, **options)
            return {"campaign": o["campaign"], "dry_run": True, "design": sample.design}
        users = {u.username: u for u in get_user_model().objects.filter(username__in=o["annotators"])}
        missing = [name for name in o["annotators"] if name not in users]
        if missing:
            raise ApplicationError(f"no such user(s): {', '.join(missing)}")
        sample = judged_sample_create(item_set=item_set, slug=o["campaign"], annotators=[users[n] for n in o["annotators"]],
                                      user=self.acting_user(o), **options)
        return {"campaign": sample.campaign.slug, "dry_run": False, "design": sample.design}

    def summary(self, r: dict) -> str:
        d = r["design"]
        prefix = "Dry run (nothing written): would sample" if r["dry_run"] else f"Campaign '{r['campaign']}' samples"
        return (f"{prefix} {d['sampled']} of {d['population']} judged answers in {len(d['strata'])} strata "
                f"(±{d['half_width']} wanted: {d['size_for_half_width']} before the design effect {d['design_effect']:.3f}; "
                f"seed {d['seed']}, disputed oversampled ×{d['oversample_disputed']}).")

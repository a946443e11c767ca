from pathlib import Path

from goldkey.lib.commands import GoldkeyCommand
from lapse.services import lapse_sample_create


class Command(GoldkeyCommand):
    help = (
        "Draw a seeded Lapse gold sample from scored outputs, create a blinded two-annotator campaign over it and "
        "save the manifest. Designs: 'stratified' (task, frame, form, gap, cascade-judge disagreement; every label "
        "covered) or 'tiers' (the authors' four tiers: A every output the cascade did not label PROCEED, B cascade-"
        "judge disagreements by judge label and form capped at 40, C new-shape outputs up to 35, D fill from "
        "cascade = judge = PROCEED by form, gap and arm)."
    )

    def add_command_arguments(self, parser):
        parser.add_argument("item_set", help="the scored outputs' item set")
        parser.add_argument("--size", type=int, required=True)
        parser.add_argument("--seed", type=int, required=True)
        parser.add_argument("--campaign", required=True, help="slug of the new campaign")
        parser.add_argument("--annotators", required=True, help="two comma-separated usernames")
        parser.add_argument("--judge", default="", help="council member whose judge labels to attach as votes")
        parser.add_argument("--manifest", type=Path, help="where to write the manifest (default var/lapse_samples/)")
        parser.add_argument("--design", choices=("stratified", "tiers"), default="stratified", help="how to draw (default stratified)")
        parser.add_argument("--new-shapes", default="", help="tiers design: the item set of new-shape outputs tier C draws from")

    def run(self, *, item_set, size, seed, campaign, annotators, judge="", manifest=None, design="stratified", new_shapes="", **_):
        return lapse_sample_create(
            item_set_name=item_set, slug=campaign, size=size, seed=seed, judge_member=judge, manifest=manifest,
            annotators=[a.strip() for a in annotators.split(",") if a.strip()], design=design,
            new_shapes_item_set=new_shapes,
        )

    def summary(self, r):
        m = r["manifest"]
        return (
            f"Sampled {r['n']} item(s) into campaign '{r['campaign']}' for {', '.join(r['annotators'])} "
            f"(tiers {m['tiers']}); {r['judge_votes']} judge vote(s) attached. Manifest: {r['manifest_path']}"
        )

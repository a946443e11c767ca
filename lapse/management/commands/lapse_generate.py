from goldkey.lib.commands import GoldkeyCommand
from lapse.services import lapse_outputs_generate


class Command(GoldkeyCommand):
    help = (
        "Have a council member (any OpenAI-compatible model) answer Lapse stimuli; each reply becomes an output "
        "item linked to its stimulus. Synchronous by default, or one Celery task per stimulus with --async."
    )

    def add_command_arguments(self, parser):
        parser.add_argument("stimuli", help="the stimuli item set, e.g. 'Lapse stimuli 2026-08-25'")
        parser.add_argument("--member", required=True, help="council member name (the model under test)")
        parser.add_argument("--component", action="append", help="only these components (repeatable)")
        parser.add_argument("--item-set", default="Lapse outputs", help="where the outputs go")
        parser.add_argument("--async", dest="asynchronous", action="store_true")

    def run(self, *, stimuli, member, component=None, item_set="Lapse outputs", asynchronous=False, **_):
        return lapse_outputs_generate(
            stimuli_item_set=stimuli, member_name=member, components=component, item_set_name=item_set,
            asynchronous=asynchronous,
        )

    def summary(self, r):
        return f"{r['member']}: {r['generated']} stimuli answered ({r['created']} new output(s)), {r['queued']} queued, {len(r['errors'])} error(s)."

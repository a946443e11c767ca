from council.gates import gates_run, item_set_by_name
from council.services import members_by_names
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = ("Run the generation gates over an item set: recipient_speaker, verbatim_quote, evidence_ids (blocking), "
            "addressee (warning), and with --llm the verification-as-seen gate through that member. A set whose protocol "
            "has gates of its own (TWIST Track C's verification gate) runs those instead, and needs --llm.")

    def add_command_arguments(self, parser):
        parser.add_argument("item_set", help="the item set's name")
        parser.add_argument("--llm", default=None, help="council member for the verification-as-seen gate")

    def run(self, **o) -> dict:
        item_set = item_set_by_name(o["item_set"])
        member = members_by_names([o["llm"]])[0] if o["llm"] else None
        return gates_run(item_set_id=item_set.pk, llm_member_id=member.pk if member else None)

    def summary(self, r: dict) -> str:
        rejected = ", ".join(f"{g} {n}" for g, n in r["rejected_by_gate"].items())
        return f"{r['item_set']}: {r['checked']} checked, {r['passed']} passed; rejected by gate: {rejected}; warnings: {r['warnings']}"

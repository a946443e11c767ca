from chains.gates import chain_verification_run
from council.gates import item_set_by_name
from council.services import members_by_names
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = ("Run TWIST Track C's verification-as-seen gate over a chain item set: the member reads only the dated "
            "steps of each chain and must recover the relation, the order and the current value; a miss rejects "
            "the item (kept for audit, shipped as a reject).")

    def add_command_arguments(self, parser):
        parser.add_argument("item_set", help="the item set's name")
        parser.add_argument("--llm", required=True, help="the council member that verifies")

    def run(self, **o) -> dict:
        item_set = item_set_by_name(o["item_set"])
        member = members_by_names([o["llm"]])[0]
        return chain_verification_run(item_set_id=item_set.pk, llm_member_id=member.pk)

    def summary(self, r: dict) -> str:
        return (f"{r['item_set']}: {r['checked']} checked by {r['llm']} ({r['prompt_version']}), {r['rejected']} rejected; "
                + ", ".join(f"{f} {c['rejected']}/{c['checked']}" for f, c in sorted(r["by_family"].items())))

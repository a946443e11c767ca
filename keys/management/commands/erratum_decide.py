from goldkey.lib.commands import GoldkeyCommand, user_named
from keys import services as key_services


class Command(GoldkeyCommand):
    help = "Accept or reject a filed erratum (authors only), with a note."

    def add_command_arguments(self, parser):
        parser.add_argument("id", type=int, help="erratum id")
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--accept", action="store_true")
        group.add_argument("--reject", action="store_true")
        parser.add_argument("--note", required=True)
        parser.add_argument("--by", required=True, help="username of the deciding author")

    def run(self, **options) -> dict:
        erratum = key_services.erratum_decide(
            erratum=key_services.erratum_get(options["id"]), accept=options["accept"], note=options["note"],
            user=user_named(options["by"]),
        )
        return {"id": erratum.pk, "status": erratum.status, "key": erratum.key.version, "item": erratum.item_external_id}

    def summary(self, result: dict) -> str:
        return f"erratum {result['id']} on {result['key']}:{result['item']}: {result['status']}"

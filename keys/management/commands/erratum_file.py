from goldkey.lib.commands import GoldkeyCommand, user_named
from keys import selectors as key_selectors
from keys import services as key_services
from keys.models import Erratum


class Command(GoldkeyCommand):
    help = "File an erratum against a frozen gold key; prints the erratum id."

    def add_command_arguments(self, parser):
        parser.add_argument("version", help="the frozen key, e.g. TWIST-v1.0")
        parser.add_argument("--item", required=True, help="item id, e.g. conv-26:v1b1")
        parser.add_argument("--kind", required=True, choices=Erratum.Kind.values)
        parser.add_argument("--value", default="", help="relabel: new gold; fix-evidence: turn ids; fix-quote: quote")
        parser.add_argument("--description", required=True)
        parser.add_argument("--by", required=True, help="username filing the erratum")

    def run(self, **options) -> dict:
        key = key_selectors.key_get(options["version"])
        erratum = key_services.erratum_file(
            key=key, item_external_id=options["item"], kind=options["kind"], value=options["value"],
            description=options["description"], user=user_named(options["by"]),
        )
        return {"id": erratum.pk, "key": key.version, "item": erratum.item_external_id, "kind": erratum.kind, "status": erratum.status}

    def summary(self, result: dict) -> str:
        return str(result["id"])

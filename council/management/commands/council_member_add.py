from council.services import council_member_add
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = "Add (or update) a council member: any OpenAI-compatible endpoint. The API key is read from --api-key-env."
    dry_run_option = False

    def add_command_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--base-url", required=True, help="e.g. https://api.openai.com/v1 or http://127.0.0.1:8765/v1")
        parser.add_argument("--model", required=True)
        parser.add_argument("--api-key-env", default="", help="name of the environment variable holding the API key")
        parser.add_argument("--generator", action="store_true", help="this model also generated the items (circularity)")
        parser.add_argument("--temperature", type=float, default=0.0)
        parser.add_argument("--max-tokens", type=int, default=800)
        parser.add_argument("--rpm", type=int, default=60, help="requests per minute (0: unlimited)")
        parser.add_argument("--concurrency", type=int, default=4)
        parser.add_argument("--timeout", type=float, default=60.0, help="client timeout per request, seconds")

    def run(self, **o) -> dict:
        member, created = council_member_add(
            name=o["name"], base_url=o["base_url"], model=o["model"], api_key_env=o["api_key_env"],
            is_generator=o["generator"], temperature=o["temperature"], max_tokens=o["max_tokens"],
            requests_per_minute=o["rpm"], concurrency=o["concurrency"], timeout_seconds=o["timeout"],
        )
        return {"name": member.name, "created": created, "model": member.model, "base_url": member.base_url,
                "is_generator": member.is_generator}

    def summary(self, r: dict) -> str:
        return f"{'added' if r['created'] else 'updated'} council member {r['name']} ({r['model']} at {r['base_url']})"

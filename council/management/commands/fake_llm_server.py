from council.fakellm import FAULTS, FakeLLMServer
from goldkey.lib.commands import GoldkeyCommand


class Command(GoldkeyCommand):
    help = (
        "Serve an OpenAI-compatible /v1/chat/completions on 127.0.0.1 with deterministic answers and switchable "
        f"faults (model name fake-<fault>, fault one of: {', '.join(FAULTS)}; or POST /control)."
    )
    json_option = False

    def add_command_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8765)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--latency-ms", type=float, default=0.0, help="added to every response")
        parser.add_argument("--slow-seconds", type=float, default=5.0, help="how long slow-once sleeps")
        parser.add_argument("--retry-after", type=float, default=1.0, help="Retry-After sent with 429")
        parser.add_argument("--fault", default="", help="a server-wide fault for every model")
        parser.add_argument("--verbose", action="store_true")

    def handle(self, *args, **options):
        server = FakeLLMServer(
            port=options["port"], host=options["host"], verbose=options["verbose"], latency_ms=options["latency_ms"],
            slow_seconds=options["slow_seconds"], retry_after=options["retry_after"],
        )
        server.state.fault = options["fault"]
        self.stdout.write(f"fake LLM server on {server.base_url} (latency {options['latency_ms']:g} ms)", ending="\n")
        self.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()

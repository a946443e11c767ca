"""The API's JSON parser: DRF's, with the refusals of goldkey.lib.jsonsafe.

Apart from that module so that the many importers of its checks (the importers, the council's gates and
prompts, every management command through them) do not import DRF's parsers and serializers, which cost
~0.1 s of each command's start-up.
"""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from goldkey.lib.jsonsafe import JsonRefused, json_loads_checked


class CheckedJSONParser(JSONParser):
    """DRF's JSON parser with the same refusals: a JSON 400 naming the field, not a RecursionError's 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", "utf-8")
        try:
            return json_loads_checked(stream.read().decode(encoding))
        except JsonRefused as exc:
            raise ParseError(f"{exc.label}: {exc.message}" if exc.path else f"JSON parse error - {exc.message}") from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            raise ParseError(f"JSON parse error - {exc}") from None

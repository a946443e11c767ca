"""Hostile input in a request, refused before a view runs, the same way on SQLite and PostgreSQL.

- An id no row can have: both databases hold ids as signed 64-bit integers, and a larger number in a URL
  (`<int:pk>`, the admin's object ids) reached the query and ended in a server error there (SQLite:
  OverflowError; PostgreSQL: "out of range for type bigint"). It is the plain 404 of any id that does
  not exist.
- A NUL character: PostgreSQL stores no NUL in text, and psycopg refuses a query parameter holding one
  (a server error), where SQLite simply finds nothing. In a URL's text argument (a key version, a slug)
  it names nothing: 404. In a query string or a form it is refused with a 400 naming the field. JSON
  bodies are checked by their parser (goldkey.lib.jsonsafe), which refuses lone surrogates too; a URL or
  a form cannot carry one (Django decodes them with replacement).
"""

from django.http import Http404, JsonResponse
from django.shortcuts import render

from goldkey.outages import wants_json

MAX_ID = 2**63 - 1
# URL arguments that name a row by its number even when the pattern takes them as text (the admin's).
ID_NAMES = {"pk", "id", "object_id"}
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _out_of_range(name: str, value) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return not -MAX_ID - 1 <= value <= MAX_ID
    if isinstance(value, str) and (name in ID_NAMES or name.endswith(("_id", "_pk"))) and value.isdigit():
        return len(value) > 18 and int(value) > MAX_ID
    return False


def _field_with_nul(data) -> str | None:
    for name, values in data.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            return name.replace("\x00", "\\0")
    return None


class HostileInputMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        for name, value in view_kwargs.items():
            if _out_of_range(name, value) or (isinstance(value, str) and "\x00" in value):
                raise Http404("no such id" if _out_of_range(name, value) else "not found")
        field = _field_with_nul(request.GET)
        if field is None and request.method == "POST" and request.content_type in FORM_TYPES:
            # Parsed once (the CSRF check has usually read it already): the view and DRF read the same copy.
            field = _field_with_nul(request.POST)
        if field is None:
            return None
        message = f"field '{field}': a NUL character (\\0) is not accepted"
        if wants_json(request):
            return JsonResponse({"detail": message}, status=400)
        return render(request, "error.html", {"message": message, "status": 400}, status=400)

"""The one application error type, and the one place that turns it into a response."""

from collections.abc import Sequence

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import render


class ApplicationError(Exception):
    """A refused request or a failed write: the message is safe to show to the user who asked."""

    status_code = 400

    def __init__(
        self, message: str, *, extra: dict | None = None, status_code: int | None = None, operator_hint: str = ""
    ):
        super().__init__(message)
        self.message = message
        self.extra = extra or {}
        # Help for an operator at a shell (management commands print it); never part of a web response,
        # where it could tell a signed-in stranger what exists.
        self.operator_hint = operator_hint
        if status_code is not None:
            self.status_code = status_code


class NotAllowed(ApplicationError):
    status_code = 403


class NotFound(ApplicationError):
    status_code = 404


class Conflict(ApplicationError):
    """The write was based on a state that has changed since (another tab, another device)."""

    status_code = 409


# What an annotator is told when something other than an AnnotatorError refused their request: the
# message of such an error was written for an operator or an author and may name an item.
BLIND_MESSAGES = {
    400: "This request was refused.",
    403: "You may not open or change this.",
    404: "Not found.",
    409: "This changed elsewhere; reload the page.",
}


class AnnotatorError(ApplicationError):
    """A refusal an annotator sees (item page, answer API, own export). The message is composed here from
    parts the annotator already has — the position in their own work ("item 12 of 200") and the problems
    the protocol names by question key and the value they sent — never from an item, so no caller can put
    an item id or a hidden field into it. `current` carries the answer as it now stands (a stale tab shows
    it); `problems` go out as the machine-readable `errors` list."""

    def __init__(
        self,
        reason: str = "",
        *,
        position: int | None = None,
        total: int | None = None,
        problems: Sequence[str] = (),
        status_code: int | None = None,
        current: dict | None = None,
    ):
        parts = [reason] if reason else []
        parts.extend(problems)
        where = f"item {position} of {total}: " if position is not None and total is not None else ""
        extra: dict = {}
        if problems:
            extra["errors"] = list(problems)
        if current is not None:
            extra["current"] = current
        super().__init__(where + "; ".join(parts), extra=extra, status_code=status_code)

    @staticmethod
    def blind(exc: ApplicationError) -> "AnnotatorError":
        """An annotator's view of any other application error: its status, never its text."""
        if isinstance(exc, AnnotatorError):
            return exc
        status = exc.status_code if exc.status_code in BLIND_MESSAGES else 400
        return ANNOTATOR_ERRORS.get(status, AnnotatorError)(BLIND_MESSAGES[status], status_code=status)


# The same refusals as NotAllowed / NotFound / Conflict, so that code catching those catches these too.
class AnnotatorNotAllowed(AnnotatorError, NotAllowed):
    status_code = 403


class AnnotatorNotFound(AnnotatorError, NotFound):
    status_code = 404


class AnnotatorConflict(AnnotatorError, Conflict):
    status_code = 409


ANNOTATOR_ERRORS = {403: AnnotatorNotAllowed, 404: AnnotatorNotFound, 409: AnnotatorConflict}


def api_exception_handler(exc, context):
    # DRF is imported here, where only API requests reach: every management command imports this
    # module, and DRF's serializers with it cost ~0.1 s of each command's start-up.
    from rest_framework.response import Response
    from rest_framework.views import exception_handler

    if isinstance(exc, ApplicationError):
        if getattr(context.get("view"), "annotator_facing", False):
            exc = AnnotatorError.blind(exc)
        return Response({"detail": exc.message, **exc.extra}, status=exc.status_code)
    return exception_handler(exc, context)


class ApplicationErrorMiddleware:
    """The one HTML error path: a service's 404 becomes the 404 page, a 403 the 403 page, and any other
    ApplicationError its status carrying its message, each in the site's frame (templates/403.html,
    404.html, error.html). (DRF views answer through api_exception_handler
    before this is reached.) Django's own error pages render the first two, so DEBUG-off pages never
    show more than the message. Annotator pages (annotation.views.annotator_view) turn every other
    error into an AnnotatorError before it gets here."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, ApplicationError):
            return None
        if exception.status_code == 404:
            raise Http404(exception.message) from exception
        if exception.status_code == 403:
            raise PermissionDenied(exception.message) from exception
        # Inside the site's frame (navigation, the way home), never a bare page; the message is all it says.
        return render(request, "error.html", {"message": exception.message, "status": exception.status_code},
                      status=exception.status_code)

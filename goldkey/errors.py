"""The one application error type, and the one place that turns it into a response."""

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseBadRequest
from rest_framework.response import Response
from rest_framework.views import exception_handler


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


def api_exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return Response({"detail": exc.message, **exc.extra}, status=exc.status_code)
    return exception_handler(exc, context)


class ApplicationErrorMiddleware:
    """The one HTML error path: a service's NotFound becomes the 404 page, NotAllowed the 403 page, and any
    other ApplicationError a 400 carrying its message. (DRF views answer through api_exception_handler
    before this is reached.) Django's own error pages render the first two, so DEBUG-off pages never
    show more than the message."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, NotFound):
            raise Http404(exception.message) from exception
        if isinstance(exception, NotAllowed):
            raise PermissionDenied(exception.message) from exception
        if isinstance(exception, ApplicationError):
            return HttpResponseBadRequest(exception.message, content_type="text/plain; charset=utf-8")
        return None

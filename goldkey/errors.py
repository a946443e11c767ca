"""The one application error type, and the one place that turns it into a response."""

from rest_framework.response import Response
from rest_framework.views import exception_handler


class ApplicationError(Exception):
    """A refused request or a failed write: the message is safe to show to the user who asked."""

    status_code = 400

    def __init__(self, message: str, *, extra: dict | None = None, status_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.extra = extra or {}
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

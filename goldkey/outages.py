"""Database and broker outages answer with a 503 that says "try again", not a 500 that says "bug".

A PostgreSQL restart or a Redis hiccup is over in seconds; an API client told 503 + Retry-After retries, a
person sees a page saying so. The exception is still logged with its traceback, because the same error
types also carry real faults (a missing table is an OperationalError too).
"""

import logging

import kombu.exceptions
import redis.exceptions
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 10

DATABASE_ERRORS = (OperationalError, InterfaceError)
BROKER_ERRORS = (kombu.exceptions.OperationalError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


def wants_json(request) -> bool:
    return request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", "")


class OutageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, DATABASE_ERRORS):
            what = "database"
        elif isinstance(exception, BROKER_ERRORS):
            what = "task queue"
        else:
            return None
        logger.error("%s unavailable for %s %s", what, request.method, request.path, exc_info=exception)
        message = f"The {what} is unavailable for a moment; nothing was lost. Try again in a few seconds."
        if wants_json(request):
            response = JsonResponse({"detail": message, "retry_after": RETRY_AFTER_SECONDS}, status=503)
        else:
            # Rendered without the request: its context processors would read the session and the user from
            # the database that just failed.
            body = render_to_string("503.html", {"message": message, "retry_after": RETRY_AFTER_SECONDS})
            response = HttpResponse(body, status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response

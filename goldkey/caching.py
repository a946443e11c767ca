"""No page or API answer of Goldkey's is kept by a browser or a proxy unless its view says it may be.

An annotator's pages and API answers carry blind material (the item under work, their own answers), an
adjudicator's carry gold: a shared proxy's cache, a browser's disk cache or its back button after a
sign-out would hand them to the next person at the machine. So every response that has not set its own
Cache-Control (a sealed release download is public and immutable, and says so) is marked not to be
stored. Static files are served by WhiteNoise, before this, with their own long-lived headers.
"""

from django.utils.cache import add_never_cache_headers


class NoStoreMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not response.has_header("Cache-Control"):
            add_never_cache_headers(response)  # no-cache, no-store, must-revalidate, private, max-age=0
        return response

"""The project's URLs plus one deliberately leaking page (used to prove the blindness walk can fail)."""

from django.http import HttpResponse
from django.urls import path

from goldkey.urls import urlpatterns as project_urlpatterns
from items.models import Item


def leaky(request, pk):
    return HttpResponse(Item.objects.get(pk=pk).rationale)


urlpatterns = [*project_urlpatterns, path("leaky/<int:pk>/", leaky)]

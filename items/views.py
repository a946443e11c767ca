from django.shortcuts import render

from items import selectors


def home(request):
    return render(request, "home.html", {"summary": selectors.corpus_summary()})

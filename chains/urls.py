"""A Track C key's score page, under keys/<version>/scores/chains/ beside the key's other score pages (mounted by
goldkey/urls.py)."""

from django.urls import path

from chains import views

app_name = "chains"
urlpatterns = [
    path("", views.chain_scores, name="scores"),
]

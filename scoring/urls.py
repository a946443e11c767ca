"""Score pages, under keys/<version>/scores/ where they have always been (mounted by goldkey/urls.py; a key's
own url module does not know them)."""

from django.urls import path

from scoring import views

app_name = "scoring"
urlpatterns = [
    path("", views.leaderboard, name="scores"),
    path("runs/<int:run_id>/", views.run_detail, name="score-run"),
    path("changes/<str:other>/", views.changes, name="score-changes"),
    path("scores.csv", views.report_csv, name="scores-csv"),
    path("scores.md", views.report_markdown, name="scores-md"),
]

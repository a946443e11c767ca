"""Score pages, mounted under keys/<version>/scores/ by keys/urls.py (names in the keys namespace)."""

from django.urls import path

from keys.scoring import views

urlpatterns = [
    path("", views.leaderboard, name="scores"),
    path("runs/<int:run_id>/", views.run_detail, name="score-run"),
    path("changes/<str:other>/", views.changes, name="score-changes"),
    path("scores.csv", views.report_csv, name="scores-csv"),
    path("scores.md", views.report_markdown, name="scores-md"),
]

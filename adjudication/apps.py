from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    name = "adjudication"
    default_auto_field = "django.db.models.BigAutoField"

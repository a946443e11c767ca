from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scores against keys"
    default_auto_field = "django.db.models.BigAutoField"

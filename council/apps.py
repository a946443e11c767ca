from django.apps import AppConfig


class CouncilConfig(AppConfig):
    name = "council"
    default_auto_field = "django.db.models.BigAutoField"

from django.apps import AppConfig


class LapseConfig(AppConfig):
    name = "lapse"
    verbose_name = "Lapse"
    default_auto_field = "django.db.models.BigAutoField"

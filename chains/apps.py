from django.apps import AppConfig


class ChainsConfig(AppConfig):
    name = "chains"
    verbose_name = "TWIST Track C chains"
    default_auto_field = "django.db.models.BigAutoField"

from django.apps import AppConfig


class KeysConfig(AppConfig):
    name = "keys"
    verbose_name = "Gold keys"
    default_auto_field = "django.db.models.BigAutoField"

from django.apps import AppConfig


class ItemsConfig(AppConfig):
    name = "items"
    default_auto_field = "django.db.models.BigAutoField"

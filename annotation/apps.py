from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Connects the login receiver that copies the keyboard preferences into the session.
        from annotation import preferences  # noqa: F401

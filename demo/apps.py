from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The built-in demo: invented data in the real formats (this folder) and the command that loads it.
    It sits above every other app because it drives all of them, like a user would."""

    name = "demo"
    verbose_name = "Demo data"

from django.apps import AppConfig


class DevserverConfig(AppConfig):
    """`manage.py runserver` as `make demo` uses it, answering keep-alive requests without a stall."""

    name = "goldkey.devserver"
    label = "devserver"

# The worker fixture is a plugin so that any test folder can use it (pytest reads pytest_plugins only
# from the top-level conftest).
pytest_plugins = ["tests.celery_worker"]


def pytest_configure(config):
    # Personas log in many times per test run; the production hasher's deliberate slowness buys nothing here.
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

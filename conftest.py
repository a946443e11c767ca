# The worker fixture is a plugin so that any test folder can use it (pytest reads pytest_plugins only
# from the top-level conftest).
pytest_plugins = ["tests.celery_worker"]

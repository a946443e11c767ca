"""The SDK client module: the `openai` SDK is loaded only when a council member is called."""

from tests.processes import fresh_process_says_ok


def test_loading_the_apps_and_the_key_services_does_not_import_the_sdk(tmp_path):
    # Every management command loads the apps (and the admin's autodiscovery the services): a freeze or
    # an export must not pay a second of CPU for an SDK it never calls, nor for its HTTP client or DRF's
    # serializers (the API's parser and error handler import those where API requests reach them).
    script = (
        "import sys, django; django.setup(); import django.contrib.admin; django.contrib.admin.autodiscover(); "
        "import keys.services, keys.management.commands.key_freeze, keys.management.commands.key_export, "
        "council.gates, council.execution; "
        "assert 'openai' not in sys.modules, 'openai imported'; "
        "assert 'httpx2' not in sys.modules, 'httpx2 imported'; "
        "assert 'rest_framework.serializers' not in sys.modules, 'DRF serializers imported'; "
        "from council.client import _sdk; assert _sdk().types.chat.ChatCompletion and 'openai' in sys.modules; "
        "print('ok')"
    )
    fresh_process_says_ok(script, tmp_path)

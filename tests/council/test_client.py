"""The SDK client module: the `openai` SDK is loaded only when a council member is called."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "goldkey.settings", "GOLDKEY_VAR_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]

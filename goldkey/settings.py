"""Goldkey settings, read from the environment.

With no environment set, Goldkey runs on SQLite with a file-system Celery broker (a real separate
worker process, no server needed). DATABASE_URL / CELERY_BROKER_URL switch to PostgreSQL / Redis.
"""

import os
from datetime import timedelta
from pathlib import Path

from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from goldkey.env import database_from_url, env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("GOLDKEY_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DJANGO_DEBUG", False)
GOLDKEY_PRODUCTION = env_bool("GOLDKEY_PRODUCTION", False)
if GOLDKEY_PRODUCTION and DEBUG:
    # Debug pages show settings and tracebacks to anyone, and the development key would sign sessions.
    raise ImproperlyConfigured(
        "GOLDKEY_PRODUCTION=1 and DJANGO_DEBUG=1 together are refused: debug pages expose settings and "
        "tracebacks. Unset DJANGO_DEBUG for production, or unset GOLDKEY_PRODUCTION to develop."
    )
_DEV_SECRET = "goldkey-development-only-not-a-secret"
SECRET_KEY = env_str("DJANGO_SECRET_KEY") or (None if GOLDKEY_PRODUCTION else _DEV_SECRET)
if not SECRET_KEY:
    raise ImproperlyConfigured("DJANGO_SECRET_KEY (or DJANGO_SECRET_KEY_FILE) must be set in production")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    # The admin's modules are loaded by the URLconf (goldkey/urls.py), not when the apps load: through them
    # every app's services, key jobs and the council's leakage check (scikit-learn) were imported by every
    # management command, about a second of CPU that an import or a freeze never uses.
    "django.contrib.admin.apps.SimpleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before WhiteNoise's: its runserver, with Nagle's algorithm off (goldkey/devserver).
    "goldkey.devserver",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "items",
    "annotation",
    "council",
    "adjudication",
    "keys",
    # The protocols' wing apps (Lapse, judged answers, TWIST Track C) are named by their app configs: an app
    # may share its protocol's name, and the settings name apps, not protocols.
    "lapse.apps.LapseConfig",
    "judges.apps.JudgesConfig",
    "scoring",
    "chains.apps.ChainsConfig",
    "demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Outside every other one, so that error pages and the lockout are marked too.
    "goldkey.caching.NoStoreMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "goldkey.errors.ApplicationErrorMiddleware",
    "goldkey.hostile.HostileInputMiddleware",
    "goldkey.outages.OutageMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "goldkey.urls"
WSGI_APPLICATION = "goldkey.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "goldkey.roles.context",
                "annotation.preferences.context",
            ],
        },
    },
]

_database_url = env_str("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'goldkey.sqlite3'}"
DATABASES = {"default": database_from_url(_database_url)}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # WAL lets the web server and the worker read while the other writes.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
    # The test database is a file, not memory, so that a real Celery worker process (tests/celery_worker.py)
    # can open the same database as the test. One file per test run, removed when the run ends.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes checks every login (the site's and the admin's) before the password is tried.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Twenty wrong passwords lock that account, and twenty from one address lock that address (guessing one
# person's password from many addresses, or many people's from one). The price of the first is that anyone can
# lock an account for the cool-off; an admin lifts it early with `manage.py axes_reset_username NAME`.
AXES_FAILURE_LIMIT = env_int("GOLDKEY_LOGIN_FAILURE_LIMIT", 20)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("GOLDKEY_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_CLIENT_IP_CALLABLE = "goldkey.logins.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
if not GOLDKEY_PRODUCTION:
    # Development, tests and the demo serve static files straight from the app folders (no collectstatic
    # step); the empty STATIC_ROOT keeps WhiteNoise from warning "No directory at: staticfiles".
    WHITENOISE_USE_FINDERS = True
    STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if env_bool("GOLDKEY_MANIFEST_STATIC", not DEBUG and env_bool("GOLDKEY_PRODUCTION", False))
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON bodies go through the same refusals as import files (deep nesting, NaN, over-long texts).
    "DEFAULT_PARSER_CLASSES": [
        "goldkey.lib.jsonparser.CheckedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "goldkey.errors.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Goldkey API",
    "DESCRIPTION": "Blind annotation, adjudication and versioned gold keys for memory-system benchmarks.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    # Swagger UI and Redoc come from the drf-spectacular-sidecar package, served with our static files:
    # the docs work offline, the version is the locked one, and the CSP needs no third-party host.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Content-Security-Policy: scripts and styles only from our own static files. Inline style attributes stay
# allowed (progress bars set their width server-side); inline <style>/<script> elements do not. The Redoc
# page loosens its own policy where the Redoc bundle needs it (goldkey/urls.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "style-src-attr": [UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# Hard time limits (seconds) of the tasks; the council's are read by council/conf.py, the gates' by its task.
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 180)
# Rows (items, entries) from which a freeze or a release renders part of its work in a forked process,
# on the machine's second core (goldkey/lib/forked.py): below, a fork costs more than it saves.
GOLDKEY_FORK_FROM_ROWS = env_int("GOLDKEY_FORK_FROM_ROWS", 5000)
COUNCIL_SOFT_TIME_LIMIT = env_int("COUNCIL_SOFT_TIME_LIMIT", 150)
COUNCIL_TIME_LIMIT = env_int("COUNCIL_TIME_LIMIT", 180)
GATES_TIME_LIMIT = env_int("GATES_TIME_LIMIT", 660)
# A build, freeze or derive started from a key page (keys/tasks.py): a 100,000-item freeze takes 12-15 s on
# a quiet machine and up to a minute on a busy one; ten minutes leaves room for keys several times larger.
KEY_JOB_TIME_LIMIT = env_int("KEY_JOB_TIME_LIMIT", 600)
_LONGEST_TASK_LIMIT = max(CELERY_TASK_TIME_LIMIT, COUNCIL_TIME_LIMIT, GATES_TIME_LIMIT, KEY_JOB_TIME_LIMIT)

# Celery: a file-system broker by default (no server; a real separate worker process),
# Redis when CELERY_BROKER_URL is set.
# The file-system transport ignores the host; naming one keeps kombu from warning that none was given.
FILESYSTEM_BROKER_URL = "filesystem://localhost//"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or FILESYSTEM_BROKER_URL
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = Path(env_str("GOLDKEY_BROKER_DIR", str(VAR_DIR / "broker")))
    for sub in ("queue", "processed", "control"):
        (_broker_dir / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),  # kombu's default is ./control in the working dir
        "store_processed": False,
    }
elif CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # Redis hands a message that was delivered but never acknowledged (its worker was killed) to another
    # worker after visibility_timeout seconds. It follows the longest task hard limit: shorter, and a task
    # still running would be handed out twice; much longer, and a killed worker's tasks wait that long
    # (the council's sweep re-sends lost council batches anyway, after the council's own hard limit).
    # Countdowns stay far below it (retries wait seconds), so a delayed task is never handed out twice.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 0) or _LONGEST_TASK_LIMIT + 60,
        "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10),
        "unacked_restore_throttle": 1,
    }
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
# Late acknowledgement: a message is acknowledged when its task ends, not when it starts, so the task of a
# worker killed mid-way (SIGKILL, OOM, a lost machine) is delivered again instead of lost. Worker-lost
# rejection: when a pool process dies under a task, the message goes back to the queue at once rather than
# being acknowledged as failed. Both need idempotent tasks — ours are: a council vote is stored once (unique
# constraint), a batch skips items that have their row.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 120)
CELERY_TASK_ALWAYS_EAGER = False

# Production hardening (manage.py check --deploy passes with GOLDKEY_PRODUCTION=1).
if GOLDKEY_PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("GOLDKEY_LOG_LEVEL", "WARNING")},
}

# Where tests and benchmarks find the released data (never copied into the repository).
GOLDKEY_SHARED_DATA = Path(env_str("GOLDKEY_SHARED_DATA", str(BASE_DIR.parent / "shared" / "data")))

# The pre-registered bar for retained-set agreement (PROTOCOL §3): Cohen's kappa on the kept set.
try:
    GOLDKEY_KAPPA_BAR = float(env_str("GOLDKEY_KAPPA_BAR", "0.8"))
except ValueError as exc:
    raise ImproperlyConfigured(f"GOLDKEY_KAPPA_BAR must be a number, got {env_str('GOLDKEY_KAPPA_BAR')!r}") from exc

# Password reset mails: printed to the console unless an SMTP host is configured (the demo has no mail).
EMAIL_HOST = env_str("EMAIL_HOST", "")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_PORT = int(env_str("EMAIL_PORT", "587"))
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "goldkey@localhost")

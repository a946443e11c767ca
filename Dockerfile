# Goldkey production image. The same image runs the web app (gunicorn) and the Celery worker;
# docker-compose.yml wires them to PostgreSQL and Redis.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
RUN useradd --create-home --uid 1000 goldkey \
    && mkdir -p /var/lib/goldkey \
    && chown goldkey /var/lib/goldkey

# Dependencies first, so code changes do not reinstall them: the runtime lock, every package pinned with its
# hashes (no test tools, no statsmodels/pandas). The project runs from /app and is not pip-installed.
COPY requirements.lock ./
RUN pip install --require-hashes --no-deps -r requirements.lock

COPY . .
# The project's bytecode, written once here: PYTHONDONTWRITEBYTECODE keeps the running containers from writing
# it, so without it every command and every worker start compiled each module from source again.
RUN python -m compileall -q /app
# Static files are collected (hashed, compressed) at build time; the build-only key is never used to serve.
RUN GOLDKEY_PRODUCTION=1 DJANGO_SECRET_KEY=collectstatic-at-build-time-only GOLDKEY_VAR_DIR=/tmp/goldkey-build \
    python manage.py collectstatic --noinput \
    && rm -rf /tmp/goldkey-build

ENV GOLDKEY_PRODUCTION=1 \
    GOLDKEY_VAR_DIR=/var/lib/goldkey
USER goldkey
EXPOSE 8000
CMD ["gunicorn", "goldkey.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]

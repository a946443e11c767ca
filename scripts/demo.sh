#!/usr/bin/env bash
# `make demo`: migrate, load the demo data, then run the web server and a SEPARATE Celery worker process on
# the embedded defaults (SQLite in var/, the file-system broker in var/broker: no server to install).
# Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-.venv/bin/python}
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
VAR=${GOLDKEY_VAR_DIR:-var}
# The council's members point at a local OpenAI-compatible server, so the council works offline.
LLM_PORT=${LLM_PORT:-8765}
# Both servers on one port would leave the web server failing only in its log, after the demo data loaded.
if [ "$PORT" = "$LLM_PORT" ]; then
    echo "PORT and LLM_PORT are both $PORT: the web server and the demo's local LLM server need two ports" \
         "(e.g. make demo PORT=8000, or LLM_PORT=8766 make demo PORT=$PORT)." >&2
    exit 2
fi
mkdir -p "$VAR"

"$PY" manage.py migrate --noinput
"$PY" manage.py load_demo

pids=()
stop() {
    trap - INT TERM EXIT
    if ((${#pids[@]})); then
        echo
        echo "Stopping the web server, the worker and the local LLM server…"
        kill -TERM "${pids[@]}" 2>/dev/null || true
        wait "${pids[@]}" 2>/dev/null || true
    fi
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

"$PY" manage.py fake_llm_server --port "$LLM_PORT" --latency-ms 50 >"$VAR/demo-llm.log" 2>&1 &
pids+=($!)
"$PY" manage.py council_member_add demo-gpt --base-url "http://127.0.0.1:$LLM_PORT/v1" --model fake-ok-gpt --generator --rpm 1200 --concurrency 2
"$PY" manage.py council_member_add demo-claude --base-url "http://127.0.0.1:$LLM_PORT/v1" --model fake-ok-claude --rpm 1200 --concurrency 2
"$PY" manage.py council_member_add demo-flaky --base-url "http://127.0.0.1:$LLM_PORT/v1" --model fake-429-once --rpm 1200 --concurrency 2

"$PY" -m celery -A goldkey worker --concurrency=2 --loglevel=INFO --hostname "demo@%h" >"$VAR/demo-worker.log" 2>&1 &
pids+=($!)
"$PY" manage.py runserver --noreload "$HOST:$PORT" >"$VAR/demo-web.log" 2>&1 &
pids+=($!)

# Proves the worker consumes the broker and sees the database before we tell anyone to look.
"$PY" manage.py worker_ping --timeout 90

cat <<BANNER

  Goldkey demo is running at http://$HOST:$PORT/
  Log in as author / author-demo (author, admin), ann1 / ann1-demo or ann2 / ann2-demo (annotators).
  Admin: http://$HOST:$PORT/admin/   API docs: http://$HOST:$PORT/api/docs/
  Council: three members (demo-gpt, demo-claude, demo-flaky) answer from a local OpenAI-compatible
  server on 127.0.0.1:$LLM_PORT; start a run on the Council page or with
  .venv/bin/python manage.py council_run demo-twist --members demo-gpt,demo-claude,demo-flaky --wait
  Logs: $VAR/demo-web.log, $VAR/demo-worker.log, $VAR/demo-llm.log.   Ctrl-C stops all three.

BANNER

# If either process dies (a port already in use, say), stop the other and say so.
set +e
wait -n "${pids[@]}"
status=$?
echo "A demo process exited (status $status); see $VAR/demo-web.log and $VAR/demo-worker.log."
exit "$status"

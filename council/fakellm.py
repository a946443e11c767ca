"""A local OpenAI-compatible server for the demo, the tests and the benchmark (stdlib only).

Answers are deterministic: a hash of the model name and the conversation picks a valid value for every
key of the JSON shape the prompt asks for (the line after `JSON_SCHEMA:`). Faults are switched per model
name — `fake-<fault>` — or for every model through POST /control:

  ok                answer normally (any name without a known fault)
  429-once          first request for each conversation: 429 with Retry-After; then answer
  500-once          first request for each conversation: 500; then answer
  500-always        always 500
  slow-once         first request for each conversation: sleep `slow_seconds` (past the client timeout)
  malformed-once    a reply that is not JSON, unless the request is the client's correction
  malformed-always  always a reply that is not JSON
  nul-reply         answer normally, with a NUL character after the reply (which no database column stores)
  odd-metadata      answer normally, but report a model name and a fingerprint no column holds (a NUL
                    character, hundreds of characters), as a broken or hostile endpoint may

Judges (a yes / no reply to a judged-answer prompt, protocols.judged.judge_prompt), per model name:

  fake-judge-strict         yes only for the gold answer in the calibration's gold frame: every decoy rejected
  fake-judge-lenient-stale  as strict, but also yes to every stale-as-current decoy (TWIST's warning case)
  fake-judge-random[-SEED]  yes or no by a hash of SEED and the prompt (deterministic, about half each)

A Track C verifier (the verification-as-seen prompt, protocols.twist_c.chain.VERIFY_PROMPT), per model name:

  fake-chain-verifier       reads the dated statements as a careful reader of dates would: statements of one
                            date coexist; otherwise a supersession, oldest first, the newest one's text current

POST /control {"latency_ms": 100, "fault": "500-once", "slow_seconds": 5, "retry_after": 1} sets
server-wide options ("fault": "" clears); GET /control returns them, request counts and the peak number
of requests in flight at once.
"""

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from council.prompts import SCHEMA_MARKER
from items.parsing import parse_locomo_date
from protocols import judged

JUDGES = ("judge-strict", "judge-lenient-stale", "judge-random")
FAULTS = ("429-once", "500-once", "500-always", "slow-once", "malformed-once", "malformed-always", "nul-reply", "odd-metadata")
TURN_ID = re.compile(r"\[(D\d+:\d+)\]")
JUDGE_PREFIX = "fake-judge-"
CHAIN_VERIFIER = "fake-chain-verifier"
STATEMENT = re.compile(r"^(S\d+)\. \[(.*?)\] [^:]*: (.*)$", re.MULTILINE)
JUDGED = re.compile(r"\n\n(?:Correct Answer|Rubric|Explanation): (.*?)\n\nModel Response: (.*?)\n\n", re.DOTALL)
STALE_DECOY = re.compile(
    "^" + re.escape(judged.TEMPLATES[judged.STALE]).replace(re.escape("{previous}"), ".+") + "$", re.DOTALL
)


def _digest(*parts: str) -> int:
    return int(hashlib.sha256("\x1f".join(parts).encode()).hexdigest(), 16)


def answer_for(model: str, messages: list[dict]) -> str:
    """The deterministic, valid JSON answer to the last question asked."""
    asked = next((m["content"] for m in reversed(messages) if m.get("role") == "user" and SCHEMA_MARKER in m.get("content", "")), "")
    schema_text = asked.rsplit(SCHEMA_MARKER, 1)[1].strip() if SCHEMA_MARKER in asked else "{}"
    try:
        schema = json.loads(schema_text.splitlines()[0])
    except (json.JSONDecodeError, IndexError):
        schema = {}
    seed = _digest(model, asked)
    values = {}
    for position, (key, allowed) in enumerate(schema.items()):
        if isinstance(allowed, list) and allowed:
            values[key] = allowed[(seed >> (8 * position)) % len(allowed)]
    if values.get("q3") == "conflict":
        turns = TURN_ID.findall(asked)
        values["q3turn"] = turns[seed % len(turns)] if turns else ""
    return json.dumps(values)


def judge_reply(model: str, messages: list[dict]) -> str:
    """The yes / no of a fake judge (see the module docstring) to the last judged-answer prompt; asked as a
    council member (a JSON shape after `JSON_SCHEMA:`), the same verdict as {"verdict": …}."""
    asked = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    said = _judge_says(model, asked)
    if SCHEMA_MARKER in asked:
        return json.dumps({"verdict": judged.JUDGE_LABELS[said]})
    return said


def chain_verifier_reply(messages: list[dict]) -> str:
    """The fake Track C verifier's reply (see the module docstring): it reads only the statements' dates."""
    asked = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    statements = [(label, parse_locomo_date(date), text) for label, date, text in STATEMENT.findall(asked)]
    if not statements or any(when is None for _, when, _ in statements):
        return json.dumps({"relation": "coexistence", "order": [], "current": ""})
    if len({when for _, when, _ in statements}) == 1:
        return json.dumps({"relation": "coexistence", "order": [label for label, _, _ in statements], "current": ""})
    ordered = sorted(statements, key=lambda s: s[1])
    return json.dumps({"relation": "supersession", "order": [label for label, _, _ in ordered], "current": ordered[-1][2]})


def _judge_says(model: str, asked: str) -> str:
    found = JUDGED.search(asked)
    if found is None:
        return "no"
    answer, response = found.group(1).strip(), found.group(2).strip()
    behaviour = model[len(JUDGE_PREFIX):]
    if behaviour.startswith("random"):
        return "yes" if _digest(behaviour, asked) % 2 else "no"
    gold = judged.TEMPLATES[judged.GOLD].format(answer=answer.rstrip("."))
    if response == gold:
        return "yes"
    if behaviour == "lenient-stale" and STALE_DECOY.match(response):
        return "yes"
    return "no"


class FakeLLMState:
    def __init__(self, latency_ms: float = 0.0, slow_seconds: float = 5.0, retry_after: float = 1.0):
        self.lock = threading.Lock()
        self.latency_ms = latency_ms
        self.slow_seconds = slow_seconds
        self.retry_after = retry_after
        self.fault = ""
        self.seen: set[tuple[str, int]] = set()
        self.requests = 0
        self.faults_served = 0
        self.in_flight = 0
        self.peak_in_flight = 0  # most chat requests being answered at once (concurrency the clients used)

    def first_time(self, model: str, messages: list[dict]) -> bool:
        key = (model, _digest(json.dumps(messages, sort_keys=True)))
        with self.lock:
            if key in self.seen:
                return False
            self.seen.add(key)
            return True

    def as_dict(self) -> dict:
        return {
            "latency_ms": self.latency_ms, "slow_seconds": self.slow_seconds, "retry_after": self.retry_after,
            "fault": self.fault, "requests": self.requests, "faults_served": self.faults_served,
            "in_flight": self.in_flight, "peak_in_flight": self.peak_in_flight,
        }


def fault_of(model: str, state: FakeLLMState) -> str:
    for fault in FAULTS:
        if model.endswith(f"-{fault}") or model == fault:
            return fault
    return state.fault


class Handler(BaseHTTPRequestHandler):
    server_version = "GoldkeyFakeLLM/1.0"
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes; no 40 ms delayed-ACK stall

    @property
    def state(self) -> FakeLLMState:
        return self.server.state  # type: ignore[attr-defined]

    def log_message(self, format, *args):  # quiet: the tests and the bench make thousands of calls
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    def _send(self, status: int, body: dict | str, headers: dict | None = None) -> None:
        raw = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        try:
            self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and went away
            pass

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            return json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            return {}

    def do_GET(self):
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": f"fake-{f}", "object": "model"} for f in ("ok", *FAULTS, *JUDGES)]})
        elif self.path.rstrip("/") == "/control":
            self._send(200, self.state.as_dict())
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self):
        body = self._body()
        path = self.path.rstrip("/")
        if path == "/control":
            with self.state.lock:
                for key in ("latency_ms", "slow_seconds", "retry_after"):
                    if key in body:
                        setattr(self.state, key, float(body[key]))
                if "fault" in body:
                    self.state.fault = str(body["fault"] or "")
            self._send(200, self.state.as_dict())
            return
        if path != "/v1/chat/completions":
            self._send(404, {"error": {"message": "not found"}})
            return
        with self.state.lock:
            self.state.requests += 1
            self.state.in_flight += 1
            self.state.peak_in_flight = max(self.state.peak_in_flight, self.state.in_flight)
        try:
            self._complete(body)
        finally:
            with self.state.lock:
                self.state.in_flight -= 1

    def _complete(self, body: dict) -> None:
        model = str(body.get("model", ""))
        messages = body.get("messages") or []
        fault = fault_of(model, self.state)
        if self.state.latency_ms:
            time.sleep(self.state.latency_ms / 1000)
        first = self.state.first_time(model, messages) if fault.endswith("-once") else False
        if (fault == "429-once" and first) or fault == "500-always" or (fault == "500-once" and first):
            with self.state.lock:
                self.state.faults_served += 1
            if fault.startswith("429"):
                retry_after = self.state.retry_after
                self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                           {"Retry-After": f"{retry_after:g}"})
            else:
                self._send(500, {"error": {"message": "internal error", "type": "server_error"}})
            return
        if fault == "slow-once" and first:
            with self.state.lock:
                self.state.faults_served += 1
            time.sleep(self.state.slow_seconds)
        if model == CHAIN_VERIFIER:
            content = chain_verifier_reply(messages)
        elif model.startswith(JUDGE_PREFIX):
            content = judge_reply(model, messages)
        else:
            content = answer_for(model, messages)
        last = messages[-1].get("content", "") if messages else ""
        correction = "not valid" in last
        if fault == "malformed-always" or (fault == "malformed-once" and not correction):
            with self.state.lock:
                self.state.faults_served += 1
            content = "Sure! Here is my answer: " + content[: len(content) // 2]
        if fault == "nul-reply":
            content += "\x00"
        digest = hashlib.sha256(content.encode()).hexdigest()[:24]
        # As a real endpoint does: the serving configuration's fingerprint (stable per model here).
        reported, fingerprint = model, "fp_" + hashlib.sha256(model.encode()).hexdigest()[:10]
        if fault == "odd-metadata":
            reported, fingerprint = f"{model}\x00-snapshot-" + "v" * 300, f"{fingerprint}\x00" + "f" * 300
        self._send(200, {
            "id": f"chatcmpl-{digest}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reported,
            "system_fingerprint": fingerprint,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        })


class FakeLLMServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, port: int = 0, host: str = "127.0.0.1", verbose: bool = False, **state):
        super().__init__((host, port), Handler)
        self.state = FakeLLMState(**state)
        self.verbose = verbose

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"


def serve_in_thread(**kwargs) -> FakeLLMServer:
    server = FakeLLMServer(**kwargs)
    threading.Thread(target=server.serve_forever, daemon=True, name="fake-llm").start()
    return server

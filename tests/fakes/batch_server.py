"""A loopback fake of both providers' batch APIs (and their live endpoints), for the real SDKs.

OpenAI: ``POST /v1/files`` (multipart upload, purpose ``batch``), ``GET /v1/files/{id}/content``,
``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (newest first),
``POST /v1/batches/{id}/cancel``. A batch shows each status to one retrieve, then moves on: ``validating`` →
``in_progress`` → ``finalizing`` → ``completed`` (or ``expired`` when some of its requests are
set to expire; ``cancelling`` → ``cancelled`` after a cancel). Replies go to an output file,
failed and expired lines (``batch_expired``) to an error file.

Anthropic: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``, ``GET
/v1/messages/batches``, ``POST .../cancel``, ``GET .../results`` (JSONL). ``processing_status``
goes ``in_progress`` → ``in_progress`` → ``ended``; each result is ``succeeded``, ``errored``,
``expired`` or ``canceled``.

``create_status`` answers create calls with that error status. ``hold = True`` keeps every batch where it is (a batch still running). Replies come from
``reply(prompt)`` (default `tests.fakes.server.card_reply`); ``invalid`` custom ids get a reply
that is not a judgment, ``errored`` ones an error line, ``expire`` ones expire. Counters record
creates, uploads, retrieves, result reads and live calls. ``gate`` (an event) holds every paid
request (a live call or a batch create) until it is set, counting it in ``counts["held"]`` as it
arrives: a test can catch a collector in the middle of paying for something. ``echo_key``
makes errored lines quote the API key the create call was sent, as some servers do.
"""

from __future__ import annotations

import email.parser
import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

from tests.fakes.server import card_reply

_OPENAI_STEPS = ("validating", "in_progress", "finalizing")
# What a provider bills or queues for billing: live calls and batch creates.
_PAID = ("/v1/chat/completions", "/v1/messages", "/v1/batches", "/v1/messages/batches")


def _prompt(body: dict[str, Any]) -> str:
    parts = [str(body.get("system") or "")]
    for message in body.get("messages", []):
        content = message.get("content", "")
        if isinstance(content, list):
            content = "".join(str(block.get("text", "")) for block in content)
        parts.append(str(content))
    return "\n".join(parts)


def openai_body(model: str, text: str, prompt: str, number: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{number}", "object": "chat.completion", "created": 1741569952,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split()),
                  "total_tokens": 0},
    }  # fmt: skip


def anthropic_body(
    model: str, text: str, prompt: str, number: int, cache_read: int = 0
) -> dict[str, Any]:
    return {
        "id": f"msg_{number}", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": len(prompt.split()), "output_tokens": len(text.split()),
                  "cache_read_input_tokens": cache_read},
    }  # fmt: skip


@dataclass
class FakeBatch:
    id: str
    provider: str
    requests: list[dict[str, Any]]  # {"custom_id", "body"}
    metadata: dict[str, Any]
    input_file_id: str | None
    created: float = field(default_factory=time.time)
    key: str = ""  # the API key the create call was sent
    step: int = 0
    canceling: bool = False
    failed: bool = False
    outcomes: dict[str, tuple[str, dict[str, Any] | str | None]] | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None


@dataclass
class BatchFake:
    """The fake's state; serve it with `serve` (a thread) and point the SDKs at `base_url`."""

    reply: Callable[[str], str] = card_reply
    hold: bool = False
    invalid: set[str] = field(default_factory=set)
    errored: set[str] = field(default_factory=set)
    expire: set[str] = field(default_factory=set)
    create_status: int | None = None  # answer create calls with this error status
    cache_read: int = 0  # Anthropic replies bill this many input tokens as prompt-cache reads
    reject_file: bool = False  # OpenAI batches fail validation (status failed, no output)
    gate: threading.Event | None = None  # paid requests wait for it to be set
    echo_key: bool = False  # errored lines quote the key the batch was created with
    counts: Counter[str] = field(default_factory=Counter)
    batches: dict[str, FakeBatch] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    uploads: list[bytes] = field(default_factory=list)
    live_bodies: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    last_key: str = ""  # the API key of the request being handled
    _ids: Any = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return f"{self.base_url}/v1"

    # ------------------------------------------------------------------ lifecycle

    def serve(self) -> BatchFake:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                gate, path = fake.gate, urlparse(self.path).path
                if gate is not None and self.command == "POST" and path in _PAID:
                    with fake._lock:
                        fake.counts["held"] += 1
                    gate.wait(60)
                with fake._lock:
                    bearer = self.headers.get("authorization", "").removeprefix("Bearer ")
                    fake.last_key = self.headers.get("x-api-key") or bearer
                    status, payload, kind = fake.handle(
                        self.command, self.path, self.headers.get("content-type", ""), body
                    )
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status, HTTPStatus(status).phrase)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> BatchFake:
        return self.serve()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ routing

    def handle(
        self, method: str, url: str, content_type: str, body: bytes
    ) -> tuple[int, dict[str, Any] | bytes, str]:
        self.counts["requests"] += 1
        path = urlparse(url).path
        parts = path.strip("/").split("/")
        jsonl = "application/jsonl"
        if path == "/v1/files" and method == "POST":
            return 200, self._upload(content_type, body), "application/json"
        if len(parts) == 4 and parts[1] == "files" and parts[3] == "content":
            return 200, self.files[parts[2]], jsonl
        creating = method == "POST" and path in ("/v1/batches", "/v1/messages/batches")
        if creating and self.create_status is not None:
            self.counts["failed_creates"] += 1
            error = {"message": "batch creation failed", "type": "invalid_request_error"}
            return self.create_status, {"error": error}, "application/json"
        if path.startswith("/v1/messages/batches"):
            return self._anthropic(method, parts, body)
        if path.startswith("/v1/batches"):
            return self._openai(method, parts, body)
        request = json.loads(body or b"{}")
        prompt = _prompt(request)
        self.counts["live"] += 1
        self.live_bodies.append(request)
        number = next(self._ids)
        model = str(request.get("model", "fake"))
        if path == "/v1/chat/completions":
            return 200, openai_body(model, self.reply(prompt), prompt, number), "application/json"
        if path == "/v1/messages":
            message = anthropic_body(model, self.reply(prompt), prompt, number, self.cache_read)
            return 200, message, "application/json"
        return 404, {"error": {"message": f"no route {method} {path}"}}, "application/json"

    def _upload(self, content_type: str, body: bytes) -> dict[str, Any]:
        message = email.parser.BytesParser().parsebytes(
            f"content-type: {content_type}\r\n\r\n".encode() + body
        )
        data = b""
        for part in message.walk():
            if part.get_param("name", header="content-disposition") == "file":
                payload = part.get_payload(decode=True)
                data = payload if isinstance(payload, bytes) else b""
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = data
        self.uploads.append(data)
        self.counts["uploads"] += 1
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": "batch.jsonl", "purpose": "batch", "status": "processed"}  # fmt: skip

    # ------------------------------------------------------------------ outcomes

    def _finish(self, batch: FakeBatch) -> None:
        if batch.outcomes is not None:
            return
        batch.outcomes = {}
        if batch.provider == "openai" and self.reject_file:
            batch.failed = True
            return
        for request in batch.requests:
            key = request["custom_id"]
            if batch.canceling:
                batch.outcomes[key] = ("canceled", None)
            elif key in self.expire:
                batch.outcomes[key] = ("expired", None)
            elif key in self.errored:
                detail = "server error while processing the request"
                if self.echo_key:
                    detail += f" (received API key: {batch.key})"
                batch.outcomes[key] = ("errored", detail)
            else:
                body = request["body"]
                prompt = _prompt(body)
                text = "I cannot judge this." if key in self.invalid else self.reply(prompt)
                model, number = str(body.get("model")), next(self._ids)
                built = (
                    openai_body(model, text, prompt, number) if batch.provider == "openai"
                    else anthropic_body(model, text, prompt, number, self.cache_read)
                )  # fmt: skip
                batch.outcomes[key] = ("succeeded", built)
        if batch.provider == "openai":
            self._openai_files(batch)

    def _advance(self, batch: FakeBatch) -> None:
        if not self.hold and batch.outcomes is None:
            batch.step += 1
            last = len(_OPENAI_STEPS) if batch.provider == "openai" else 2
            if batch.step >= last or batch.canceling:
                self._finish(batch)

    # ------------------------------------------------------------------ OpenAI

    def _openai(
        self, method: str, parts: list[str], body: bytes
    ) -> tuple[int, dict[str, Any], str]:
        kind = "application/json"
        if len(parts) == 2 and method == "POST":
            request = json.loads(body)
            lines = self.files[request["input_file_id"]].decode().splitlines()
            requests = [json.loads(line) for line in lines if line.strip()]
            batch = FakeBatch(
                id=f"batch_{next(self._ids)}", provider="openai", metadata=request.get("metadata")
                or {}, input_file_id=request["input_file_id"],
                requests=[{"custom_id": r["custom_id"], "body": r["body"]} for r in requests],
            )  # fmt: skip
            batch.key = self.last_key
            self.batches[batch.id] = batch
            self.counts["creates"] += 1
            return 200, self._openai_batch(batch), kind
        if len(parts) == 2:
            listed = [b for b in reversed(self.batches.values()) if b.provider == "openai"]
            data = [self._openai_batch(b) for b in listed]
            return 200, {"object": "list", "data": data, "has_more": False,
                         "first_id": None, "last_id": None}, kind  # fmt: skip
        batch = self.batches[parts[2]]
        if len(parts) == 4 and parts[3] == "cancel":
            batch.canceling = True
            self.counts["cancels"] += 1
            return 200, self._openai_batch(batch), kind
        self.counts["retrieves"] += 1
        shown = self._openai_batch(batch)  # each status is seen once, then the batch moves on
        self._advance(batch)
        return 200, shown, kind

    def _openai_files(self, batch: FakeBatch) -> None:
        assert batch.outcomes is not None
        output, errors = [], []
        for key, (state, detail) in batch.outcomes.items():
            if state == "succeeded":
                response = {"status_code": 200, "request_id": key, "body": detail}
                output.append({"id": f"r-{key}", "custom_id": key, "response": response,
                               "error": None})  # fmt: skip
            elif state == "errored":
                response = {
                    "status_code": 500,
                    "request_id": key,
                    "body": {"error": {"message": detail, "type": "server_error"}},
                }
                errors.append({"id": f"r-{key}", "custom_id": key, "response": response,
                               "error": None})  # fmt: skip
            elif state == "expired":
                errors.append({"id": f"r-{key}", "custom_id": key, "response": None, "error": {
                    "code": "batch_expired", "message": "This request could not be executed "
                    "before the completion window expired."}})  # fmt: skip
        for lines, name in ((output, "output_file_id"), (errors, "error_file_id")):
            if lines:
                file_id = f"file-{next(self._ids)}"
                self.files[file_id] = "".join(json.dumps(line) + "\n" for line in lines).encode()
                setattr(batch, name, file_id)

    def _openai_batch(self, batch: FakeBatch) -> dict[str, Any]:
        states = Counter(state for state, _ in (batch.outcomes or {}).values())
        if batch.outcomes is None:
            status = "cancelling" if batch.canceling else _OPENAI_STEPS[batch.step]
        elif batch.canceling:
            status = "cancelled"
        elif batch.failed:
            status = "failed"
        else:
            status = "expired" if states["expired"] else "completed"
        errors = {"object": "list", "data": [{"code": "invalid_request", "line": 1, "param": None,
                  "message": "The model is not available for batches."}]}  # fmt: skip
        return {
            "id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions",
            "errors": errors if batch.failed else None, "input_file_id": batch.input_file_id, "completion_window": "24h",
            "status": status, "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id, "created_at": int(batch.created),
            "metadata": batch.metadata,
            "request_counts": {"total": len(batch.requests), "completed": states["succeeded"],
                               "failed": states["errored"] + states["expired"]},
        }  # fmt: skip

    # ------------------------------------------------------------------ Anthropic

    def _anthropic(
        self, method: str, parts: list[str], body: bytes
    ) -> tuple[int, dict[str, Any] | bytes, str]:
        kind = "application/json"
        if len(parts) == 3 and method == "POST":
            request = json.loads(body)
            batch = FakeBatch(
                id=f"msgbatch_{next(self._ids)}", provider="anthropic", metadata={},
                input_file_id=None,
                requests=[{"custom_id": r["custom_id"], "body": r["params"]}
                          for r in request["requests"]],
            )  # fmt: skip
            batch.key = self.last_key
            self.batches[batch.id] = batch
            self.counts["creates"] += 1
            return 200, self._anthropic_batch(batch), kind
        if len(parts) == 3:
            listed = [b for b in reversed(self.batches.values()) if b.provider == "anthropic"]
            data = [self._anthropic_batch(b) for b in listed]
            return 200, {"data": data, "has_more": False, "first_id": None,
                         "last_id": None}, kind  # fmt: skip
        batch = self.batches[parts[3]]
        if len(parts) == 5 and parts[4] == "cancel":
            batch.canceling = True
            self.counts["cancels"] += 1
            return 200, self._anthropic_batch(batch), kind
        if len(parts) == 5 and parts[4] == "results":
            self.counts["results"] += 1
            assert batch.outcomes is not None, "results read before the batch ended"
            lines = []
            for key, (state, detail) in batch.outcomes.items():
                result: dict[str, Any] = {"type": state}
                if state == "succeeded":
                    result["message"] = detail
                elif state == "errored":
                    result["error"] = {
                        "type": "error",
                        "error": {"type": "api_error", "message": detail},
                    }
                lines.append(json.dumps({"custom_id": key, "result": result}) + "\n")
            return 200, "".join(lines).encode(), "application/binary"
        self.counts["retrieves"] += 1
        shown = self._anthropic_batch(batch)
        self._advance(batch)
        return 200, shown, kind

    def _anthropic_batch(self, batch: FakeBatch) -> dict[str, Any]:
        created = datetime.fromtimestamp(batch.created, timezone.utc)
        states = Counter(state for state, _ in (batch.outcomes or {}).values())
        ended = batch.outcomes is not None
        status = "ended" if ended else ("canceling" if batch.canceling else "in_progress")
        return {
            "id": batch.id, "type": "message_batch", "processing_status": status,
            "request_counts": {
                "processing": 0 if ended else len(batch.requests),
                "succeeded": states["succeeded"], "errored": states["errored"],
                "canceled": states["canceled"], "expired": states["expired"],
            },
            "created_at": created.isoformat(),
            "expires_at": (created + timedelta(hours=24)).isoformat(),
            "ended_at": created.isoformat() if ended else None,
            "archived_at": None, "cancel_initiated_at": None,
            "results_url": f"{self.base_url}/v1/messages/batches/{batch.id}/results"
            if ended else None,
        }  # fmt: skip

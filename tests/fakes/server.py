"""A loopback fake of the OpenAI and Anthropic APIs, for the CLI, kill-and-resume and bench.

Runs an asyncio HTTP/1.1 server (keep-alive) on 127.0.0.1 with a fixed latency per request. It
answers ``POST /v1/chat/completions`` and ``POST /v1/messages`` with a judge-shaped reply chosen
by ``reply(prompt_text) -> str``. The default, `card_reply`, tells the built-in cards apart by their
input tags and answers each validly: a ``reference`` judgment (`DEFAULT_REPLY`), a pairwise
verdict from a consistent judge, a ``Rating: [[N]]`` line, or rubric scores for the listed
criteria. A ``fault(request)`` hook may answer instead with an error status and body (e.g.
`echo_key_error`, a server that quotes the API key back in a 400). With ``capacity`` it accepts
that many requests at once and answers the rest at once with a 429 (with ``retry-after-ms``: the
time until its first slot frees, unless ``retry_after`` is False), as a concurrency-limited
provider does; ``retry_after_s`` sends a fixed ``retry-after`` in seconds instead (real
providers send 1), and ``refuse_share`` refuses that share of requests at random. Run it
in-process in a thread (`serve_in_thread`) or as its own process::

    python -m tests.fakes.server --port 0 --latency 0.2   # prints "PORT <n>" when ready
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

DEFAULT_REPLY = json.dumps({
    "scores": {"correctness": 5, "completeness": 4, "style_fidelity": 5},
    "style_relevant": False,
    "verdict": "match",
    "delta": "Same facts in different words.",
    "decision_basis": "All gold points are present and correct.",
})  # fmt: skip


def tagged(prompt: str, tag: str) -> str | None:
    """The text of a card's ``<tag>`` input block in a rendered prompt (None if absent)."""
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", prompt, re.DOTALL)
    return match.group(1) if match else None


def card_reply(prompt: str) -> str:
    """A valid reply for whichever built-in card rendered ``prompt``.

    Pairwise: a position-consistent judge that prefers the answer with the smaller sha256 (so a
    swap never changes its choice) and calls identical answers a tie.
    """
    answer_a, answer_b = tagged(prompt, "answer_a"), tagged(prompt, "answer_b")
    if answer_a is not None and answer_b is not None:
        key_a, key_b = (hashlib.sha256(text.encode()).hexdigest() for text in (answer_a, answer_b))
        winner = "tie" if key_a == key_b else ("A" if key_a < key_b else "B")
        return json.dumps(
            {"reasoning": "Compared both answers on accuracy and helpfulness.", "winner": winner}
        )
    criteria = tagged(prompt, "criteria")
    if criteria is not None:
        scores = [
            {
                "name": name,
                "reason": "Meets the criterion with minor gaps.",
                "score": (int(low) + int(high) + 1) // 2,
            }
            for name, low, high in re.findall(
                r"^- ([a-z][a-z0-9_]*) \(scale (-?\d+) to (-?\d+)\):", criteria, re.MULTILINE
            )
        ]
        return json.dumps({"scores": scores})
    if "Rating: [[N]]" in prompt:
        return "The answer is accurate and relevant but could go deeper.\nRating: [[7]]"
    return DEFAULT_REPLY


def varied_reply(prompt: str) -> str:
    """`card_reply`, but a ``reference`` judgment's scores vary with the answer judged (from its
    sha256), as a real judge's do: a run's summary then has correlations and p-values to compute,
    which identical scores skip."""
    answer = tagged(prompt, "model_output")
    if answer is None:
        return card_reply(prompt)
    digest = hashlib.sha256(answer.encode()).digest()
    correctness, completeness = 1 + digest[0] % 5, 1 + digest[1] % 5
    return json.dumps({
        "scores": {"correctness": correctness, "completeness": completeness, "style_fidelity": 5},
        "style_relevant": False,
        "verdict": "match" if correctness == 5 and completeness >= 4 else "mismatch",
        "delta": "Some facts differ from the gold answer.",
        "decision_basis": "The scores follow the facts the answer gets right.",
    })  # fmt: skip


@dataclass(frozen=True)
class FakeRequest:
    """One request as the fake server read it (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


Fault = Callable[[FakeRequest], "tuple[int, dict[str, Any]] | None"]
"""Answers a request with ``(status, body)`` instead of a reply, or None to reply normally."""


def sent_key(request: FakeRequest) -> str:
    """The API key the SDK sent (OpenAI's bearer token or Anthropic's ``x-api-key``)."""
    bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
    return request.headers.get("x-api-key") or bearer


def echo_key_error(request: FakeRequest) -> tuple[int, dict[str, Any]]:
    """A 400 that quotes the key it was sent, as some proxies and servers do."""
    return 400, {
        "error": {
            "message": f"Invalid request for key {sent_key(request)}: model not allowed",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }


@dataclass
class FakeServer:
    latency: float = 0.0
    reply: Callable[[str], str] = card_reply
    fault: Fault | None = None
    capacity: int | None = None
    retry_after: bool = True
    retry_after_s: float | None = None  # a fixed ``retry-after`` (seconds), as real providers send
    refuse_share: float = 0.0  # this share of requests answered 429 at once, at random
    seed: int = 0
    requests: int = 0
    rejected: int = 0
    peak: int = 0
    prompt_tokens: int = 0  # the bill: usage reported over every reply, as the provider counts it
    completion_tokens: int = 0
    port: int = 0
    _ends: list[float] = field(default_factory=list)
    _random: random.Random = field(default_factory=random.Random)
    _ready: threading.Event = field(default_factory=threading.Event)
    _loop: asyncio.AbstractEventLoop | None = None
    _server: asyncio.base_events.Server | None = None
    _thread: threading.Thread | None = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (line.partition(":") for line in lines[1:] if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests += 1
                extra = ""
                now = asyncio.get_running_loop().time()
                full = self.capacity is not None and len(self._ends) >= self.capacity
                if full or (self.refuse_share and self._random.random() < self.refuse_share):
                    self.rejected += 1
                    status, payload = 429, {"error": {"message": "Too many concurrent requests", "type": "requests", "code": "rate_limit_exceeded"}}  # fmt: skip
                    if self.retry_after_s is not None:
                        extra = f"retry-after: {self.retry_after_s:g}\r\n"
                    elif self.retry_after and self._ends:
                        extra = f"retry-after-ms: {math.ceil((min(self._ends) - now) * 1000)}\r\n"
                else:
                    end = now + self.latency
                    self._ends.append(end)
                    self.peak = max(self.peak, len(self._ends))
                    try:
                        if self.latency:
                            await asyncio.sleep(self.latency)
                        status, payload = self._respond(method, path, headers, body)
                    finally:
                        self._ends.remove(end)
                data = json.dumps(payload).encode()
                writer.write(
                    f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
                    f"content-type: application/json\r\n{extra}"
                    f"content-length: {len(data)}\r\nconnection: keep-alive\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionResetError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def _respond(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, Any]]:
        request = json.loads(body or b"{}")
        if self.fault is not None:
            answer = self.fault(FakeRequest(method, path, headers, request))
            if answer is not None:
                return answer
        messages = request.get("messages", [])
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        if path.endswith("/chat/completions") or path.endswith("/messages"):
            self.prompt_tokens += len(prompt.split())
        if path.endswith("/chat/completions"):
            text = self.reply(prompt)
            self.completion_tokens += len(text.split())
            return 200, {
                "id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": 1741569952,
                "model": request.get("model", "fake"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split()), "total_tokens": 0},
            }  # fmt: skip
        if path.endswith("/messages"):
            text = self.reply(prompt)
            self.completion_tokens += len(text.split())
            return 200, {
                "id": f"msg_{self.requests}", "type": "message", "role": "assistant", "model": request.get("model", "fake"),
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": len(prompt.split()), "output_tokens": len(text.split())},
            }  # fmt: skip
        return 404, {"error": {"message": f"no route {method} {path}"}}

    def __post_init__(self) -> None:
        self._random.seed(self.seed)

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", self.port, backlog=1024
        )
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def serve_in_thread(self) -> FakeServer:
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            loop.run_until_complete(self.start())
            self._ready.set()
            try:
                loop.run_forever()
            finally:
                # Close everything the loop owns, so tests running with warnings as errors see
                # no unclosed socket or event loop.
                if self._server is not None:
                    self._server.close()
                tasks = asyncio.all_tasks(loop)

                async def drain() -> None:
                    for task in tasks:
                        task.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                    await loop.shutdown_asyncgens()

                loop.run_until_complete(drain())
                loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        """Stop serving; for a server started with `serve_in_thread`, wait until it is closed."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)


def spawn(
    latency: float = 0.0,
    *,
    capacity: int | None = None,
    retry_after: bool = True,
    varied: bool = False,
    retry_after_s: float | None = None,
    refuse_share: float = 0.0,
) -> tuple[subprocess.Popen[str], str]:
    """Start the fake server in its own process (so it does not share the client's event loop);
    returns the process, to terminate, and the base URL to point the SDKs at. ``varied``: reply
    with `varied_reply`."""
    repo = Path(__file__).resolve().parents[2]
    limits = [] if capacity is None else ["--capacity", str(capacity)]
    limits += [] if retry_after else ["--no-retry-after"]
    limits += ["--varied"] if varied else []
    limits += [] if retry_after_s is None else ["--retry-after-s", str(retry_after_s)]
    limits += ["--refuse-share", str(refuse_share)] if refuse_share else []
    command = [sys.executable, "-m", "tests.fakes.server", "--latency", str(latency), *limits]
    process = subprocess.Popen(
        command,
        cwd=repo,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    port = int(process.stdout.readline().split()[1])
    return process, f"http://127.0.0.1:{port}/v1"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--capacity", type=int, default=None)
    parser.add_argument("--no-retry-after", action="store_true")
    parser.add_argument("--varied", action="store_true", help="reference scores vary by answer")
    parser.add_argument("--retry-after-s", type=float, default=None)
    parser.add_argument("--refuse-share", type=float, default=0.0)
    args = parser.parse_args()
    server = FakeServer(
        latency=args.latency,
        reply=varied_reply if args.varied else card_reply,
        port=args.port,
        capacity=args.capacity,
        retry_after=not args.no_retry_after,
        retry_after_s=args.retry_after_s,
        refuse_share=args.refuse_share,
    )

    async def run() -> None:
        await server.start()
        print(f"PORT {server.port}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()

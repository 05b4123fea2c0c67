"""A load driver for ``judgecards serve``: simulated labelers and scoring clients on one SQLite
file, shared by tests/serve/test_load.py (about 10 s) and bench/bench_serve_load.py (60 s).

The server runs as its own process (``python -m judgecards serve``), as people run it; the
clients are asyncio tasks here. Each labeler loops ``next`` -> think -> ``POST /v1/labels``
until the time is up or its queue is done (``think`` defaults to 1 s an item: several times
faster than a person reading a model output); scoring clients send one-item ``/v1/score``
requests (mock provider, a new item each, so every one is judged and written) at a fixed rate,
open loop (a slow server does not slow the senders). Afterwards the labels table is checked
against what the server acknowledged: none lost, none twice.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import statistics
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.builders import ServeProcess

CARD = "reference@1"
MODEL = "mock:judge"
_SCORE_SLOTS = 64


def item(key: str) -> dict[str, str]:
    return {
        "id": key,
        "question": f"What is the capital of country {key}?",
        "gold_answer": "Paris",
        "model_output": f"The capital is Paris ({key}).",
    }


def create_token(db: Path, role: str, name: str) -> str:
    """A token made the way people make them (the CLI), before the server starts."""
    from judgecards.serve.tokens import Tokens
    from judgecards.storage import Store

    with Store(db) as store:
        return Tokens(store).create(role, name).secret


def prepare(url: str, admin: str, *, items: int, labels_wanted: int) -> int:
    """Judge ``items`` items and open an audit of all of them; returns the audit id."""
    headers = {"Authorization": f"Bearer {admin}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        for start in range(0, items, 100):
            chunk = [item(f"pool-{n}") for n in range(start, min(items, start + 100))]
            body = {"card": CARD, "model": MODEL, "items": chunk}
            client.post("/v1/score", json=body).raise_for_status()
        audit = {"card": CARD, "model": MODEL, "n": items, "labels_wanted": labels_wanted}
        created = client.post("/v1/audits", json=audit)
        created.raise_for_status()
        return int(created.json()["audit_id"])


@dataclass
class LoadReport:
    """What one load run did and found."""

    seconds: float = 0.0
    served: Counter[str] = field(default_factory=Counter)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    conflicts: int = 0
    resent: int = 0
    score_sent: int = 0
    acknowledged: set[tuple[str, int]] = field(default_factory=set)
    locked: int = 0
    lost: int = 0
    duplicated: int = 0
    unacknowledged: int = 0
    over_wanted: int = 0

    def record(self, kind: str, seconds: float) -> None:
        self.served[kind] += 1
        self.latencies.setdefault(kind, []).append(seconds)

    def percentile(self, q: float, kind: str | None = None) -> float:
        values = sorted(
            v for k, vs in self.latencies.items() if kind is None or k == kind for v in vs
        )
        if not values:
            return float("nan")
        if len(values) == 1:
            return values[0]
        return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]

    def summary(self) -> str:
        rate = sum(self.served.values()) / self.seconds if self.seconds else 0.0
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.served.items()))
        return (
            f"{sum(self.served.values())} requests in {self.seconds:.1f} s ({rate:.0f}/s: {kinds}); "
            f"p50 {self.percentile(0.5) * 1000:.0f} ms, p95 {self.percentile(0.95) * 1000:.0f} ms; "
            f"errors {len(self.errors)}, resent {self.resent}, locked {self.locked}, labels acknowledged "
            f"{len(self.acknowledged)}, lost {self.lost}, duplicated {self.duplicated}"
        )


async def _post(
    client: httpx.AsyncClient, report: LoadReport, path: str, **options: Any
) -> httpx.Response:
    """POST, sent again once when the server closed a kept-alive connection as it was reused
    (uvicorn drops idle ones after 5 s; browsers resend in that case too). Safe here: a label
    sent twice is refused with 409 and a score is keyed by its item."""
    try:
        return await client.post(path, **options)
    except (httpx.ReadError, httpx.RemoteProtocolError):
        report.resent += 1
        return await client.post(path, **options)


async def _labeler(
    client: httpx.AsyncClient, token: str, name: str, audit_id: int, end: float,
    think: float, report: LoadReport,
) -> None:  # fmt: skip
    headers = {"Authorization": f"Bearer {token}"}
    while time.monotonic() < end:
        started = time.monotonic()
        try:
            response = await _post(client, report, f"/v1/audits/{audit_id}/next", headers=headers)
        except httpx.HTTPError as error:
            report.errors.append(f"next: {type(error).__name__}: {error}")
            continue
        report.record("next", time.monotonic() - started)
        if response.status_code != 200:
            report.errors.append(f"next: {response.status_code} {response.text[:200]}")
            continue
        served = response.json()["item"]
        if served is None:
            return  # this labeler has labelled everything it may
        position = served["position"]
        values: dict[str, Any] = {}
        for spec in served["fields"]:
            if spec["choices"]:
                values[spec["name"]] = spec["choices"][position % len(spec["choices"])]
            else:
                low, high = int(spec["minimum"]), int(spec["maximum"])
                values[spec["name"]] = low + position % (high - low + 1)
        await asyncio.sleep(think)
        body = {"audit_id": audit_id, "position": position, "values": values}
        started = time.monotonic()
        try:
            response = await _post(client, report, "/v1/labels", json=body, headers=headers)
        except httpx.HTTPError as error:
            report.errors.append(f"label: {type(error).__name__}: {error}")
            continue
        report.record("label", time.monotonic() - started)
        if response.status_code == 201:
            report.acknowledged.add((name, position))
        elif response.status_code == 409:
            report.conflicts += 1
        else:
            report.errors.append(f"label: {response.status_code} {response.text[:200]}")


async def _score(
    client: httpx.AsyncClient, admin: str, key: str, report: LoadReport, slots: asyncio.Semaphore
) -> None:
    body = {"card": CARD, "model": MODEL, "items": [item(key)]}
    started = time.monotonic()  # its latency includes any wait for a free connection
    try:
        async with slots:
            response = await _post(
                client, report, "/v1/score", json=body, headers={"Authorization": f"Bearer {admin}"}
            )
    except httpx.HTTPError as error:
        report.errors.append(f"score: {type(error).__name__}: {error}")
        return
    report.record("score", time.monotonic() - started)
    if response.status_code != 200:
        report.errors.append(f"score: {response.status_code} {response.text[:200]}")
    elif response.json()["results"][0]["status"] != "ok":
        report.errors.append(f"score: {response.json()['results'][0]['error']}")


async def _run(
    url: str, admin: str, labelers: dict[str, str], audit_id: int, *, seconds: float,
    score_rate: float, think: float, tag: str,
) -> LoadReport:  # fmt: skip
    report = LoadReport()
    # Requests beyond the pool's connections never queue inside httpcore, whose pool scans its
    # whole queue for every request: a 60 s run queued thousands, and the client, not the
    # server, spun at full CPU. Scores wait for one of `_SCORE_SLOTS` connections here instead,
    # and that wait counts in their latency.
    slots = asyncio.Semaphore(_SCORE_SLOTS)
    scoring_limits = httpx.Limits(max_connections=_SCORE_SLOTS)
    labeling_limits = httpx.Limits(max_connections=len(labelers) + 1)
    async with (
        httpx.AsyncClient(base_url=url, timeout=300, limits=scoring_limits) as scorer,
        httpx.AsyncClient(base_url=url, timeout=300, limits=labeling_limits) as people,
    ):
        start = time.monotonic()
        end = start + seconds
        tasks = [
            asyncio.create_task(_labeler(people, token, name, audit_id, end, think, report))
            for name, token in labelers.items()
        ]
        scoring: list[asyncio.Task[None]] = []
        for index in range(int(seconds * score_rate)):
            delay = start + index / score_rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            key = f"{tag}-{index}"
            scoring.append(asyncio.create_task(_score(scorer, admin, key, report, slots)))
            report.score_sent += 1
        await asyncio.gather(*tasks, *scoring)
        report.seconds = time.monotonic() - start
    return report


def check_labels(db: Path, audit_id: int, report: LoadReport, labels_wanted: int) -> None:
    """Compare the labels table with what the server acknowledged (fills lost/duplicated)."""
    with closing(sqlite3.connect(db)) as connection:
        rows = connection.execute(
            "SELECT l.labeler, a.position, l.field, count(*) FROM labels l "
            "JOIN audit_items a ON a.audit_id = l.audit_id AND a.result_id = l.result_id "
            "WHERE l.audit_id = ? GROUP BY l.labeler, a.position, l.field",
            (audit_id,),
        ).fetchall()
        per_item = connection.execute(
            "SELECT a.position, count(DISTINCT l.labeler) FROM labels l "
            "JOIN audit_items a ON a.audit_id = l.audit_id AND a.result_id = l.result_id "
            "WHERE l.audit_id = ? GROUP BY a.position",
            (audit_id,),
        ).fetchall()
    stored = {(labeler, position) for labeler, position, _, _ in rows}
    report.lost = len(report.acknowledged - stored)
    report.unacknowledged = len(stored - report.acknowledged)
    report.duplicated = sum(count - 1 for *_, count in rows if count > 1)
    report.over_wanted = sum(1 for _, labelers in per_item if labelers > labels_wanted)


def run_load(
    workdir: Path, *, seconds: float, labelers: int = 20, score_rate: float = 50.0,
    think: float = 1.0, items: int = 400, labels_wanted: int = 3, drain_timeout: float = 240.0,
) -> LoadReport:  # fmt: skip
    """One whole run on a fresh database in ``workdir``: serve, prepare, load, stop, check."""
    db = workdir / "load.db"
    admin = create_token(db, "admin", "admin")
    tokens = {
        f"labeler-{n:02d}": create_token(db, "labeler", f"labeler-{n:02d}") for n in range(labelers)
    }
    server = ServeProcess(db, workdir / "serve.log", "--max-items", "100")
    try:
        audit_id = prepare(server.url, admin, items=items, labels_wanted=labels_wanted)
        load = _run(
            server.url, admin, tokens, audit_id, seconds=seconds, score_rate=score_rate,
            think=think, tag=workdir.name,
        )  # fmt: skip
        try:
            report = asyncio.run(asyncio.wait_for(load, seconds + drain_timeout))
        except asyncio.TimeoutError:
            # A hang is a finding, not a stuck benchmark: every server thread's stack goes
            # to its log (faulthandler), and the run reports it as an error.
            server.process.send_signal(signal.SIGABRT)
            server.process.wait(timeout=30)
            report = LoadReport(seconds=seconds + drain_timeout)
            report.errors.append(
                f"not finished {drain_timeout:g} s after the load ended; stacks in {server.log}"
            )
            return report
    finally:
        code = server.stop()
    log = server.log.read_text()
    report.locked = log.count("database is locked") + sum("locked" in e for e in report.errors)
    if code != 0:
        report.errors.append(f"server exit code {code}: {log[-2000:]}")
    check_labels(db, audit_id, report, labels_wanted)
    return report

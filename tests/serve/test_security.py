"""The server's security properties, over every route the app has (so a new route cannot escape):
tokens everywhere but the login page, blind labelers, SQL metacharacters, static traversal, CSP."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from starlette.routing import Mount

from judgecards.serve.app import CONTENT_SECURITY_POLICY
from tests.builders import ServedApp

PUBLIC = {("GET", "/login"), ("POST", "/login")}  # the login page, and /static (a Mount)
# Judge output planted in the stored results: none of it may reach a labeler.
SECRETS = {
    "verdict": "PLANTED-VERDICT-7f3a",
    "model_verdict": "PLANTED-MODEL-VERDICT-19c2",
    "raw_reply": "PLANTED-RAW-REPLY-a0d4",
    "reason": "PLANTED-REASON-55be",
    "note": "PLANTED-OTHER-LABELERS-NOTE-c81e",
}
SQL_PROBES = [
    "' OR '1'='1",
    "'; DROP TABLE results; --",
    '" OR 1=1 --',
    "%",
    "_",
    "\\",
    "1 UNION SELECT * FROM serve_tokens",
]


@dataclass
class Site:
    served: ServedApp
    admin: str
    bob: str
    audit_id: int
    seen: list[httpx.Response]

    def call(
        self, method: str, path: str, token: str | None = None, **options: Any
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        headers.update(options.pop("headers", {}))
        response = httpx.request(
            method, self.served.url + path, headers=headers, timeout=30, **options
        )
        self.seen.append(response)
        return response


def _counts(db: Any) -> dict[str, int]:
    with closing(sqlite3.connect(db)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {
            table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("results", "labels", "audits", "serve_tokens")
        }


@pytest.fixture
def site(served_app: ServedApp) -> Iterator[Site]:
    admin = served_app.token("admin", "ann")
    alice = served_app.token("labeler", "alice")
    bob = served_app.token("labeler", "bob")
    made = Site(served_app, admin, bob, 0, [])
    items = [
        {
            "id": f"i{n}",
            "question": f"Q{n}?",
            "gold_answer": "Paris",
            "model_output": f"INPUT-MARKER-{n}",
        }
        for n in range(4)
    ]
    scored = made.call(
        "POST",
        "/v1/score",
        admin,
        json={"card": "reference@1", "model": "mock:judge", "items": items},
    )
    assert scored.status_code == 200, scored.text
    output = json.dumps({"delta": SECRETS["reason"], "decision_basis": SECRETS["reason"]})
    with closing(sqlite3.connect(served_app.db_path)) as connection, connection:
        connection.execute(
            "UPDATE results SET verdict = ?, model_verdict = ?, raw_reply = ?, output = ?",
            (SECRETS["verdict"], SECRETS["model_verdict"], SECRETS["raw_reply"], output),
        )
    audit = made.call(
        "POST",
        "/v1/audits",
        admin,
        json={"card": "reference@1", "model": "mock:judge", "n": 4, "labels_wanted": 2},
    )
    assert audit.status_code == 201, audit.text
    made.audit_id = audit.json()["audit_id"]
    # Alice labels one item, with a note; Bob must never see it.
    item = made.call("POST", f"/v1/audits/{made.audit_id}/next", alice).json()["item"]
    values = {
        field["name"]: field["choices"][0] if field["choices"] else int(field["minimum"])
        for field in item["fields"]
    }
    label = {
        "audit_id": made.audit_id,
        "position": item["position"],
        "values": values,
        "note": SECRETS["note"],
    }
    assert made.call("POST", "/v1/labels", alice, json=label).status_code == 201
    yield made
    for response in made.seen:
        assert response.headers.get("content-security-policy") == CONTENT_SECURITY_POLICY, (
            response.url
        )


def _flattened(routes: list[Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every route, the included routers' too (newer FastAPI keeps them as one entry each)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _flattened(included.routes, prefix + route.include_context.prefix)
        else:
            yield prefix, route


def _routes(site: Site) -> list[tuple[str, str, APIRoute]]:
    found = []
    for prefix, route in _flattened(site.served.app.routes):
        if isinstance(route, Mount):
            assert prefix + route.path == "/static", f"unexpected mount {route.path}"
            continue
        assert isinstance(route, APIRoute), f"{route!r} is not an APIRoute: check its auth by hand"
        for method in sorted(route.methods):
            found.append((method, prefix + route.path, route))
    assert len(found) >= 8
    return found


def _path(site: Site, template: str) -> str:
    values = {
        "audit_id": str(site.audit_id),
        "position": "1",
        "card": "reference@1",
        "model": "mock:judge",
    }
    path = template
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
    return path.replace("{", "").replace("}", "")  # any other parameter: its name


def test_every_route_but_the_login_page_needs_a_token(site: Site) -> None:
    for method, template, _ in _routes(site):
        if (method, template) in PUBLIC:
            continue
        for token in (None, "jc_not-a-token"):
            response = site.call(method, _path(site, template), token, json={})
            assert response.status_code == 401, (method, template, response.status_code)
            assert response.json()["error"]["code"] == "unauthenticated"


def test_every_state_changing_route_refuses_a_cookie_without_the_csrf_token(site: Site) -> None:
    # Log in as a browser does: a session cookie and no Authorization header.
    for secret in (site.admin, site.bob):
        with httpx.Client(base_url=site.served.url) as browser:
            assert browser.post("/login", data={"token": secret}).status_code == 303
            for method, template, _ in _routes(site):
                if method == "GET" or (method, template) in PUBLIC:
                    continue
                response = browser.request(method, _path(site, template), json={})
                site.seen.append(response)
                assert response.status_code == 403, (method, template, response.text)
                assert response.json()["error"]["code"] == "csrf", (method, template)


def test_a_body_over_the_limit_is_a_413_before_it_is_read(site: Site) -> None:
    limit = 32 * 2**20
    response = site.call("POST", "/v1/score", site.admin, content=b"x" * (limit + 1))
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(33):
            yield b" " * 2**20

    streamed = site.call(
        "POST",
        "/v1/score",
        site.admin,
        content=chunks(),
        headers={"Content-Type": "application/json"},
    )
    assert streamed.status_code == 413


def test_a_labeler_reads_no_verdict_score_reason_or_other_label_through_any_route(
    site: Site,
) -> None:
    # Bob holds an item (the route labelers use to fetch one), then reads every GET route.
    held = site.call("POST", f"/v1/audits/{site.audit_id}/next", site.bob)
    assert held.status_code == 200 and "INPUT-MARKER-" in held.text  # he does see the item
    bodies = {"next": held.text}
    for method, template, _ in _routes(site):
        if method != "GET":
            continue
        response = site.call(
            "GET", _path(site, template), site.bob, params={"audit_id": site.audit_id}
        )
        assert response.status_code < 500, (template, response.text)
        bodies[template] = response.text
    assert "/v1/results" in bodies and "/label/{audit_id}" in bodies
    for template, text in bodies.items():
        for name, secret in SECRETS.items():
            assert secret not in text, f"{name} leaked to a labeler through {template}"
        assert "alice" not in text, f"another labeler's name leaked through {template}"


def test_sql_metacharacters_in_every_query_parameter(site: Site) -> None:
    before = _counts(site.served.db_path)
    tried = 0
    for method, template, route in _routes(site):
        if method != "GET":
            continue
        for parameter in route.dependant.query_params:
            for probe in SQL_PROBES:
                response = site.call(
                    "GET", _path(site, template), site.admin, params={parameter.name: probe}
                )
                tried += 1
                assert response.status_code in {200, 404, 422}, (template, parameter.name, probe)
                if (
                    response.status_code == 200
                    and "application/json" in response.headers["content-type"]
                ):
                    payload = response.json()
                    assert payload.get("results", []) == [], (template, parameter.name, probe)
    assert tried >= 5 * len(SQL_PROBES)
    # The same probes as path parameters.
    for probe in SQL_PROBES:
        response = site.call("GET", f"/v1/audits/{probe}/progress", site.admin)
        assert response.status_code in {404, 422}
    assert _counts(site.served.db_path) == before


def _raw_get(url: str, target: str) -> tuple[int, str]:
    """A request line sent byte for byte (HTTP clients normalise ``..`` away)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.decode("latin-1").partition("\r\n\r\n")
    assert "content-security-policy:" in head.lower(), target
    return int(head.split()[1]), body


TRAVERSALS = [
    "/static/../serve/app.py", "/static/..%2fapp.py", "/static/%2e%2e/app.py",
    "/static/%2e%2e%2fapp.py", "/static/..%5capp.py", "/static/..%252fapp.py",
    "/static/....//app.py", "/static//etc/passwd", "/static/%2e%2e/%2e%2e/store.py",
    "/static/%2e%2e/templates/base.html", "/static/app.css%00.py", "/static/../../../../etc/passwd",
]  # fmt: skip


def test_path_traversal_on_static_is_a_404(served_app: ServedApp) -> None:
    assert _raw_get(served_app.url, "/static/app.css")[0] == 200
    for target in TRAVERSALS:
        status, body = _raw_get(served_app.url, target)
        assert status in {400, 404}, target
        assert "import" not in body and "root:" not in body and "<!doctype" not in body, target


def test_an_unexpected_error_is_a_bare_500_with_the_headers(site: Site) -> None:
    def boom() -> None:
        raise RuntimeError("secret internals")

    site.served.app.add_api_route("/boom", boom)
    response = site.call("GET", "/boom")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal"
    assert "secret internals" not in response.text

"""Tokens, login, roles and CSRF, against a real uvicorn on loopback (and Chromium for login)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime

import httpx
import pytest

from judgecards.serve.tokens import TokenError, Tokens, expired, token_hash
from judgecards.storage import Store
from tests.builders import ServedApp


def test_a_token_is_stored_as_its_hash_only(served_app: ServedApp) -> None:
    secret = served_app.token("admin", "ann")
    rows = sqlite3.connect(served_app.db_path).execute("SELECT * FROM serve_tokens").fetchall()
    assert len(rows) == 1
    assert secret not in repr(rows)
    assert token_hash(secret) in rows[0]


def test_unknown_role_and_empty_name_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Store(tmp_path / "t.db") as store:
        tokens = Tokens(store)
        with pytest.raises(TokenError, match="unknown role"):
            tokens.create("root", "ann")
        with pytest.raises(TokenError, match="name"):
            tokens.create("admin", "  ")
        assert tokens.list() == []


def test_bearer_cookie_roles_and_revocation(served_app: ServedApp) -> None:
    admin = served_app.token("admin", "ann")
    labeler = served_app.token("labeler", "bob")
    with httpx.Client(base_url=served_app.url) as client:
        assert client.get("/").status_code == 401
        assert client.get("/").json()["error"]["code"] == "unauthenticated"
        page = client.get("/", headers={"Accept": "text/html"})
        assert page.status_code == 401 and "Please log in" in page.text
        assert client.get("/", headers=served_app.headers(admin)).status_code == 200
        assert client.get("/", headers={"Authorization": "Bearer jc_wrong"}).status_code == 401
        # A labeler cannot read the OpenAPI-described admin API.
        forbidden = client.get("/openapi.json", headers=served_app.headers("x"))
        assert forbidden.status_code == 401
        assert client.get("/openapi.json", headers=served_app.headers(labeler)).status_code == 200
    tokens = served_app.app.state.tokens
    bob = next(row for row in tokens.list() if row.name == "bob")
    tokens.revoke(bob.id)
    with httpx.Client(base_url=served_app.url) as client:
        assert client.get("/", headers=served_app.headers(labeler)).status_code == 401
    with pytest.raises(TokenError, match="no live token"):
        tokens.revoke(bob.id)


def test_login_sets_a_strict_httponly_cookie_and_refuses_other_origins(
    served_app: ServedApp,
) -> None:
    secret = served_app.token("labeler", "bob")
    with httpx.Client(base_url=served_app.url) as client:
        response = client.post("/login", data={"token": secret})
        assert response.status_code == 303 and response.headers["location"] == "/"
        cookie = response.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        assert client.get("/").status_code == 200  # the cookie now authenticates
        refused = client.post("/login", data={"token": "jc_nope"})
        assert refused.status_code == 401
    with httpx.Client(base_url=served_app.url) as client:
        cross = client.post(
            "/login", data={"token": secret}, headers={"Origin": "https://evil.example"}
        )
        assert cross.status_code == 403 and "set-cookie" not in cross.headers


def test_an_expired_token_is_refused_by_bearer_cookie_and_login(served_app: ServedApp) -> None:
    tokens: Tokens = served_app.app.state.tokens
    lasting = tokens.create("labeler", "bob").secret
    brief = tokens.create("labeler", "cy", expires_in=timedelta(hours=1))
    assert brief.expires_at is not None
    with httpx.Client(base_url=served_app.url) as client:
        assert client.get("/", headers=served_app.headers(brief.secret)).status_code == 200
        login = client.post("/login", data={"token": brief.secret})
        assert login.status_code == 303
        # The session cookie ends with the token, not when the browser closes.
        stated = login.headers["set-cookie"].split("expires=")[1].split(";")[0]
        assert parsedate_to_datetime(stated) == brief.expires_at
        assert client.get("/").status_code == 200
        # The hour passes: the stored expiry (the token's and its session's) moves into the
        # past, as the clock would move past it; no test waits on a real clock. The client
        # still holds a cookie it thinks is valid for an hour.
        ended = (datetime.now(timezone.utc) - timedelta(seconds=1)).isoformat(timespec="seconds")
        with closing(sqlite3.connect(served_app.db_path)) as connection, connection:
            connection.execute("UPDATE serve_tokens SET expires_at = ? WHERE name = 'cy'", [ended])
            connection.execute(
                "UPDATE serve_sessions SET expires_at = ? WHERE token_id IN "
                "(SELECT id FROM serve_tokens WHERE name = 'cy')",
                [ended],
            )
        assert client.get("/").status_code == 401  # the cookie: the server refuses it
    with httpx.Client(base_url=served_app.url) as client:
        assert client.get("/", headers=served_app.headers(brief.secret)).status_code == 401
        assert client.post("/login", data={"token": brief.secret}).status_code == 401
        assert client.get("/", headers=served_app.headers(lasting)).status_code == 200
    assert tokens.any_live()  # bob's never expires
    [row] = [row for row in tokens.list() if row.name == "cy"]
    ends = datetime.fromisoformat(ended)
    assert expired(row) and not expired(row, now=ends - timedelta(seconds=1))
    with pytest.raises(TokenError, match="positive"):
        tokens.create("labeler", "dee", expires_in=timedelta(0))


def test_cookie_requests_that_change_state_need_the_csrf_token(served_app: ServedApp) -> None:
    secret = served_app.token("labeler", "bob")
    with httpx.Client(base_url=served_app.url) as client:
        client.post("/login", data={"token": secret})
        refused = client.post("/logout")
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "csrf"
        wrong = client.post("/logout", headers={"X-CSRF-Token": "0" * 64})
        assert wrong.status_code == 403
        page = client.get("/", headers={"Accept": "text/html"}).text
        token = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        assert len(token) == 64
        done = client.post("/logout", headers={"X-CSRF-Token": token})
        assert done.status_code == 303
    with httpx.Client(base_url=served_app.url) as client:
        # Bearer requests are exempt: no browser adds that header by itself.
        assert client.post("/logout", headers=served_app.headers(secret)).status_code == 303


@pytest.mark.browser
def test_the_personal_link_logs_in_and_leaves_no_token_in_the_url(
    served_app: ServedApp,
    page,
    aborted_requests,  # type: ignore[no-untyped-def]
) -> None:
    secret = served_app.token("labeler", "carol")
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url))
    page.goto(served_app.login_url(secret))
    page.wait_for_url(served_app.url + "/")
    assert "carol (labeler)" in page.text_content(".who")
    assert secret not in page.url
    assert not any(secret in url for url in seen)  # never sent in a URL, only in the POST body
    cookies = {cookie["name"]: cookie for cookie in page.context.cookies()}
    assert cookies["jc_session"]["httpOnly"] and cookies["jc_session"]["sameSite"] == "Strict"
    assert aborted_requests == []


def test_tokens_made_before_expiry_existed_keep_working(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A database whose token table predates expiry (serve migration m001 only) gains the
    column when opened, and its tokens stay live: NULL means never."""
    from sqlite_utils import Migrations

    from judgecards.serve import repository

    first_only = Migrations("judgecards.serve")
    first_only()(repository.m001_tokens)
    secret = "jc_" + "x" * 43
    with Store(tmp_path / "old.db") as store:
        store.migrate(first_only)
        with store.transaction("an old token") as tx:
            tx.insert(
                "serve_tokens",
                {"id": "old1", "token_hash": token_hash(secret), "role": "admin", "name": "ann",
                 "created_at": "2026-01-01T00:00:00+00:00"},
            )  # fmt: skip
    with Store(tmp_path / "old.db") as store:
        tokens = Tokens(store)  # applies the pending migration
        row = tokens.check(secret)
        assert row is not None and row.name == "ann" and row.expires_at is None
        assert tokens.any_live()


def test_logout_ends_the_session_and_the_old_cookie_no_longer_authorises(
    served_app: ServedApp,
) -> None:
    """Issue 22 item 3: the cookie was the bearer token itself and outlived the logout."""
    secret = served_app.token("labeler", "bob")
    with httpx.Client(base_url=served_app.url) as client:
        client.post("/login", data={"token": secret})
        cookie = client.cookies["jc_session"]
        assert secret not in cookie  # the browser holds a session id, never the token
        page = client.get("/", headers={"Accept": "text/html"}).text
        csrf = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        assert client.post("/logout", headers={"X-CSRF-Token": csrf}).status_code == 303
    with httpx.Client(base_url=served_app.url, cookies={"jc_session": cookie}) as stolen:
        assert stolen.get("/").status_code == 401
        assert stolen.get("/v1/audits").status_code == 401
    # The token itself lives on: a new login works.
    with httpx.Client(base_url=served_app.url) as client:
        assert client.post("/login", data={"token": secret}).status_code == 303
        assert client.get("/").status_code == 200
        assert client.cookies["jc_session"] != cookie


def test_a_revoked_tokens_cookie_is_401_on_state_changing_routes_not_csrf(
    served_app: ServedApp,
) -> None:
    """Issue 22 item 23: the CSRF check ran first and answered 403 ``csrf``."""
    secret = served_app.token("labeler", "bob")
    with httpx.Client(base_url=served_app.url) as client:
        client.post("/login", data={"token": secret})
        page = client.get("/", headers={"Accept": "text/html"}).text
        csrf = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        tokens: Tokens = served_app.app.state.tokens
        tokens.revoke(next(row.id for row in tokens.list() if row.name == "bob"))
        for path in ("/logout", "/v1/audits/1/next"):
            for headers in ({}, {"X-CSRF-Token": csrf}):
                refused = client.post(path, headers=headers)
                assert refused.status_code == 401, (path, headers, refused.text)
                assert refused.json()["error"]["code"] == "unauthenticated"

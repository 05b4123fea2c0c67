"""``judgecards serve`` as a process: loopback by default, refusing exposure without tokens,
stopping cleanly on SIGTERM with everything answered stored; ``serve token`` commands."""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from judgecards.cli import cli
from tests.builders import SAFETY_CAP, ServeProcess, wait_for

ITEM = {"question": "Capital of France?", "gold_answer": "Paris", "model_output": "Paris."}


def _token(db: Path, role: str, name: str) -> str:
    result = CliRunner().invoke(
        cli, ["serve", "token", "create", "--role", role, "--name", name, "--db", str(db)]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    secret = lines[1].strip()
    assert secret.startswith("jc_")
    assert lines[3].strip() == f"http://127.0.0.1:8000/login#token={secret}"
    return secret


def test_token_commands_create_list_and_revoke(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    secret = _token(db, "labeler", "bob")
    listed = CliRunner().invoke(cli, ["serve", "token", "list", "--db", str(db)])
    assert listed.exit_code == 0 and "labeler" in listed.output and "bob" in listed.output
    assert secret not in listed.output  # shown once, never again
    token_id = listed.output.split()[0]
    revoked = CliRunner().invoke(cli, ["serve", "token", "revoke", token_id, "--db", str(db)])
    assert revoked.exit_code == 0
    again = CliRunner().invoke(cli, ["serve", "token", "revoke", token_id, "--db", str(db)])
    assert again.exit_code == 2 and "no live token" in again.output
    bad = CliRunner().invoke(
        cli, ["serve", "token", "create", "--role", "root", "--name", "x", "--db", str(db)]
    )
    assert bad.exit_code == 2


def test_a_token_can_be_given_a_lifetime_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "t.db"

    def create(*extra: str) -> Any:
        return CliRunner().invoke(
            cli,
            [
                "serve",
                "token",
                "create",
                "--role",
                "labeler",
                "--name",
                "bob",
                *extra,
                "--db",
                str(db),
            ],
        )

    made = create("--expires-in", "12h")
    assert made.exit_code == 0, made.output
    [stated] = [line for line in made.output.splitlines() if line.startswith("It expires ")]
    expires = datetime.fromisoformat(stated.removeprefix("It expires ").rstrip("."))
    assert abs(expires - datetime.now(timezone.utc) - timedelta(hours=12)) < timedelta(minutes=1)
    listed = CliRunner().invoke(cli, ["serve", "token", "list", "--db", str(db)])
    assert f"live, expires {expires.isoformat()}" in listed.output
    [row] = [
        json.loads(line)
        for line in CliRunner()
        .invoke(cli, ["serve", "token", "list", "--json", "--db", str(db)])
        .output.splitlines()
    ]
    assert row["expires_at"] == expires.isoformat()
    for bad in ("0d", "-3h", "12", "3w", "1e400d"):
        refused = create("--expires-in", bad)
        assert refused.exit_code == 2, (bad, refused.output)
        assert "Invalid value for '--expires-in'" in refused.output
    assert (
        len(
            CliRunner().invoke(cli, ["serve", "token", "list", "--db", str(db)]).output.splitlines()
        )
        == 1
    )


def test_an_exposed_address_is_refused_while_no_token_exists(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    result = CliRunner().invoke(cli, ["serve", "--db", str(db), "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "refusing to listen on 0.0.0.0" in result.output
    assert not db.exists()  # refusing created nothing


def test_sigterm_stops_the_server_cleanly_after_answering_what_it_was_doing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "served.db"
    admin = _token(db, "admin", "ann")
    server = ServeProcess(db, tmp_path / "serve.log")
    try:
        banner = server.output.splitlines()[0]
        assert "loopback only" in banner and "127.0.0.1:0" in banner
        url = server.url
        headers = {"Authorization": f"Bearer {admin}"}
        warm = {"card": "reference@1", "model": "mock:judge", "items": [ITEM]}
        assert httpx.post(url + "/v1/score", json=warm, headers=headers).status_code == 200
        # A label posted before the signal (LABEL's queue API) must be stored.
        audit = {"card": "reference@1", "model": "mock:judge", "n": 1}
        audit_id = httpx.post(url + "/v1/audits", json=audit, headers=headers).json()["audit_id"]
        held = httpx.post(url + f"/v1/audits/{audit_id}/next", headers=headers).json()["item"]
        values = {
            field["name"]: field["choices"][0] if field["choices"] else int(field["minimum"])
            for field in held["fields"]
        }
        label = {"audit_id": audit_id, "position": held["position"], "values": values}
        assert httpx.post(url + "/v1/labels", json=label, headers=headers).status_code == 201
        items = [{"id": str(n), **ITEM, "model_output": f"answer {n}"} for n in range(100)]
        answered: list[httpx.Response] = []

        def post() -> None:
            body = {"card": "reference@1", "model": "mock:judge", "items": items}
            timeout = httpx.Timeout(SAFETY_CAP)  # the server answers before it stops
            answered.append(
                httpx.post(url + "/v1/score", json=body, headers=headers, timeout=timeout)
            )

        thread = threading.Thread(target=post)
        thread.start()
        # The signal lands once the request is being worked on (some of its results stored)
        # or answered: a readiness signal, not a sleep (a fixed 0.1 s lost the race on a busy
        # machine, and the request then met a closed port).
        with closing(sqlite3.connect(db)) as watch:
            wait_for(
                lambda: watch.execute("SELECT count(*) FROM results").fetchone()[0] > 1,
                alive=thread.is_alive,
                what="the request's first results stored",
            )
        code = server.stop()  # SIGTERM: the server first answers the request it is working on
        thread.join()
    finally:
        server.stop()
    rest = server.output
    assert code == 0
    assert "Stopped." in rest and admin not in rest
    assert answered and answered[0].status_code == 200
    with closing(sqlite3.connect(db)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = connection.execute("SELECT count(*) FROM results WHERE status = 'ok'")
        assert stored.fetchone()[0] == 101  # every item the answer reported is stored
        labels = connection.execute("SELECT count(*), count(DISTINCT field) FROM labels")
        assert labels.fetchone() == (len(values), len(values))


def test_no_token_reaches_the_server_log(tmp_path: Path) -> None:
    db = tmp_path / "log.db"
    secret = _token(db, "labeler", "bob")
    server = ServeProcess(db, tmp_path / "serve.log")
    try:
        url = server.url
        # The link's fragment never reaches the server; a hand-typed query string does, and
        # is blanked in the access log; the POSTed token and the bearer header are not logged.
        httpx.get(f"{url}/login?token={secret}")
        assert httpx.post(url + "/login", data={"token": secret}).status_code == 303
        httpx.get(url + "/", headers={"Authorization": f"Bearer {secret}"})
    finally:
        code = server.stop()
    assert code == 0
    text = server.output
    assert "POST /login" in text and "GET /login?token=jc_[redacted]" in text
    assert secret not in text and secret[3:20] not in text


def test_a_missing_extra_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    db = tmp_path / "x.db"
    result = CliRunner().invoke(cli, ["serve", "--db", str(db)])
    assert result.exit_code == 2
    assert "uvicorn" in result.output and "pip install 'judgecards[serve]'" in result.output
    assert not db.exists()


def test_token_links_carry_the_port_the_server_really_listens_on(tmp_path: Path) -> None:
    """Issue 22 item 22: ``token create`` printed ``:8000`` links whatever port was served."""
    db = tmp_path / "port.db"
    _token(db, "admin", "ann")  # before any server ran: the documented default, :8000
    server = ServeProcess(db, tmp_path / "serve.log")  # --port 0
    try:
        # uvicorn's own line says where it listens (the port --port 0 got); the server's
        # "Listening on port" line (the readiness signal) comes after it recorded that address.
        (uvicorn_line,) = [
            line for line in server.output.splitlines() if "Uvicorn running on" in line
        ]
        port = int(uvicorn_line.split("http://127.0.0.1:")[1].split()[0])
        assert port == server.port and port not in (0, 8000)
        made = CliRunner().invoke(
            cli, ["serve", "token", "create", "--role", "labeler", "--name", "bob", "--db", str(db)]
        )
        assert made.exit_code == 0, made.output
        link = made.output.splitlines()[3].strip()
        assert link.startswith(f"http://127.0.0.1:{port}/login#token=jc_")
        assert "the address judgecards serve listened on" in made.output
        assert httpx.get(link.split("#")[0], timeout=10).status_code == 200
        explicit = CliRunner().invoke(
            cli,
            [
                "serve",
                "token",
                "create",
                "--role",
                "labeler",
                "--name",
                "cy",
                "--url",
                "https://label.example/",
                "--db",
                str(db),
            ],
        )
        assert explicit.output.splitlines()[3].strip().startswith("https://label.example/login#")
    finally:
        code = server.stop()
    assert code == 0

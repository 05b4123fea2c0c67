"""``judgecards serve``: the web app over the results database, and its access tokens.

``judgecards serve [--db] [--host] [--port]`` runs the app under uvicorn. It listens on loopback
unless told otherwise, and refuses any other address while no token exists (the app would be
reachable by others before anyone could use it). SIGINT and SIGTERM stop it cleanly: uvicorn
stops accepting, lets requests in flight finish (each write is one transaction) and then the
database is closed; SIGTERM exits 0 (what a service manager expects), Ctrl-C 130 as every
command does.

``judgecards serve token create|list|revoke`` manage tokens; they need no web dependencies.
Once bound, the server records its address (with the port it really got, also for ``--port
0``) in the database; ``token create`` builds its login link on that address unless ``--url``
says otherwise (before any server ran: ``http://127.0.0.1:8000``).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import signal
import socket
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import click

from judgecards.cli._common import db_option
from judgecards.errors import JudgecardsError
from judgecards.serve.repository import TokenRow
from judgecards.serve.tokens import ROLES, Tokens, expired, login_link
from judgecards.storage import Store

__all__ = ["serve"]

_SECRET = re.compile(r"jc_[A-Za-z0-9_-]{8,}")


class ServeError(JudgecardsError):
    """The server cannot start as asked (an exposed address with no tokens)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _NoSecrets(logging.Filter):
    """Blanks anything token-shaped in a log record (a hand-typed ``?token=`` URL, say)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                _SECRET.sub("jc_[redacted]", arg) if isinstance(arg, str) else arg
                for arg in record.args
            )
        record.msg = _SECRET.sub("jc_[redacted]", str(record.msg))
        return True


@click.group(invoke_without_command=True)
@db_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but loopback needs tokens to exist.",
)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--max-items",
    default=100,
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="Most items one /v1/score or /v1/compare request may carry.",
)
@click.pass_context
def serve(ctx: click.Context, db: Path, host: str, port: int, max_items: int) -> None:
    """Serve labeling queues, reports and the JSON API over the database (uvicorn)."""
    if ctx.invoked_subcommand is not None:
        return
    from judgecards.serve import require_extra

    require_extra()
    exposed = not is_loopback(host)
    if exposed and not _has_tokens(db):
        raise ServeError(
            f"refusing to listen on {host}: no access token exists in {db}, so the server "
            "would be open to the network before anyone could use it; create one first "
            "(judgecards serve token create --role admin --name YOU) or use --host 127.0.0.1"
        )
    import uvicorn

    from judgecards.serve.app import create_app

    app = create_app(db, max_items=max_items)
    where = "every interface of this host" if exposed else "loopback only: this machine"
    click.echo(f"Serving {db} at http://{host}:{port}/ ({where}).", err=True)
    if not app.state.tokens.any_live():
        click.echo(
            "No access tokens yet: judgecards serve token create --role admin --name YOU", err=True
        )
    logging.getLogger("uvicorn.access").addFilter(_NoSecrets())
    logging.getLogger("uvicorn.error").addFilter(_NoSecrets())
    config = uvicorn.Config(
        app, host=host, port=port, ws="none", lifespan="on", timeout_graceful_shutdown=10
    )
    tokens: Tokens = app.state.tokens

    class Server(uvicorn.Server):
        """Records the address it really listens on (the port ``--port 0`` got, too)."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and self.servers and self.servers[0].sockets:
                bound = int(self.servers[0].sockets[0].getsockname()[1])
                url = f"http://{link_host(host)}:{bound}"
                tokens.record_address(url)
                click.echo(f"Listening on port {bound}; login links: {url}/login#...", err=True)

    server = Server(config)
    terminated: list[int] = []

    def on_term(signum: int, frame: FrameType | None) -> None:
        terminated.append(signum)  # uvicorn re-raises the signal it handled once it has stopped

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        server.run()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if not server.started and not terminated:
        raise ServeError(f"the server could not start on {host}:{port} (see the log above)")
    click.echo("Stopped.", err=True)


def link_host(host: str) -> str:
    """The host part of links to a server listening on ``host`` (a wildcard: this machine's
    name, which people elsewhere can reach; an IPv6 address in brackets)."""
    if host in {"0.0.0.0", "::", ""}:
        return socket.getfqdn()
    return f"[{host}]" if ":" in host else host


def _has_tokens(db: Path) -> bool:
    if not db.is_file():
        return False  # no database, no tokens; and nothing is created by refusing
    with Store(db) as store:
        return Tokens(store).any_live()


def _state(row: TokenRow) -> str:
    if row.revoked_at:
        return f"revoked {row.revoked_at}"
    if row.expires_at is None:
        return "live"
    return f"expired {row.expires_at}" if expired(row) else f"live, expires {row.expires_at}"


_DEFAULT_URL = "http://127.0.0.1:8000"
_LIFETIME = re.compile(r"(\d+(?:\.\d+)?)([mhd])")
_LIFETIME_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


class Lifetime(click.ParamType[timedelta]):
    """A token's lifetime: a positive number and a unit, ``m``, ``h`` or ``d`` (``30d``)."""

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> timedelta:
        if isinstance(value, timedelta):
            return value
        match = _LIFETIME.fullmatch(str(value).strip().lower())
        if match is None or float(match.group(1)) == 0:
            self.fail(f"{value!r} is not a duration like 90m, 12h or 30d", param, ctx)
        try:
            return timedelta(**{_LIFETIME_UNITS[match.group(2)]: float(match.group(1))})
        except OverflowError:
            self.fail(f"{value!r} is too long", param, ctx)


@serve.group()
def token() -> None:
    """Create, list and revoke access tokens (stored hashed; shown once)."""


@token.command("create")
@click.option("--role", required=True, type=click.Choice(ROLES))
@click.option("--name", required=True, help="Who holds the token (labels carry this name).")
@click.option(
    "--url",
    default=None,
    help="The server's address as people reach it, for the login link (default: the address "
    "judgecards serve last listened on for this database, else http://127.0.0.1:8000).",
)
@click.option(
    "--expires-in",
    type=Lifetime(),
    default=None,
    metavar="DURATION",
    help="Stop working after this long: 90m, 12h, 30d (default: until revoked).",
)
@db_option
def create(role: str, name: str, url: str | None, expires_in: timedelta | None, db: Path) -> None:
    """Print a new token once, and the personal login link that carries it."""
    with Store(db) as store:
        tokens = Tokens(store)
        issued = tokens.create(role, name, expires_in=expires_in)
        recorded = tokens.address()
    where = None
    if url is None and recorded is not None:
        url, since = recorded
        where = f"the address judgecards serve listened on at {since}; pass --url to change it"
    elif url is None:
        url = _DEFAULT_URL
        where = "no server has run on this database yet; pass --url if it will listen elsewhere"
    click.echo(f"Token {issued.id} for {issued.name} ({issued.role}), shown only now:")
    click.echo(f"  {issued.secret}")
    click.echo("Personal login link (opens a session in the browser; keep it private):")
    click.echo(f"  {login_link(url, issued.secret)}")
    if where is not None:
        click.echo(f"  ({where})")
    click.echo("Scripts send it as: Authorization: Bearer <token>")
    if issued.expires_at is not None:
        click.echo(f"It expires {issued.expires_at.isoformat(timespec='seconds')}.")


@token.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per token.")
@db_option
def list_tokens(as_json: bool, db: Path) -> None:
    """List tokens: id, role, name, created, revoked or expiry (never the token itself)."""
    with Store(db) as store:
        rows = Tokens(store).list()
    for row in rows:
        if as_json:
            fields = {
                "id": row.id,
                "role": row.role,
                "name": row.name,
                "created_at": row.created_at,
                "revoked_at": row.revoked_at,
                "expires_at": row.expires_at,
            }
            click.echo(json.dumps(fields))
        else:
            state = _state(row)
            click.echo(f"{row.id}  {row.role:<8} {row.name}  created {row.created_at}  {state}")
    if not rows and not as_json:
        click.echo("No tokens (judgecards serve token create --role ROLE --name NAME).")


@token.command("revoke")
@click.argument("token_id")
@db_option
def revoke(token_id: str, db: Path) -> None:
    """Revoke a token by its id: its holder is logged out at their next request."""
    with Store(db) as store:
        Tokens(store).revoke(token_id)
    click.echo(f"Revoked token {token_id}.")

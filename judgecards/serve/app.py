"""`create_app`: the ASGI app over one results database, with every router, the error shape,
the security headers and the static files.

One `Store` (one connection behind one lock, `judgecards.storage.database`) serves every request:
routes that touch the database are plain ``def`` functions, which FastAPI runs in its thread
pool, so a slow query or judge never stalls the event loop, and writers in this process queue
on the lock instead of meeting "database is locked". Other processes (the CLI on the same file)
wait on SQLite's busy timeout.
"""

from __future__ import annotations

import importlib
import logging
import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from judgecards.serve.api_errors import error_json, install_error_handlers
from judgecards.serve.auth import AnyUser
from judgecards.serve.pages import STATIC_DIR, error_page
from judgecards.serve.tokens import Tokens
from judgecards.storage import Store

__all__ = ["CONTENT_SECURITY_POLICY", "SecurityHeaders", "create_app"]

_log = logging.getLogger("judgecards.serve")

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
# Routers of the other areas, included when their module exists (each is an APIRouter `router`).
_ROUTERS = (
    "judgecards.serve.pages",
    "judgecards.serve.api",
    "judgecards.serve.labeling",
    "judgecards.serve.reports",
)


class _TooLarge(Exception):
    pass


class SecurityHeaders:
    """ASGI middleware: the CSP and friends on every response, errors and static files included;
    ``Cache-Control: no-store`` on everything but ``/static`` (pages and JSON hold labels).
    A body over ``max_body_bytes`` is a 413 before it is read into memory (uvicorn sets no
    limit). An unexpected exception becomes a 500 with the error shape and no detail."""

    def __init__(self, app: ASGIApp, max_body_bytes: int = 32 * 2**20) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = str(scope.get("path", "")).startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (name, value)
                    for name, value in message.get("headers", [])
                    if name.lower() not in {pair[0] for pair in _HEADERS}
                ]
                headers.extend(_HEADERS)
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        too_large = error_json(413, "too_large", f"the body is over {self.max_body_bytes} bytes")
        declared = dict(scope.get("headers", [])).get(b"content-length", b"0")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await too_large(scope, receive, with_headers)
            return
        started = refused = False
        received = 0

        async def tracking(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the 413 is sent; whatever the app makes of the cut body is not
            started = started or message["type"] == "http.response.start"
            await with_headers(message)

        async def counting() -> Message:
            nonlocal received, refused
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body_bytes and not started:  # a chunked body: no length
                await too_large(scope, receive, with_headers)
                refused = True
                raise _TooLarge
            return message

        try:
            await self.app(scope, counting, tracking)
        except _TooLarge:
            pass
        except Exception as error:
            # Here, inside Starlette's outermost error middleware, so even a 500 has the headers.
            if started:
                raise
            _log.error("unhandled error on %s", scope.get("path"), exc_info=error)
            response = error_json(500, "internal", "internal server error (see the server log)")
            await response(scope, receive, with_headers)


def _include_routers(app: FastAPI) -> None:
    for name in _ROUTERS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name != name:
                raise  # the module exists but something it imports does not
            continue
        app.include_router(module.router)


def create_app(
    db_path: str | os.PathLike[str],
    *,
    csrf_secret: bytes | None = None,
    max_items: int = 100,
    max_body_bytes: int = 32 * 2**20,
    **settings: Any,
) -> FastAPI:
    """The app over the database at ``db_path`` (created and migrated if needed).

    Args:
        db_path: the results database the CLI uses (``--db``).
        csrf_secret: key of the CSRF tokens (default: random per process, so a restart asks
            open pages to reload).
        max_items: the most items one ``/v1/score`` or ``/v1/compare`` request may carry.
        max_body_bytes: the largest request body accepted (413 beyond it).
        **settings: kept on ``app.state.settings`` for the routers (e.g. ``reservation_s``).
    """
    from calibration.labels import open_store

    store = open_store(Store(Path(db_path)))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()

    app = FastAPI(
        title="judgecards",
        summary="Judge cards over HTTP: scoring, comparisons, labeling queues and reports.",
        version=_version(),
        lifespan=lifespan,
        docs_url=None,  # Swagger and ReDoc load scripts from a CDN: the CSP forbids that
        redoc_url=None,
        openapi_url=None,  # served below, behind a token like every other route
    )
    app.state.store = store
    app.state.tokens = Tokens(store)
    app.state.csrf_secret = csrf_secret or secrets.token_bytes(32)
    app.state.max_items = max_items
    app.state.settings = settings
    install_error_handlers(app, page=error_page)
    app.add_middleware(SecurityHeaders, max_body_bytes=max_body_bytes)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    _include_routers(app)

    @app.get("/openapi.json", include_in_schema=False)
    def openapi(
        principal: AnyUser,
    ) -> dict[str, Any]:
        return app.openapi()

    return app


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("judgecards")
    except PackageNotFoundError:
        return "0"

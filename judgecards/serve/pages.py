"""The server's own pages (home, login, logout) and the template environment every page uses.

`templates` autoescapes everything (``autoescape=True`` for every file, not only ``.html``), and
every template extends ``base.html`` (blocks ``title``, ``content``, ``scripts``), which loads
CSS and scripts from ``/static`` only: the Content-Security-Policy allows nothing inline.

Login: the personal link is ``/login#token=<token>``. A URL fragment is never sent to the server,
so the token is in no access log, proxy log or Referer; ``login.js`` reads it, removes it from
the address bar and history, and POSTs it to ``/login``, which opens a server-side session
and sets its id as the session cookie (HttpOnly, SameSite=Strict, Path=/) and redirects;
``/logout`` revokes that session, so a copy of the old cookie no longer authorises. Without JavaScript the page shows a field to
paste the token into. A login POST from another origin is refused (login CSRF).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from judgecards.serve.api_errors import ApiError
from judgecards.serve.auth import (
    SESSION_COOKIE,
    AnyUser,
    authenticate,
    csrf_protect,
    csrf_token,
)
from judgecards.serve.tokens import Tokens, login_link

__all__ = [
    "STATIC_DIR",
    "TEMPLATES_DIR",
    "error_page",
    "login_link",
    "render",
    "router",
    "templates",
]

TEMPLATES_DIR = Path(__file__).with_name("templates")
STATIC_DIR = Path(__file__).with_name("static")


def _page_context(request: Request) -> dict[str, Any]:
    return {"csrf_token": csrf_token(request), "principal": authenticate(request)}


templates = Jinja2Templates(
    env=jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES_DIR), autoescape=True),
    context_processors=[_page_context],
)


def render(
    request: Request, name: str, context: dict[str, Any] | None = None, *, status: int = 200
) -> HTMLResponse:
    """A page from ``templates`` (with ``csrf_token`` and ``principal`` in its context)."""
    return templates.TemplateResponse(request, name, context or {}, status_code=status)


def error_page(request: Request, status: int, code: str, message: str) -> HTMLResponse:
    """The page a browser gets instead of a JSON error (401 says how to log in)."""
    return render(request, "message.html", {"code": code, "message": message}, status=status)


router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def home(request: Request, principal: AnyUser) -> HTMLResponse:
    return render(request, "index.html", {"title": "judgecards"})


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request) -> HTMLResponse:
    return render(request, "login.html", {"failed": False})


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None  # browsers send Origin on POST; "null" is an opaque origin
    host = request.headers.get("host", "")
    return origin in {f"http://{host}", f"https://{host}"}


@router.post("/login", response_class=HTMLResponse)
def login(request: Request, token: str = Form(default="", max_length=200)) -> Response:
    if not _same_origin(request):
        raise ApiError(403, "csrf", "login from another site refused")
    tokens: Tokens = request.app.state.tokens
    row = tokens.check(token.strip())
    if row is None:
        return render(request, "login.html", {"failed": True}, status=401)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        tokens.open_session(row),
        httponly=True,
        samesite="strict",
        path="/",
        secure=request.url.scheme == "https",
        # The browser drops the session when the token expires (the server refuses it anyway).
        expires=datetime.fromisoformat(row.expires_at) if row.expires_at else None,
    )
    return response


@router.post("/logout", dependencies=[Depends(csrf_protect)])
def logout(request: Request, principal: AnyUser) -> Response:
    session = request.cookies.get(SESSION_COOKIE)
    if session and "authorization" not in request.headers:
        tokens: Tokens = request.app.state.tokens
        tokens.close_session(session)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response

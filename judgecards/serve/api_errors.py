"""One error shape for every route: ``{"error": {"code", "message", "field"}}``.

``code`` is stable (clients and tests match on it), ``message`` is for people and ``field`` is
the dotted location of the input at fault (``body.items.3.output``, ``query.limit``) or null.
Bad input is a 4xx and is refused before anything is written; an unexpected exception is a
500 with no detail (its traceback goes to the server log, never to the client; see
`judgecards.serve.app.SecurityHeaders`). Pages asked
for by a browser get the same status with an HTML page instead of JSON.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from judgecards.errors import JudgecardsError, StoreError

__all__ = [
    "ApiError",
    "ErrorBody",
    "ErrorPage",
    "ErrorResponse",
    "error_json",
    "install_error_handlers",
    "wants_html",
]

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid",
    429: "too_many_requests",
}


class ErrorBody(BaseModel):
    code: str
    message: str
    field: str | None = None


class ErrorResponse(BaseModel):
    """The body of every error response."""

    error: ErrorBody


class ApiError(Exception):
    """Raise from a route or dependency to answer with this status and error body."""

    def __init__(self, status: int, code: str, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field


def wants_html(request: Request) -> bool:
    """A browser asking for a page (not the JSON API) gets HTML errors."""
    return not request.url.path.startswith("/v1/") and "text/html" in request.headers.get(
        "accept", ""
    )


def error_json(status: int, code: str, message: str, field: str | None = None) -> JSONResponse:
    body = ErrorResponse(error=ErrorBody(code=code, message=message, field=field))
    return JSONResponse(body.model_dump(), status_code=status)


def _location(loc: Sequence[Any]) -> str:
    return ".".join(str(part) for part in loc)


ErrorPage = Callable[[Request, int, str, str], Response]
"""Renders ``(request, status, code, message)`` as an HTML page (`judgecards.serve.pages`)."""


def _api_error_handler(page: ErrorPage) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(request: Request, error: Exception) -> Response:
        assert isinstance(error, ApiError)
        if wants_html(request):
            return page(request, error.status, error.code, error.message)
        return error_json(error.status, error.code, error.message, error.field)

    return handle


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, StarletteHTTPException)
    code = _HTTP_CODES.get(error.status_code, "error")
    message = str(error.detail) if error.detail else code.replace("_", " ")
    return error_json(error.status_code, code, message)


async def _validation_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestValidationError)
    problems = list(error.errors())
    first = problems[0] if problems else {"loc": (), "msg": "invalid request"}
    field = _location(first.get("loc", ()))
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    message = f"{field}: {first.get('msg', 'invalid')}{more}" if field else str(first["msg"])
    return error_json(422, "invalid", message, field or None)


async def _library_error(request: Request, error: Exception) -> Response:
    # Routes check their input first; what still escapes is the database (busy, damaged, full)
    # or a library refusal the route did not anticipate: never a 500 with a traceback.
    if isinstance(error, StoreError):
        return error_json(503, "store", str(error))
    return error_json(422, "invalid", str(error))


def install_error_handlers(app: FastAPI, *, page: ErrorPage) -> None:
    """JSON errors for the API and ``page`` for browsers, on every route of ``app``."""
    app.add_exception_handler(ApiError, _api_error_handler(page))
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(JudgecardsError, _library_error)

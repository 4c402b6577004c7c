"""One error root; one handler turns every ccbench error into an HTTP response."""

from html import escape
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response

from schemas.matrix import field_path


class CCBenchError(Exception):
    status_code = 500
    code = "internal_error"

    def __init__(self, message: str, *, errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or []

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.errors:
            body["errors"] = self.errors
        return body


class Unauthorized(CCBenchError):
    status_code = 401
    code = "unauthorized"


class NotFound(CCBenchError):
    status_code = 404
    code = "not_found"


class Conflict(CCBenchError):
    status_code = 409
    code = "conflict"


class ValidationFailed(CCBenchError):
    """422: `errors` lists {"field": "flows.1.algorithm", "reason": "..."}."""

    status_code = 422
    code = "validation_error"


def error_page(exc: CCBenchError) -> HTMLResponse:
    """Errors of the result pages (/ui/...), as a page a browser shows."""
    return HTMLResponse(
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{exc.status_code} · "
        f"ccbench</title><link rel=icon href='data:,'></head><body><h1>{exc.status_code}</h1>"
        f"<p class=error>{escape(exc.message)}</p><p><a href='/ui/experiments'>experiments</a>"
        "</p></body></html>",
        status_code=exc.status_code,
    )


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(CCBenchError)
    async def _ccbench_error(request: Request, exc: CCBenchError) -> Response:
        if request.url.path.startswith("/ui/"):
            return error_page(exc)
        headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
        return JSONResponse(exc.body(), status_code=exc.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _request_validation(request: Request, exc: RequestValidationError) -> Response:
        errors = []
        for err in exc.errors():
            loc = list(err.get("loc", ()))
            # Drop FastAPI's "body" prefix; field_path drops pydantic's union-branch tags.
            if loc and loc[0] in ("body", "query", "path"):
                where, loc = loc[0], loc[1:]
            else:
                where = "body"
            errors.append({"field": field_path(loc) or where, "reason": err.get("msg", "invalid")})
        summary = "; ".join(f"{e['field']}: {e['reason']}" for e in errors[:5])
        failed = ValidationFailed(f"invalid request: {summary}", errors=errors)
        if request.url.path.startswith("/ui/"):
            return error_page(failed)
        return JSONResponse(failed.body(), status_code=422)

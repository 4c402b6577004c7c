"""One handler turns every ccbench error (ccbench.errors) into an HTTP response: the domain
raises by kind, and this table is the only place a kind becomes a status code."""

from html import escape
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from ccbench.errors import (
    CCBenchError,
    Conflict,
    Forbidden,
    NotFound,
    Unauthorized,
    ValidationFailed,
)
from schemas.matrix import field_path, reason_of

HTTP_STATUS: dict[type[CCBenchError], int] = {
    Unauthorized: 401,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    ValidationFailed: 422,
}


class FieldError(BaseModel):
    field: str = Field(description="the field's path, e.g. flows.1.algorithm")
    reason: str


class ErrorBody(BaseModel):
    """Every error response of the API."""

    error: str = Field(description="the kind: unauthorized, not_found, conflict, ...")
    message: str = Field(description="what went wrong, for a person")
    errors: list[FieldError] | None = Field(None, description="422: each field and why")


def _documented(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


# The error responses of the /v1 routes (OpenAPI), with the body they really send: every route
# may answer AUTHENTICATED; routes of one resource add NOT_FOUND, routes that need a scope
# above read or a resource of the caller's own FORBIDDEN, state changes CONFLICT.
AUTHENTICATED: dict[int | str, dict[str, Any]] = {
    400: _documented("a body that is not JSON"),
    401: _documented("missing, invalid, revoked or expired token"),
    413: _documented("request body too large"),
    422: _documented("invalid input: `errors` names each field and the reason"),
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: _documented("no such resource, or none this team may read")
}
FORBIDDEN: dict[int | str, dict[str, Any]] = {
    403: _documented(
        "the token's scope does not allow this, or the resource is another team's (shared "
        "read-only)"
    )
}
CONFLICT: dict[int | str, dict[str, Any]] = {
    409: _documented("the resource is in a state that does not allow this")
}


def errors_as_json(openapi: dict[str, Any]) -> dict[str, Any]:
    """Error responses are JSON (ErrorBody) on every route, also where the success is CSV or
    text: FastAPI documents a route's extra responses with its own media type."""
    for operations in openapi.get("paths", {}).values():
        for operation in operations.values():
            for status, response in (operation.get("responses") or {}).items():
                content = response.get("content")
                if str(status)[0] in "45" and content and "application/json" not in content:
                    response["content"] = {"application/json": next(iter(content.values()))}
    return openapi


def status_of(exc: CCBenchError) -> int:
    return next((s for kind, s in HTTP_STATUS.items() if isinstance(exc, kind)), 500)


def error_page(exc: CCBenchError) -> HTMLResponse:
    """Errors of the result pages (/ui/...), as a page a browser shows."""
    status = status_of(exc)
    return HTMLResponse(
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{status} · "
        f"ccbench</title><link rel=icon href='data:,'></head><body><h1>{status}</h1>"
        f"<p class=error>{escape(exc.message)}</p><p><a href='/ui/experiments'>experiments</a>"
        "</p></body></html>",
        status_code=status,
    )


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(CCBenchError)
    async def _ccbench_error(request: Request, exc: CCBenchError) -> Response:
        if request.url.path.startswith("/ui/"):
            return error_page(exc)
        status = status_of(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return JSONResponse(exc.body(), status_code=status, headers=headers)

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
            reason = reason_of(str(err.get("msg", "invalid")))
            errors.append({"field": field_path(loc) or where, "reason": reason})
        failed = ValidationFailed.of(errors)
        if request.url.path.startswith("/ui/"):
            return error_page(failed)
        return JSONResponse(failed.body(), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        """Errors raised by the framework itself (unknown route, method not allowed) in the
        API's one error shape."""
        kinds = {400: "bad_request", 404: "not_found", 405: "method_not_allowed"}
        body = {"error": kinds.get(exc.status_code, "http_error"), "message": str(exc.detail)}
        headers = dict(exc.headers or {})
        if exc.status_code == 404:
            body["message"] = f"no route {request.method} {request.url.path}"
        if exc.status_code == 405:
            # Starlette names only the first matching route's methods; a path served by several
            # routes (GET and POST /v1/tokens) allows all of theirs.
            allowed = sorted(_methods_of(request))
            headers["Allow"] = ", ".join(allowed)
            body["message"] = (
                f"{request.method} is not allowed here (allowed: {', '.join(allowed)})"
            )
        return JSONResponse(body, status_code=exc.status_code, headers=headers)


def _methods_of(request: Request) -> set[str]:
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches({**request.scope, "method": "GET"})
        route_methods = getattr(route, "methods", None)
        if match != Match.NONE and route_methods:
            methods |= set(route_methods)
    return methods

"""One error root; one handler turns every ccbench error into an HTTP response."""

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

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


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(CCBenchError)
    async def _ccbench_error(_request: Request, exc: CCBenchError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
        return JSONResponse(exc.body(), status_code=exc.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _request_validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
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
        return JSONResponse(failed.body(), status_code=422)

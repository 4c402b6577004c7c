"""ccbench's error root. Domain code (services, workers, the CLI's admin commands) raises these;
each app turns them into its own output: the API maps each kind to an HTTP status in one handler
(api/errors.py), the CLI prints the message."""

from typing import Any


class CCBenchError(Exception):
    """A failure with a message meant for the user. `code` is its machine-readable kind."""

    code = "internal_error"

    def __init__(self, message: str, *, errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or []

    def body(self) -> dict[str, Any]:
        """{"error": code, "message": ..., "errors": [{"field", "reason"}, ...]}"""
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.errors:
            body["errors"] = self.errors
        return body


class Unauthorized(CCBenchError):
    code = "unauthorized"


class Forbidden(CCBenchError):
    """The caller is known but may not do this: a token without the scope, or a resource
    another team shared read-only."""

    code = "forbidden"


class NotFound(CCBenchError):
    code = "not_found"


class Conflict(CCBenchError):
    code = "conflict"


class ValidationFailed(CCBenchError):
    """Bad input: `errors` lists {"field": "flows.1.algorithm", "reason": "..."}."""

    code = "validation_error"

    @classmethod
    def of(cls, errors: list[dict[str, str]], what: str = "invalid request") -> "ValidationFailed":
        """One error listing every field: its message summarises the first five."""
        summary = "; ".join(f"{e['field']}: {e['reason']}" for e in errors[:5])
        return cls(f"{what}: {summary}", errors=errors)

    @classmethod
    def field(cls, field: str, reason: str) -> "ValidationFailed":
        return cls.of([{"field": field, "reason": reason}])

"""The FastAPI application."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import RedirectResponse

from api.campaigns.endpoints import router as campaigns_router
from api.compare.endpoints import router as compare_router
from api.docs import install_docs
from api.errors import errors_as_json, install_error_handlers
from api.experiments.endpoints import router as experiments_router
from api.hosts.endpoints import router as hosts_router
from api.internal.endpoints import router as internal_router
from api.limits import BodyLimit
from api.runs.endpoints import router as runs_router
from api.teams.endpoints import router as teams_router
from api.web.pages import install_page_handlers
from api.web.pages import router as pages_router
from ccbench.settings import private_files
from ccbench.version import CCBENCH_VERSION
from schemas.jsonschema import with_units


@asynccontextmanager
async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
    private_files()  # the server's logs and files are owner-only
    yield


def create_app() -> FastAPI:
    app = FastAPI(
        lifespan=lifespan,
        docs_url=None,  # served from local assets: api/docs.py
        redoc_url=None,
        title="ccbench",
        version=CCBENCH_VERSION,
        description="Congestion-control experiment orchestration: submit experiment matrices, "
        "follow their runs, read their reports.",
    )
    install_error_handlers(app)
    app.add_middleware(BodyLimit)
    app.include_router(teams_router)
    app.include_router(experiments_router)
    app.include_router(runs_router)
    app.include_router(compare_router)
    app.include_router(hosts_router)
    app.include_router(campaigns_router)
    app.include_router(internal_router)
    app.include_router(pages_router)
    install_page_handlers(app)
    install_docs(app)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui/experiments", status_code=303)

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": CCBENCH_VERSION}

    def openapi() -> dict[str, Any]:
        """FastAPI's document, with units and bounds of quantities as schemas/json has them."""
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            app.openapi_schema = errors_as_json(with_units(document))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


app = create_app()

"""The API's documentation pages, /docs (Swagger UI) and /redoc, with their scripts and styles
served by the API itself from the `fastapi-offline` package (which ships the Swagger UI and
ReDoc distributions): they render without Internet access and fetch nothing elsewhere."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from ccbench.errors import NotFound

ASSETS = frozenset({"swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png"})
PREFIX = "/docs-assets"


def asset_path(name: str) -> Path:
    if name not in ASSETS:
        raise NotFound(f"no documentation asset {name!r}")
    return Path(str(resources.files("fastapi_offline") / "static" / name))


def install_docs(app: FastAPI) -> None:
    title = f"{app.title} API"

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=title,
            swagger_js_url=f"{PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{PREFIX}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url="/openapi.json",
            title=title,
            redoc_js_url=f"{PREFIX}/redoc.standalone.js",
            redoc_favicon_url=f"{PREFIX}/favicon.png",
            with_google_fonts=False,
        )

    @app.get(PREFIX + "/{name}", include_in_schema=False)
    def asset(name: str) -> FileResponse:
        return FileResponse(asset_path(name), headers={"Cache-Control": "max-age=86400"})

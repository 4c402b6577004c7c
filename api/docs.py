"""The API's documentation pages, /docs (Swagger UI) and /redoc, with their scripts and styles
served by the API itself from the `fastapi-offline` package (which ships the Swagger UI and
ReDoc distributions): they render without Internet access and fetch nothing elsewhere — a
Content-Security-Policy lets them load from this origin only, and ReDoc's one remote image
(the Redocly logo beside "API docs by Redocly") is replaced by an empty inline image."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, Response

from ccbench.errors import NotFound

ASSETS = frozenset({"swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png"})
PREFIX = "/docs-assets"
REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
EMPTY_IMAGE = b"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"
# Both pages start their viewer with an inline script; ReDoc runs its search in a blob worker.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self' 'unsafe-inline'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; worker-src 'self' blob:; "
    "connect-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}


def asset_path(name: str) -> Path:
    if name not in ASSETS:
        raise NotFound(f"no documentation asset {name!r}")
    return Path(str(resources.files("fastapi_offline") / "static" / name))


@functools.cache
def redoc_script() -> bytes:
    return asset_path("redoc.standalone.js").read_bytes().replace(REDOC_LOGO, EMPTY_IMAGE)


def install_docs(app: FastAPI) -> None:
    title = f"{app.title} API"

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=title,
            swagger_js_url=f"{PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{PREFIX}/favicon.png",
        )
        page.headers.update(HEADERS)
        return page

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        page = get_redoc_html(
            openapi_url="/openapi.json",
            title=title,
            redoc_js_url=f"{PREFIX}/redoc.standalone.js",
            redoc_favicon_url=f"{PREFIX}/favicon.png",
            with_google_fonts=False,
        )
        page.headers.update(HEADERS)
        return page

    @app.get(PREFIX + "/{name}", include_in_schema=False)
    def asset(name: str) -> Response:
        headers = {"Cache-Control": "max-age=86400", **HEADERS}
        if name == "redoc.standalone.js":
            return Response(redoc_script(), media_type="text/javascript", headers=headers)
        return FileResponse(asset_path(name), headers=headers)

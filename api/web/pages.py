"""Result pages for browsers: the experiment list, an experiment's report with its matrix
comparison, a run's report with its figures, and campaigns with their results over time
(figures drawn by plotly.js from the same figure descriptions the CLI's static images use).

Pages authenticate with the team's API token, given once on /ui/login and kept in an HttpOnly
cookie; they read the same services as the JSON API, so the two cannot disagree."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session

from api.campaigns import service as campaigns
from api.campaigns.report import build_campaign_report
from api.deps import DbSession, get_session
from api.errors import status_of
from api.experiments import repository, service
from api.experiments.export import compare
from api.experiments.report import build_experiment_report
from api.experiments.schemas import PAGE_MAX, RunSummary
from api.runs import service as runs
from ccbench.db.models import Team
from ccbench.errors import CCBenchError, NotFound
from ccbench.plots.campaign import campaign_figure_data
from ccbench.plots.matrix import (
    box_figure_data,
    comparison_figure_data,
    matrix_subtitle,
    scheme_figure_data,
)
from ccbench.plots.run import BIN_CHOICES, parse_bin, run_figure_data
from ccbench.plots.web import plotly_figure
from ccbench.teams import authenticate
from ccbench.version import CCBENCH_VERSION
from schemas import AppliedConditions
from schemas.limits import NAME_MAX
from schemas.metrics import (
    KEY_METRICS,
    METRICS,
    display_unit,
    format_quantity,
    heading,
    metrics_of,
)

COOKIE = "ccbench_token"
HERE = Path(__file__).parent
STATIC = HERE / "static"
templates = Jinja2Templates(directory=HERE / "templates")
templates.env.globals["version"] = CCBENCH_VERSION
templates.env.filters["quoted"] = lambda value: quote(str(value), safe="")  # query values
# Metrics (schemas/metrics.py): a column title with the unit shown, and the factor to show a
# value in that unit.
templates.env.filters["heading"] = heading
templates.env.filters["factor"] = lambda metric: display_unit(metric.unit)[1]
# A single value with its unit and SI prefix: "9.61 Mbit/s".
templates.env.filters["with_unit"] = format_quantity
templates.env.globals.update(
    key_metrics=KEY_METRICS,
    flow_metrics=metrics_of("flow"),
    aggregate_metrics=metrics_of("aggregate"),
)
# Scripts only from our own origin (no inline script: figure data travels as JSON elements).
# Plotly sets inline styles, hence 'unsafe-inline' for styles only.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}

router = APIRouter(prefix="/ui", include_in_schema=False)


class LoginRequired(Exception):
    def __init__(self, next_path: str) -> None:
        self.next_path = next_path


def page_team(request: Request, session: Annotated[Session, Depends(get_session)]) -> Team:
    token = request.cookies.get(COOKIE)
    team = authenticate(session, token) if token else None
    if team is None:
        query = f"?{request.url.query}" if request.url.query else ""
        raise LoginRequired(request.url.path + query)
    return team


PageTeam = Annotated[Team, Depends(page_team)]


def _render(request: Request, template: str, status_code: int = 200, **context: Any) -> Response:
    response = templates.TemplateResponse(request, template, context, status_code=status_code)
    response.headers.update(SECURITY_HEADERS)
    return response


def _figure_json(figure: dict[str, Any]) -> str:
    # Inside <script type="application/json">: "</" must not end the element early.
    return json.dumps(figure, allow_nan=False, default=str).replace("</", "<\\/")


def _safe_next(path: str | None) -> str:
    """Only same-site paths under /ui: a login link must not redirect elsewhere."""
    return path if path and path.startswith("/ui/") and not path.startswith("//") else "/ui/"


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str | None = None) -> Response:
    return _render(request, "login.html", next=_safe_next(next), error=None)


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request, session: DbSession) -> Response:
    form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
    token = form.get("token", "").strip()
    next_path = _safe_next(form.get("next"))
    if not token or authenticate(session, token) is None:
        reason = "token: missing" if not token else "token: invalid or revoked"
        return _render(request, "login.html", 401, next=next_path, error=reason)
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/ui")
    return response


@router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(COOKIE, path="/ui")
    return response


@router.get("/static/{name}")
def static(name: str) -> Response:
    if name == "plotly.min.js":
        path = Path(str(resources.files("plotly") / "package_data" / "plotly.min.js"))
    elif name in {"ccbench.js", "ccbench.css"}:
        path = STATIC / name
    else:
        raise NotFound(f"no static file {name!r}")
    return FileResponse(path, headers={"Cache-Control": "max-age=3600", **SECURITY_HEADERS})


@router.get("/", response_class=HTMLResponse)
def index() -> Response:
    return RedirectResponse("/ui/experiments", status_code=303)


@router.get("/experiments", response_class=HTMLResponse)
def experiments_page(
    request: Request,
    session: DbSession,
    team: PageTeam,
    status: Annotated[str | None, Query(max_length=16)] = None,
    name: Annotated[str | None, Query(max_length=NAME_MAX)] = None,
    page: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 1,
) -> Response:
    page_size = 50
    items, total = repository.list_for_team(
        session, team.id, status=status or None, name=name or None, tag=None,
        offset=(page - 1) * page_size, limit=page_size,
    )  # fmt: skip
    return _render(
        request,
        "experiments.html",
        team=team,
        experiments=items,
        total=total,
        page=page,
        pages=max(1, -(-total // page_size)),
        status=status or "",
        name=name or "",
    )


@router.get("/experiments/{experiment_id}", response_class=HTMLResponse)
def experiment_page(
    request: Request,
    experiment_id: str,
    session: DbSession,
    team: PageTeam,
    metric: str = "utilization",
    x: str | None = None,
    by: str | None = None,
) -> Response:
    experiment = service.get_experiment(session, team, experiment_id)
    report = build_experiment_report(session, experiment)
    axes = report.axes
    x = x or (axes[0] if axes else None)
    by = by if by is not None else (axes[1] if len(axes) > 1 else None)
    by = by or None
    figures: list[str] = []
    error, status_code = None, 200
    if x is not None:
        report_json = report.model_dump(mode="json")
        subtitle = matrix_subtitle(experiment.submission)
        try:
            comparison = compare(report, metric, x, by).model_dump(mode="json")
            drawn = [
                comparison_figure_data(comparison, report_json, subtitle),
                box_figure_data(report_json, metric, x, by, subtitle),
                *scheme_figure_data(report_json, subtitle),
            ]
            figures = [_figure_json(plotly_figure(f)) for f in drawn if f.has_data()]
        except CCBenchError as exc:
            error, status_code = exc.message, status_of(exc)
    runs = [RunSummary.model_validate(r, from_attributes=True) for r in repository.runs_of(
        session, experiment.id)]  # fmt: skip
    return _render(
        request,
        "experiment.html",
        status_code,
        team=team,
        experiment=experiment,
        report=report,
        runs=runs,
        reports={r.run_id: r for r in report.runs},
        status_counts=repository.status_counts(session, experiment.id),
        metrics=metrics_of("aggregate"),
        metric=metric,
        x=x,
        by=by,
        figures=figures,
        error=error,
    )


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(
    request: Request,
    run_id: str,
    session: DbSession,
    team: PageTeam,
    bin: Annotated[str | None, Query(max_length=32)] = None,  # noqa: A002
) -> Response:
    detail = runs.run_detail(session, team, run_id).model_dump(mode="json")
    figures: list[str] = []
    error, status_code = None, 200
    try:
        figures = [_figure_json(plotly_figure(f)) for f in run_figure_data(detail, parse_bin(bin))]
    except CCBenchError as exc:
        error, status_code = exc.message, status_of(exc)
    summary = detail["aggregate"] or {}
    return _render(
        request,
        "run.html",
        status_code,
        team=team,
        run=detail,
        figures=figures,
        error=error,
        bin=bin or "rtt",
        bins=BIN_CHOICES,
        checks=summary.get("checks") or [],
        aggregate=summary.get("aggregate") or {},
        applied=_applied_rows(summary.get("applied") or {}),
        has_state=any(k.endswith(".cc_state") for k in detail["series"]),
    )


@router.get("/campaigns", response_class=HTMLResponse)
def campaigns_page(
    request: Request,
    session: DbSession,
    team: PageTeam,
    page: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 1,
) -> Response:
    page_size = 50
    items, total = campaigns.list_campaigns(session, team, None, (page - 1) * page_size,
                                            page_size)  # fmt: skip
    return _render(request, "campaigns.html", team=team, campaigns=items, total=total, page=page,
                   pages=max(1, -(-total // page_size)))  # fmt: skip


@router.get("/campaigns/{campaign_id}", response_class=HTMLResponse)
def campaign_page(
    request: Request,
    campaign_id: str,
    session: DbSession,
    team: PageTeam,
    metric: Annotated[str, Query(max_length=64)] = "goodput_bps",
    by: Annotated[str | None, Query(max_length=200)] = None,
    page: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 1,
) -> Response:
    campaign = campaigns.get_campaign(session, team, campaign_id)
    figures, error, status_code, report = [], None, 200, None
    try:
        report = build_campaign_report(session, campaign, metric, by or None)
        figures = [_figure_json(plotly_figure(f))
                   for f in campaign_figure_data(report.model_dump(mode="json"))]  # fmt: skip
    except CCBenchError as exc:
        error, status_code = exc.message, status_of(exc)
    page_size = 50
    occurrences, total = campaigns.occurrences_page(session, campaign, None,
                                                    (page - 1) * page_size, page_size)  # fmt: skip
    return _render(
        request,
        "campaign.html",
        status_code,
        team=team,
        campaign=campaigns.detail(session, campaign),
        report=report,
        figures=figures,
        error=error,
        metrics=metrics_of("aggregate"),
        metric=metric,
        metric_info=METRICS.get(metric),
        by=by or "",
        occurrences=occurrences,
        total=total,
        page=page,
        pages=max(1, -(-total // page_size)),
    )


def _applied_rows(applied: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label, value with its unit, description) of each applied condition the run has, as
    the report model (schemas/report.py) names and measures it."""
    rows = []
    for name, info in AppliedConditions.model_fields.items():
        value = applied.get(name)
        if value is None:
            continue
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        unit = extra.get("x-unit")
        shown = format_quantity(value, str(unit)) if isinstance(unit, str) else str(value)
        rows.append((info.title or name, shown, f"{name}: {info.description or ''}"))
    return rows


def install_page_handlers(app: FastAPI) -> None:
    """Pages answer a missing login with a redirect and other errors with an HTML page."""

    @app.exception_handler(LoginRequired)
    async def _login(_request: Request, exc: LoginRequired) -> Response:
        return RedirectResponse(f"/ui/login?next={quote(exc.next_path)}", status_code=303)

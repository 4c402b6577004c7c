"""Result pages for browsers: the experiment browser (every experiment the team may read:
its own, shared with it, public), an experiment's report with its matrix comparison, its
annotations, shares and "run again", a run's report with its spec, checks, log, files,
provenance and bundle, comparisons across experiments, and campaigns with their results over
time (figures drawn by plotly.js from the same figure descriptions the CLI's static images use).

Pages authenticate with the team's API token, given once on /ui/login and kept in an HttpOnly
cookie (SameSite=Strict, path /ui); they call the same services as the JSON API, so the two
cannot disagree, and the token's scope bounds what their forms may do. Downloads (exports, run
files, bundles) have /ui addresses too, so the page's cookie is all they need."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time, timedelta
from importlib import resources
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, quote, urlencode

import yaml
from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError as PydanticValidationError
from sqlalchemy.orm import Session

from api.campaigns import service as campaigns
from api.campaigns.report import build_campaign_report
from api.campaigns.report import export_csv as campaign_csv
from api.campaigns.report import export_parquet as campaign_parquet
from api.compare import service as comparisons
from api.compare.schemas import Scope as CompareScope
from api.deps import DbSession, get_session
from api.errors import status_of
from api.experiments import repository, service
from api.experiments.export import Table, compare, export_csv, export_parquet
from api.experiments.report import build_experiment_report
from api.experiments.schemas import PAGE_MAX, ExperimentPatch
from api.runs import service as runs
from api.runs.endpoints import bundle_response
from api.runs.repository import series_of_experiment
from ccbench import browse
from ccbench import experiments as submissions
from ccbench.access import Access, Scope
from ccbench.db.models import ApiToken
from ccbench.dispatch import dispatch_quietly
from ccbench.errors import CCBenchError, NotFound, ValidationFailed
from ccbench.plots.campaign import campaign_figure_data
from ccbench.plots.matrix import (
    box_figure_data,
    comparison_figure_data,
    cross_comparison_figure_data,
    matrix_subtitle,
    scheme_figure_data,
)
from ccbench.plots.run import BIN_CHOICES, parse_bin, run_figure_data
from ccbench.plots.web import plotly_figure
from ccbench.runstate import ExperimentStatus
from ccbench.settings import get_settings
from ccbench.teams import authenticate, require_scope
from ccbench.version import CCBENCH_VERSION
from schemas import Algorithm, AppliedConditions, errors_of
from schemas.limits import NAME_MAX
from schemas.metrics import (
    DIMENSIONLESS,
    KEY_METRICS,
    METRICS,
    display_unit,
    format_quantity,
    heading,
    metrics_of,
    unit_of_field,
)

COOKIE = "ccbench_token"
HERE = Path(__file__).parent
STATIC = HERE / "static"
PAGE_SIZE = 50
LOG_TAIL_LINES = 200
templates = Jinja2Templates(directory=HERE / "templates")
templates.env.globals["version"] = CCBENCH_VERSION
templates.env.filters["quoted"] = lambda value: quote(str(value), safe="")  # query values
# Metrics (schemas/metrics.py): a column title with the unit shown, and the factor to show a
# value in that unit.
templates.env.filters["heading"] = heading
templates.env.filters["factor"] = lambda metric: display_unit(metric.unit)[1]
# A single value with its unit and SI prefix: "9.61 Mbit/s" (a report field's unit from its
# name's suffix, `sandbox_s`; dimensionless without one).
templates.env.filters["with_unit"] = format_quantity
templates.env.filters["field_unit"] = lambda name: unit_of_field(name) or DIMENSIONLESS
templates.env.filters["short"] = browse.short_id
templates.env.filters["pretty"] = lambda v: json.dumps(v, indent=2, sort_keys=True, default=str)
templates.env.globals.update(
    key_metrics=KEY_METRICS,
    flow_metrics=metrics_of("flow"),
    aggregate_metrics=metrics_of("aggregate"),
    metrics_by_name=METRICS,
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


def page_token(request: Request, session: Annotated[Session, Depends(get_session)]) -> ApiToken:
    secret = request.cookies.get(COOKIE)
    token = authenticate(session, secret) if secret else None
    if token is None:
        query = f"?{request.url.query}" if request.url.query else ""
        raise LoginRequired(request.url.path + query)
    return token


PageToken = Annotated[ApiToken, Depends(page_token)]


def _render(request: Request, template: str, status_code: int = 200, **context: Any) -> Response:
    token: ApiToken | None = context.pop("token", None)
    if token is not None:
        context.update(team=token.team, scope=Scope(token.scope),
                       can_write=Scope(token.scope).allows(Scope.write),
                       can_admin=Scope(token.scope).allows(Scope.admin))  # fmt: skip
    response = templates.TemplateResponse(request, template, context, status_code=status_code)
    response.headers.update(SECURITY_HEADERS)
    return response


def _figure_json(figure: dict[str, Any]) -> str:
    # Inside <script type="application/json">: "</" must not end the element early.
    return json.dumps(figure, allow_nan=False, default=str).replace("</", "<\\/")


def _safe_next(path: str | None) -> str:
    """Only same-site paths under /ui: a login link must not redirect elsewhere."""
    return path if path and path.startswith("/ui/") and not path.startswith("//") else "/ui/"


async def _form(request: Request) -> dict[str, list[str]]:
    return parse_qs((await request.body()).decode(), keep_blank_values=True)


def _one(form: dict[str, list[str]], name: str) -> str:
    return (form.get(name) or [""])[0]


def _back(form: dict[str, list[str]], default: str) -> RedirectResponse:
    return RedirectResponse(_safe_next(_one(form, "next") or default), status_code=303)


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str | None = None) -> Response:
    return _render(request, "login.html", next=_safe_next(next), error=None)


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request, session: DbSession) -> Response:
    form = await _form(request)
    token = _one(form, "token").strip()
    next_path = _safe_next(_one(form, "next"))
    if not token or authenticate(session, token) is None:
        reason = "token: missing" if not token else "token: invalid, revoked or expired"
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


# --- the experiment browser ------------------------------------------------------------------


def _day(text: str, field: str) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValidationFailed.field(field, f"{text!r} is not a date (YYYY-MM-DD)") from None


def _utc(day: date | None, days: int = 0) -> datetime | None:
    return None if day is None else datetime.combine(day + timedelta(days=days), time(), UTC)


@router.get("/experiments", response_class=HTMLResponse)
def experiments_page(
    request: Request,
    session: DbSession,
    token: PageToken,
    q: Annotated[str, Query(max_length=NAME_MAX)] = "",
    tag: Annotated[str, Query(max_length=NAME_MAX)] = "",
    algorithm: Annotated[str, Query(max_length=32)] = "",
    param: Annotated[str, Query(max_length=400)] = "",
    status: Annotated[str, Query(max_length=16)] = "",
    created_from: Annotated[str, Query(alias="from", max_length=10)] = "",
    created_to: Annotated[str, Query(alias="to", max_length=10)] = "",
    team_name: Annotated[str, Query(alias="team", max_length=NAME_MAX)] = "",
    access: Annotated[str, Query(max_length=8)] = "",
    pinned: Annotated[str, Query(max_length=5)] = "",
    sort: Annotated[str, Query(max_length=40)] = "",
    metric: Annotated[list[str], Query(max_length=40)] = [],  # noqa: B006
    page: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 1,
) -> Response:
    team = token.team
    errors = []
    if status and status not in [s.value for s in ExperimentStatus]:
        errors.append({"field": "status", "reason": f"unknown status {status!r}"})
    if access and access not in [a.value for a in Access]:
        errors.append({"field": "access", "reason": f"unknown access {access!r}"})
    shown = [m for m in metric if m in browse.AGGREGATE_METRICS] or [m.name for m in KEY_METRICS]
    if errors:
        raise ValidationFailed.of(errors)
    filters = browse.Filters(
        text=q or None,
        tags=[tag] if tag else [],
        algorithms=[algorithm] if algorithm else [],
        params=[browse.ParamFilter.parse(param, "param")] if param else [],
        statuses=[status] if status else [],
        created_after=_utc(_day(created_from, "from")),
        created_before=_utc(_day(created_to, "to"), days=1),
        team=team_name or None,
        access=Access(access) if access else None,
        pinned=True if pinned == "yes" else None,
    )
    key, descending = (sort[1:], True) if sort.startswith("-") else (sort, False)
    items, total = browse.list_experiments(
        session, team.id, filters, sort=key or None, descending=descending,
        offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE,
    )  # fmt: skip
    kept = [(k, v) for k, v in request.query_params.multi_items() if k not in ("page", "sort")]

    def link(**changes: Any) -> str:
        params = [(k, v) for k, v in kept if k not in changes]
        params += [(k, str(v)) for k, v in changes.items() if v not in (None, "")]
        return "?" + urlencode(params)

    def sort_link(column: str) -> str:
        """Ascending first (newest first for created), descending on the second click."""
        first = f"-{column}" if column in ("created", *browse.AGGREGATE_METRICS) else column
        return link(sort=(column if sort == first and first.startswith("-") else
                          f"-{column}" if sort == first else first))  # fmt: skip

    return _render(
        request,
        "experiments.html",
        token=token,
        experiments=[service.summary(i) for i in items],
        total=total,
        page=page,
        pages=max(1, -(-total // PAGE_SIZE)),
        link=link,
        sort_link=sort_link,
        sort=sort,
        shown_metrics=[METRICS[m] for m in shown],
        algorithms=[a.value for a in Algorithm],
        statuses=[s.value for s in ExperimentStatus],
        accesses=[a.value for a in Access],
        f={
            "q": q,
            "tag": tag,
            "algorithm": algorithm,
            "param": param,
            "status": status,
            "from": created_from,
            "to": created_to,
            "team": team_name,
            "access": access,
            "pinned": pinned,
        },  # fmt: skip
    )


# --- one experiment --------------------------------------------------------------------------


@router.get("/experiments/{experiment_id}", response_class=HTMLResponse)
def experiment_page(
    request: Request,
    experiment_id: str,
    session: DbSession,
    token: PageToken,
    metric: str = "utilization",
    x: str | None = None,
    by: str | None = None,
) -> Response:
    found = service.find(session, token.team, experiment_id)
    experiment = found.experiment
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
    detail = service.detail(session, token.team, found)
    shares = service.shares(session, token.team, experiment.id) if found.access == "own" else None
    source = (
        browse.resolve(session, token.team.id, experiment.source_experiment_id)
        if experiment.source_experiment_id
        else None
    )
    return _render(
        request,
        "experiment.html",
        status_code,
        token=token,
        experiment=detail,
        report=report,
        runs=detail.runs,
        reports={r.run_id: r for r in report.runs},
        shares=shares,
        source=service.summary(source) if source else None,
        metrics=metrics_of("aggregate"),
        metric=metric,
        x=x,
        by=by,
        figures=figures,
        error=error,
        submission_yaml=yaml.safe_dump(
            submissions.stored_submission(
                experiment, list(repository.runs_of(session, experiment.id))[:2]
            ),
            sort_keys=False,
        ),  # fmt: skip
    )


@router.post("/experiments/{experiment_id}/annotate")
async def annotate(
    request: Request, experiment_id: str, session: DbSession, token: PageToken
) -> Response:
    require_scope(token, Scope.write)
    form = await _form(request)
    tags = [t.strip() for t in _one(form, "tags").split(",") if t.strip()]
    try:
        patch = ExperimentPatch(name=_one(form, "name") or None,
                                description=_one(form, "description"),
                                notes=_one(form, "notes"), tags=tags)  # fmt: skip
    except PydanticValidationError as exc:
        errors = [{"field": e["loc"], "reason": e["msg"]} for e in errors_of(exc)]
        raise ValidationFailed.of(errors, "invalid annotations") from exc
    service.annotate(session, token.team, experiment_id, patch)
    session.commit()
    return _back(form, f"/ui/experiments/{experiment_id}")


@router.post("/experiments/{experiment_id}/pin")
async def pin(
    request: Request, experiment_id: str, session: DbSession, token: PageToken
) -> Response:
    require_scope(token, Scope.write)
    form = await _form(request)
    service.pin(session, token.team, experiment_id, _one(form, "pinned") != "no")
    session.commit()
    return _back(form, f"/ui/experiments/{experiment_id}")


@router.post("/experiments/{experiment_id}/shares")
async def share(
    request: Request, experiment_id: str, session: DbSession, token: PageToken
) -> Response:
    require_scope(token, Scope.admin)
    form = await _form(request)
    teams = [t.strip() for t in _one(form, "teams").split(",") if t.strip()]
    service.share(session, token.team, experiment_id, public=_one(form, "public") == "yes",
                  teams=teams)  # fmt: skip
    session.commit()
    return _back(form, f"/ui/experiments/{experiment_id}")


@router.post("/experiments/{experiment_id}/rerun")
async def rerun(
    request: Request, experiment_id: str, session: DbSession, token: PageToken
) -> Response:
    require_scope(token, Scope.write)
    form = await _form(request)
    source = service.get_experiment(session, token.team, experiment_id)
    text = _one(form, "edits").strip()
    try:
        edits = yaml.safe_load(text) if text else None
    except yaml.YAMLError as exc:
        raise ValidationFailed.field("edits", f"not YAML or JSON: {exc}") from exc
    if edits is not None and not isinstance(edits, dict):
        raise ValidationFailed.field("edits", "a mapping of the fields to change")
    experiment, _ = submissions.rerun(session, token.team, source, edits,
                                      run_limit=get_settings().matrix_run_limit)  # fmt: skip
    session.commit()
    dispatch_quietly()
    return RedirectResponse(f"/ui/experiments/{experiment.id}", status_code=303)


@router.post("/experiments/{experiment_id}/cancel")
async def cancel(
    request: Request, experiment_id: str, session: DbSession, token: PageToken
) -> Response:
    require_scope(token, Scope.write)
    form = await _form(request)
    service.cancel_experiment(session, token.team, experiment_id)
    session.commit()
    return _back(form, f"/ui/experiments/{experiment_id}")


@router.get("/experiments/{experiment_id}/export.{fmt}")
def export(
    experiment_id: str, fmt: str, session: DbSession, token: PageToken, table: Table = "runs"
) -> Response:
    """The API's exports (GET /v1/experiments/{id}/export.csv|parquet) for the page's links."""
    experiment = service.get_experiment(session, token.team, experiment_id)
    report = build_experiment_report(session, experiment)
    series = series_of_experiment(session, experiment.id) if table == "series" else None
    name = f"{browse.short_id(experiment.id)}-{table}.{fmt}"
    disposition = {"Content-Disposition": f'attachment; filename="{name}"'}
    if fmt == "csv":
        return Response(export_csv(report, table, series), media_type="text/csv",
                        headers=disposition)  # fmt: skip
    if fmt == "parquet":
        data = export_parquet(report, table, series)
        return Response(data, media_type="application/vnd.apache.parquet", headers=disposition)
    raise NotFound(f"no export format {fmt!r} (csv or parquet)")


# --- one run ---------------------------------------------------------------------------------


def _provenance_facts(provenance: dict[str, Any]) -> list[tuple[str, str]]:
    """The facts of a run's provenance a reader looks for first."""
    software = provenance.get("software") or {}
    ccbench = software.get("ccbench") or {}
    facts = [
        ("ccbench", " ".join(str(v) for v in (
            ccbench.get("version") or provenance.get("ccbench_version"),
            f"commit {ccbench['commit'][:12]}" if ccbench.get("commit") else None,
            "(modified)" if ccbench.get("dirty") else None) if v)),
        ("kernel", provenance.get("kernel") or (software.get("kernel") or {}).get("release")),
        ("python", (software.get("python") or {}).get("version")),
        ("agents", ", ".join(f"{v}" for v in (provenance.get("agent_versions") or {}).values()
                             if isinstance(v, str))),
        ("link mechanism", provenance.get("link_mechanism")),
        ("delay mechanism", provenance.get("delay_mechanism")),
        ("worker", software.get("host")),
    ]  # fmt: skip
    return [(name, str(value)) for name, value in facts if value]


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(
    request: Request,
    run_id: str,
    session: DbSession,
    token: PageToken,
    bin: Annotated[str | None, Query(max_length=32)] = None,  # noqa: A002
) -> Response:
    run = runs.get_run(session, token.team, run_id)
    detail = runs.run_detail(session, token.team, run.id).model_dump(mode="json")
    found = browse.resolve(session, token.team.id, run.experiment_id)
    figures: list[str] = []
    error, status_code = None, 200
    try:
        figures = [_figure_json(plotly_figure(f)) for f in run_figure_data(detail, parse_bin(bin))]
    except CCBenchError as exc:
        error, status_code = exc.message, status_of(exc)
    try:
        log = runs.run_log(session, token.team, run.id).splitlines()
    except NotFound:
        log = []
    summary = detail["aggregate"] or {}
    return _render(
        request,
        "run.html",
        status_code,
        token=token,
        run=detail,
        experiment=service.summary(found),
        figures=figures,
        error=error,
        bin=bin or "rtt",
        bins=BIN_CHOICES,
        checks=summary.get("checks") or [],
        aggregate=summary.get("aggregate") or {},
        applied=_applied_rows(summary.get("applied") or {}),
        has_state=any(k.endswith(".cc_state") for k in detail["series"]),
        log_tail=log[-LOG_TAIL_LINES:],
        log_lines=len(log),
        files=runs.run_files(session, token.team, run.id),
        facts=_provenance_facts(detail["provenance"]),
    )


@router.get("/runs/{run_id}/bundle")
def run_bundle(run_id: str, session: DbSession, token: PageToken) -> Response:
    return bundle_response(*runs.bundle(session, token.team, run_id))


@router.get("/runs/{run_id}/log", response_class=PlainTextResponse)
def run_log(run_id: str, session: DbSession, token: PageToken) -> Response:
    return PlainTextResponse(runs.run_log(session, token.team, run_id))


@router.get("/runs/{run_id}/files/{name}")
def run_file(run_id: str, name: str, session: DbSession, token: PageToken) -> Response:
    path = runs.run_file(session, token.team, run_id, name)
    return FileResponse(path, media_type="application/octet-stream", filename=path.name)


# --- comparisons across experiments ----------------------------------------------------------

# Spec fields offered as x / by besides the compared experiments' own axes.
COMMON_PATHS = (
    "topology.bottleneck.rate",
    "topology.bottleneck.delay",
    "topology.bottleneck.buffer",
    "flows[*].algorithm",
    "duration",
)


@router.get("/compare", response_class=HTMLResponse)
def compare_page(
    request: Request,
    session: DbSession,
    token: PageToken,
    experiment: Annotated[list[str], Query(max_length=32)] = [],  # noqa: B006
    point: Annotated[list[str], Query(max_length=40)] = [],  # noqa: B006
    run: Annotated[list[str], Query(max_length=32)] = [],  # noqa: B006
    metric: Annotated[str, Query(max_length=64)] = "utilization",
    x: Annotated[str, Query(max_length=200)] = "",
    by: Annotated[str | None, Query(max_length=200)] = None,
    scope: Annotated[CompareScope, Query()] = "aggregate",
) -> Response:
    """The same comparison as GET /v1/compare, as a figure and a table; its address is its
    permalink."""
    selection = comparisons.Selection(experiments=experiment, runs=run, points=point)
    axes: list[str] = []
    for ref in experiment:
        for axis in browse.resolve(session, token.team.id, ref).experiment.axes:
            if axis not in axes:
                axes.append(axis)
    chosen_x = x or (axes[0] if axes else "experiment")
    result = comparisons.compare(session, token.team, selection, metric=metric, x=chosen_x,
                                 by=by, scope=scope)  # fmt: skip
    data = result.model_dump(mode="json")
    cross_figure = _figure_json(plotly_figure(cross_comparison_figure_data(data)))
    return _render(
        request,
        "compare.html",
        token=token,
        comparison=result,
        cross_figure=cross_figure,
        paths=[*axes, *(p for p in COMMON_PATHS if p not in axes)],
        metrics=metrics_of("aggregate" if scope == "aggregate" else "flow"),
        selection={"experiment": experiment, "point": point, "run": run},
        x=chosen_x,
        by=result.by or "",
        scope=scope,
    )


@router.get("/campaigns", response_class=HTMLResponse)
def campaigns_page(
    request: Request,
    session: DbSession,
    token: PageToken,
    page: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 1,
) -> Response:
    page_size = 50
    items, total = campaigns.list_campaigns(session, token.team, None, (page - 1) * page_size,
                                            page_size)  # fmt: skip
    listed = [(c, campaigns.summary(session, token.team, c)) for c in items]
    return _render(request, "campaigns.html", token=token, campaigns=listed, total=total,
                   page=page, pages=max(1, -(-total // page_size)))  # fmt: skip


@router.get("/campaigns/{campaign_id}", response_class=HTMLResponse)
def campaign_page(
    request: Request,
    campaign_id: str,
    session: DbSession,
    token: PageToken,
    metric: Annotated[str, Query(max_length=64)] = "goodput_bps",
    by: Annotated[str | None, Query(max_length=200)] = None,
    page: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 1,
) -> Response:
    campaign = campaigns.get_campaign(session, token.team, campaign_id)
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
        token=token,
        campaign=campaigns.detail(session, token.team, campaign),
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


@router.get("/campaigns/{campaign_id}/export.{fmt}")
def campaign_export(campaign_id: str, fmt: str, session: DbSession, token: PageToken) -> Response:
    """The API's campaign exports for the page's links (the page's cookie is all they need)."""
    campaign = campaigns.get_campaign(session, token.team, campaign_id)
    disposition = {
        "Content-Disposition": f'attachment; filename="campaign-{campaign.id[:8]}.{fmt}"'
    }
    if fmt == "csv":
        return Response(campaign_csv(session, campaign), media_type="text/csv",
                        headers=disposition)  # fmt: skip
    if fmt == "parquet":
        data = campaign_parquet(session, campaign)
        return Response(data, media_type="application/vnd.apache.parquet", headers=disposition)
    raise NotFound(f"no export format {fmt!r} (csv or parquet)")


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

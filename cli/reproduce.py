"""`ccbench reproduce SEED`: a seed paper's headline experiments, submitted from its templates
(schemas/examples/seeds/<seed>/), and the paper's claims against what was measured, per figure.
The claims and the quick variant are defined once, in the seed's claims.yaml
(`schemas/reproduce.py`); the evaluation is `ccbench/reproduce.py`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from pydantic import TypeAdapter
from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from ccbench.plots.axes import flow_mix
from ccbench.reproduce import (
    ClaimResult,
    Mode,
    ReproduceError,
    Row,
    Seed,
    Stat,
    covers,
    evaluate,
    load_seed,
    submission,
    tag_of,
    templates_of,
)
from cli.client import Client, ClientError, client
from cli.progress import duration_text, follow
from cli.render import console, print_json, short, table
from schemas.matrix import Submission, expand_submission
from schemas.metrics import METRICS, format_quantity
from schemas.report import ExperimentReport
from schemas.reproduce import SEEDS, Claim, Measure
from schemas.units import parse_duration

PANEL = "Reproductions"
app = typer.Typer()
# Experiments of a template searched (newest first) for one that covers a claim (--report).
SEARCHED = 20
SUBMISSION: TypeAdapter[Any] = TypeAdapter(Submission)
VERDICTS = {
    True: ("holds", "green"),
    False: ("does not hold", "bold red"),
    None: ("not measured", "yellow"),
}


def _seed(value: str) -> str:
    if value not in SEEDS:
        raise typer.BadParameter(f"{value!r} is not a seed: one of {', '.join(SEEDS)}")
    return value


def _seconds(text: str) -> float:
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise typer.BadParameter(f"--duration: {exc}") from exc
    if value < 1:
        raise typer.BadParameter("--duration: a run lasts at least 1s")
    return value


def _load(seed: str) -> Seed:
    try:
        return load_seed(seed)
    except ReproduceError as exc:
        raise ClientError(str(exc)) from exc


@app.command(rich_help_panel=PANEL)
def reproduce(
    seed: Annotated[
        str,
        typer.Argument(
            help="the seed paper: " + ", ".join(SEEDS) + " (docs/references.md names them)",
            callback=_seed,
            metavar="SEED",
            autocompletion=lambda incomplete: [s for s in SEEDS if s.startswith(incomplete)],
            show_default=False,
        ),
    ],
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help="the quick variant: times scaled to the claims file's quick duration, fewer "
            "repetitions, only the matrix points the claims compare",
        ),
    ] = False,
    duration: Annotated[
        str | None,
        typer.Option(
            metavar="TIME",
            help="with --quick: the runs' length instead of the claims file's (e.g. 20s); "
            "every time of the template is scaled to it",
            show_default=False,
        ),
    ] = None,
    repetitions: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=100,
            help="with --quick: repetitions instead of the claims file's",
            show_default=False,
        ),
    ] = None,
    figure: Annotated[
        list[str] | None,
        typer.Option(
            "--figure", "-f", metavar="F", help="only this figure's claims (repeatable): 5, I, ..."
        ),
    ] = None,
    claim: Annotated[
        list[str] | None,
        typer.Option(metavar="ID", help="only this claim (repeatable; ids: --dry-run lists them)"),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option("--wait", help="follow the experiments, then print paper against measured"),
    ] = False,
    report: Annotated[
        bool,
        typer.Option(
            "--report",
            help="submit nothing: print paper against measured from the latest reproductions "
            "(of this mode) already submitted",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="submit nothing: list the claims and the runs it would submit"
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the results as JSON")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="print the results as Markdown tables")
    ] = False,
) -> None:
    """Reproduce a seed paper's headline figures and compare them with its claims.

    Submits the seed's templates (one matrix each, at the paper's parameters; --quick: a
    shortened variant), and with --wait (or later with --report) prints per figure each claim
    of the paper with the measured median ± SIQR over repetitions and whether it holds."""
    loaded = _load(seed)
    mode: Mode = "quick" if quick else "full"
    if (duration is not None or repetitions is not None) and not quick:
        raise typer.BadParameter(
            "--duration and --repetitions shorten the quick variant: add --quick"
        )
    seconds = _seconds(duration) if duration is not None else None
    try:
        claims = loaded.claims_for(figure or (), claim or ())
        documents = {
            f: submission(loaded, f, mode, claims, seconds, repetitions)
            for f in templates_of(claims)
        }
    except ReproduceError as exc:
        raise ClientError(str(exc)) from exc
    out = console()
    if dry_run:
        _print_plan(out, loaded, claims, documents)
        return
    api = client()
    experiments: dict[str, str] = {}
    statuses: dict[str, str] = {}
    if report:
        found = _latest(api, loaded, claims, mode)
    else:
        for file, document in documents.items():
            created = api.post_once("/v1/experiments", document)
            experiments[file] = created["id"]
            out.print(
                f"experiment {created['id']} ({created['name']}): {created['run_count']} run(s) "
                "queued"
            )
        if not wait:
            flags = "".join(
                [" --quick" if quick else ""]
                + [f" --figure {f}" for f in figure or ()]
                + [f" --claim {c}" for c in claim or ()]
            )
            console(stderr=True).print(
                f"once they are done: ccbench reproduce {seed}{flags} --report "
                "(or --wait next time)"
            )
            return
        for file, experiment_id in experiments.items():
            statuses[file] = follow(api, experiment_id, console(stderr=True))
        reports = {file: _report(api, eid) for file, eid in experiments.items()}
        found = {c.id: {f: reports[f] for f in c.templates()} for c in claims}
    results = [evaluate(c, found[c.id], loaded.templates) for c in claims]
    if as_json:
        print_json([_result_json(loaded, r, mode) for r in results])
    elif markdown:
        _print_markdown(out, loaded, results, mode)
    else:
        _print_results(out, loaded, results, mode, figure or (), claim or ())
    if any(status != "done" for status in statuses.values()):
        raise typer.Exit(1)


def _report(api: Client, experiment_id: str) -> ExperimentReport:
    return ExperimentReport.model_validate(api.get(f"/v1/experiments/{experiment_id}/report"))


def _latest(
    api: Client, seed: Seed, claims: list[Claim], mode: Mode
) -> dict[str, dict[str, ExperimentReport | None]]:
    """Per claim and template it reads, the newest reproduction of the template in this mode
    that has runs at every point the claim reads there (None: none has)."""
    reports: dict[str, list[ExperimentReport]] = {}
    for file in templates_of(claims):
        listing = api.get(
            "/v1/experiments",
            params={"tag": tag_of(seed.claims.seed, file, mode), "page_size": SEARCHED},
        )
        reports[file] = [_report(api, item["id"]) for item in listing["items"]]
    return {
        claim.id: {
            file: next(
                (r for r in reports[file] if covers(r, claim, file, seed.templates[file])), None
            )
            for file in claim.templates()
        }
        for claim in claims
    }


def _runs(document: Any) -> tuple[int, float]:
    """Runs of a submission and their total emulated time (s)."""
    points = expand_submission(SUBMISSION.validate_python(document), limit=10**6)
    return len(points), sum(p.spec.duration for p in points)


def _print_plan(out: Console, seed: Seed, claims: list[Claim], documents: dict[str, Any]) -> None:
    out.print(f"seed {seed.claims.seed}: {seed.claims.title} ({seed.claims.paper})")
    grid = table("template", "figures", "runs", "emulated time", right=("runs", "emulated time"))
    total_s = 0.0
    for file, document in documents.items():
        runs, seconds = _runs(document)
        total_s += seconds
        figures = sorted({c.figure for c in claims if file in c.templates()}, key=_figure_key)
        grid.add_row(file, ", ".join(figures), str(runs), duration_text(seconds))
    out.print(Padding(grid, (0, 0, 0, 2), expand=False))
    out.print(f"  total emulated time {duration_text(total_s)} (plus about 1 s a run)")
    for c in claims:
        out.print(f"  {c.id} (Fig. {c.figure}): {c.statement}")


def _figure_key(figure: str) -> tuple[int, str]:
    digits = "".join(ch for ch in figure if ch.isdigit())
    return (int(digits) if digits else 10**6, figure)


def _stat(stat: Stat | float, unit: str) -> str:
    if isinstance(stat, float):
        return format_quantity(stat, unit)
    failed = f", {stat.failed} failed" if stat.failed else ""
    if stat.failed_checks:
        failed += f", {stat.failed_checks} with a failed check"
    if stat.median is None:
        return f"– (n=0{failed})"
    # A spread below the value's last digits is rounding noise (1 ± 5.6e-17): none.
    spread = stat.siqr if stat.siqr and stat.siqr > 1e-9 * abs(stat.median) else 0.0
    return f"{format_quantity(stat.median, unit, spread)} (n={stat.n}{failed})"


def _than(claim: Claim, row: Row) -> str:
    unit = _unit(claim.than if isinstance(claim.than, Measure) else claim.measure)
    factor = "" if claim.factor == 1 else f"{claim.factor:g} × "
    return f"{claim.op} {factor}{_stat(row.than, unit)}"


def _unit(measure: Measure) -> str:
    return METRICS[measure.metric].unit


def _at(row: Row) -> str:
    return " ".join(f"{path}={_short_value(v)}" for path, v in row.at.items()) or "-"


def _short_value(value: Any) -> str:
    """An axis value in a row's `at`: a list of flows by its mix, none for no value (e.g. no
    send jitter), a mapping as compact JSON."""
    if isinstance(value, list):
        return flow_mix(value)
    if value is None:
        return "none"
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _verdict(holds: bool | None) -> Text:
    text, style = VERDICTS[holds]
    return Text(text, style=style)


def _print_results(
    out: Console,
    seed: Seed,
    results: list[ClaimResult],
    mode: str,
    figures: tuple[str, ...] | list[str],
    claim_ids: tuple[str, ...] | list[str],
) -> None:
    out.print(Text(f"seed {seed.claims.seed}: {seed.claims.title} ({mode})", style="bold"))
    by_figure: dict[str, list[ClaimResult]] = {}
    for result in results:
        by_figure.setdefault(result.claim.figure, []).append(result)
    selected = bool(figures or claim_ids)
    for fig in seed.claims.figures:
        chosen = by_figure.get(fig.id, [])
        if selected and not chosen:
            continue
        out.print(Text(f"\nFig. {fig.id}: {fig.title}", style="bold"))
        for note in fig.notes:
            out.print(f"  note: {note}")
        if not chosen:
            out.print("  no claim evaluated (see the notes)")
        for result in chosen:
            claim = result.claim
            where = (
                "experiment " + ", ".join(short(e) for e in result.experiments.values())
                if result.experiments
                else "not run"
            )
            head = Text(f"  {claim.id}: ", style="bold").append(claim.statement)
            out.print(
                head.append(f" ({claim.source}; {where}) → ").append_text(_verdict(result.holds))
            )
            if claim.paper:
                out.print(f"    paper: {claim.paper}")
            if not result.rows:
                continue
            grid = table("at", "measured (median ± SIQR)", "compared with", "ratio", "verdict",
                         right=("ratio",))  # fmt: skip
            for row in result.rows:
                grid.add_row(
                    _at(row),
                    _stat(row.measured, _unit(claim.measure)),
                    _than(claim, row),
                    "–" if row.ratio is None else f"{row.ratio:.3g}",
                    _verdict(row.holds),
                )
            out.print(Padding(grid, (0, 0, 0, 4), expand=False))
    held = sum(1 for r in results if r.holds is True)
    failed = sum(1 for r in results if r.holds is False)
    missing = sum(1 for r in results if r.holds is None)
    out.print(f"\n{held} claim(s) hold, {failed} do not, {missing} not measured")


def _print_markdown(out: Console, seed: Seed, results: list[ClaimResult], mode: str) -> None:
    by_figure: dict[str, list[ClaimResult]] = {}
    for result in results:
        by_figure.setdefault(result.claim.figure, []).append(result)
    for fig in seed.claims.figures:
        chosen = by_figure.get(fig.id, [])
        if not chosen:
            continue
        out.print(f"\n**Fig. {fig.id}** ({mode}): {fig.title}\n")
        for note in fig.notes:
            out.print(f"- {note}")
        if fig.notes:
            out.print("")
        out.print("| claim | at | measured (median ± SIQR, n) | compared with | ratio | verdict |")
        out.print("|---|---|---|---|---|---|")
        for result in chosen:
            claim = result.claim
            paper = f" (paper: {claim.paper})" if claim.paper else ""
            name = f"`{claim.id}`: {claim.statement}{paper}"
            if not result.rows:
                out.print(f"| {name} | | | | | not measured |")
            for i, row in enumerate(result.rows):
                name = name if i == 0 else ""
                ratio = "–" if row.ratio is None else f"{row.ratio:.3g}"
                out.print(
                    f"| {name} | {_at(row)} | {_stat(row.measured, _unit(claim.measure))} | "
                    f"{_than(claim, row)} | {ratio} | {VERDICTS[row.holds][0]} |"
                )


def _stat_json(stat: Stat | float) -> Any:
    if isinstance(stat, float):
        return stat
    return {
        "median": stat.median,
        "siqr": stat.siqr,
        "n": stat.n,
        "failed": stat.failed,
        "failed_checks": stat.failed_checks,
        "unit": stat.unit,
    }


def _result_json(seed: Seed, result: ClaimResult, mode: str) -> dict[str, Any]:
    claim = result.claim
    return {
        "seed": seed.claims.seed,
        "mode": mode,
        "figure": claim.figure,
        "claim": claim.id,
        "statement": claim.statement,
        "template": claim.template,
        "experiments": result.experiments,
        "holds": result.holds,
        "rows": [
            {
                "at": row.at,
                "measured": _stat_json(row.measured),
                "op": claim.op,
                "factor": claim.factor,
                "than": _stat_json(row.than),
                "ratio": row.ratio,
                "holds": row.holds,
            }
            for row in result.rows
        ],
    }

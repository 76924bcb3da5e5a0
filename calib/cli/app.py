"""The `calib` command line: each command parses options, calls one public function, renders the result."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from calib.core.errors import CalibError, UsageError

app = typer.Typer(
    name="calib",
    help="Score and calibrate the token estimators of AI coding agents against provider-reported usage.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state = {"debug": False}

DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db", envvar="CALIB_DB", help="The DuckDB store (default ./calib.duckdb).", show_default=False
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout and nothing else.")
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout (sorted keys, so output is stable)."""
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n")


def fail(error: CalibError) -> None:
    """Report an error on one line of stderr and exit 1 (2 for usage errors)."""
    if _state["debug"]:
        import traceback

        traceback.print_exception(error)
    typer.echo(f"Error: {error}", err=True)
    raise typer.Exit(2 if isinstance(error, UsageError) else 1)


@contextmanager
def progress_bar(label: str, quiet: bool) -> Iterator[Callable[[int, int, str], None] | None]:
    """A rich progress bar on stderr, or None when quiet or stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=None)

        def update(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=total, description=Path(what).name if what else "")

        yield update


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    _state["debug"] = debug


@app.command()
def ingest(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Session files or folders (default: each agent's data folder)."),
    ] = None,
    format: Annotated[
        str | None, typer.Option("--format", "-f", help="Importer to use instead of sniffing.")
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help="Re-read files even when unchanged since the last ingest.")
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Import agent session logs into the store."""
    from calib.ingest.pipeline import ingest as run_ingest

    try:
        with progress_bar("ingest", quiet) as progress:
            result = run_ingest(paths or [], db=db, format=format, full=full, progress=progress)
    except CalibError as exc:
        fail(exc)
        return
    for error in result.errors:
        typer.echo(f"Error: {error}", err=True)
    if as_json:
        emit_json(result.to_dict())
    else:
        typer.echo(result.summary())
    if result.errors:
        raise typer.Exit(1)


@app.command()
def estimators(db: DbOption = None, as_json: JsonOption = False) -> None:
    """List the token estimators and whether each can be used here (nothing is loaded)."""
    from calib.estimators import list_estimators

    infos = list_estimators()
    if as_json:
        emit_json([info.to_dict() for info in infos])
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table("name", "family", "available", "description")
    for info in infos:
        name = info.name + ("ARG" if info.name.endswith(":") else "")
        status = "yes" if info.available else f"no: {info.reason}"
        table.add_row(*(escape(cell) for cell in (name, info.family, status, info.description)))
    Console().print(table)


@app.command()
def bench(
    estimator: Annotated[
        list[str] | None,
        typer.Option(
            "--estimator", "-e", help="Estimator to measure (repeatable; default: every available one)."
        ),
    ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A corpus of ~0.5 MB instead of ~4 MB.")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Measure estimator throughput (MB/s) and tokens per character on a built-in mixed corpus."""
    from calib.analysis.bench import run_bench

    try:
        with progress_bar("bench", quiet) as progress:
            report = run_bench(
                estimators=estimator,
                quick=quick,
                progress=progress,
            )
    except CalibError as exc:
        fail(exc)
        return
    if as_json:
        emit_json(report.to_dict())
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    corpus = report.corpus
    console.print(
        f"corpus: {corpus['bytes'] / 1e6:.2f} MB UTF-8, "
        + ", ".join(f"{k} {v['bytes'] / 1e6:.2f} MB" for k, v in corpus["types"].items())
        + f" (sha256 {corpus['sha256'][:12]})"
    )
    for section in report.sections:
        table = Table(*(section.labels.get(c, c) for c in section.columns), title=section.title)
        for row in section.rows:
            table.add_row(*(escape(_bench_cell(col, row.get(col))) for col in section.columns))
        console.print(table)
        for note in section.notes:
            console.print(escape(note))


def _bench_cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if column.startswith("tok_per_char"):
            return f"{value:.3f}"
        return f"{value:.2f}" if value < 10 else f"{value:.0f}"
    return str(value)


@app.command()
def score(
    estimator: Annotated[
        list[str] | None,
        typer.Option(
            "--estimator",
            "-e",
            help="Estimator to score (repeatable; default: every fixed-name one that loads).",
        ),
    ] = None,
    sessions: Annotated[
        str, typer.Option("--sessions", help="all, or the train / holdout sessions of `calib fit`'s split.")
    ] = "all",
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Score estimators against the usage providers reported, per provider and model."""
    from calib.scoring.score import score_store, summary_records

    if sessions not in ("all", "train", "holdout"):
        fail(UsageError(f"unknown --sessions {sessions!r}", hint="use all, train or holdout"))
    try:
        with progress_bar("count", quiet) as progress:
            summary = score_store(db, estimator, sessions=sessions, progress=progress)  # type: ignore[arg-type]
    except CalibError as exc:
        fail(exc)
        return
    records = summary_records(summary)
    if as_json:
        emit_json(records)
        return
    from rich.table import Table

    table = Table(
        "estimator",
        "provider",
        "model",
        "calls",
        "breaks",
        "delta MAE",
        "delta bias",
        "ctx p50",
        "ctx p90",
        "ctx p99",
    )
    for r in records:
        table.add_row(
            r["estimator"],
            r["provider"] or "",
            r["model"] or "",
            str(r["calls"]),
            str(r["breaks"]),
            _fmt(r["delta_mae"], "{:.1f}"),
            _fmt(r["delta_bias"], "{:.3f}"),
            *(_fmt(r[k], "{:.2%}") for k in ("ctx_err_p50", "ctx_err_p90", "ctx_err_p99")),
        )
    console = _wide_console()
    console.print(table)
    seen = set()
    for r in records:
        key = (r["provider"], r["model"])
        reasons = {k: v for k, v in r["breaks_by_reason"].items() if v}
        if key in seen or not reasons:
            continue
        seen.add(key)
        detail = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
        typer.echo(f"breaks in {r['provider']}/{r['model']}: {detail}")


@app.command()
def fit(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Session files or folders to ingest first (default: each agent's data folder)."),
    ] = None,
    base: Annotated[
        str,
        typer.Option(
            "--base", help="Base estimator to calibrate (charclass needs no tokenizer at run time)."
        ),
    ] = "charclass",
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the calibration config.")] = Path(
        "calibration.json"
    ),
    holdout: Annotated[
        float, typer.Option("--holdout", help="Share of sessions held out to validate the fit.")
    ] = 0.2,
    format: Annotated[
        str | None, typer.Option("--format", "-f", help="Importer to use instead of sniffing.")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Ingest, score, fit per-provider/model calibration, export it, and compare on held-out sessions."""
    from calib.calibration.pipeline import run_fit

    try:
        with progress_bar("fit", quiet) as progress:
            report = run_fit(
                paths or [],
                db=db,
                base=base,
                out=out,
                holdout_fraction=holdout,
                format=format,
                progress=progress,
            )
    except CalibError as exc:
        fail(exc)
        return
    errors = report.ingest.errors if report.ingest is not None else []
    for error in errors:
        typer.echo(f"Error: {error}", err=True)
    if as_json:
        emit_json(report.to_dict())
    else:
        from rich.table import Table

        typer.echo(
            f"fitted {report.base} calibration on {report.train_calls} calls; wrote {report.out}; "
            f"held out {report.holdout_sessions} sessions ({report.holdout_calls} calls), "
            f"before = {report.before}, after = calibrated"
        )
        table = Table(
            "provider",
            "model",
            "calls",
            "params from",
            "delta MAE before → after",
            "delta bias before → after",
            "ctx p90 before → after",
        )
        for r in report.rows:
            table.add_row(
                r["provider"] or "",
                r["model"] or "",
                str(r["calls"]),
                r["level"],
                f"{_fmt(r['delta_mae_before'], '{:.1f}')} → {_fmt(r['delta_mae_after'], '{:.1f}')}",
                f"{_fmt(r['delta_bias_before'], '{:.3f}')} → {_fmt(r['delta_bias_after'], '{:.3f}')}",
                f"{_fmt(r['ctx_err_p90_before'], '{:.2%}')} → {_fmt(r['ctx_err_p90_after'], '{:.2%}')}",
            )
        _wide_console().print(table)
    if errors:
        raise typer.Exit(1)


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else spec.format(value)


def _wide_console() -> Any:
    """A rich console on stdout that does not squeeze tables to 80 columns when piped."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200)


@app.command()
def sample(
    tool: Annotated[str, typer.Option("--tool", help="Agent: gemini-cli, opencode or dexto.")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write (must be empty or absent).")],
    layout: Annotated[
        str | None, typer.Option("--layout", help="On-disk layout (default: the agent's current one).")
    ] = None,
    sessions: Annotated[int, typer.Option("--sessions", help="Sessions to generate.", min=1)] = 6,
    seed: Annotated[int, typer.Option("--seed", help="Random seed; the same seed gives the same files.")] = 0,
    as_json: JsonOption = False,
) -> None:
    """Write synthetic sessions in an agent's real format, with truth.json beside them."""
    from calib.synth import write_sample

    try:
        result = write_sample(tool, out, layout=layout, sessions=sessions, seed=seed)
    except CalibError as exc:
        fail(exc)
        return
    if as_json:
        emit_json(result.to_dict())
        return
    models = ", ".join(f"{k} {v}" for k, v in sorted(result.calls_by_model.items()))
    typer.echo(
        f"wrote {result.sessions} {result.tool} sessions ({result.calls} calls: {models}) "
        f"as {result.layout} to {result.out} ({result.bytes / 1024:.0f} KiB); truth in {result.truth}"
    )


@app.command()
def report(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder to write report.md, summary.json and PNGs.")
    ] = Path("report"),
    estimator: Annotated[
        list[str] | None,
        typer.Option(
            "--estimator",
            "-e",
            help="Estimator to include (repeatable; default: chars4, cjk, tiktoken:o200k_base, charclass).",
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="A calibration config to include as calibrated:BASE.")
    ] = None,
    fit: Annotated[
        bool, typer.Option("--fit", help="Fit a calibration on the training sessions and include it.")
    ] = False,
    base: Annotated[
        str | None, typer.Option("--base", help="Base estimator for --fit (default charclass).")
    ] = None,
    figures: Annotated[bool, typer.Option("--figures/--no-figures", help="Draw the PNG figures.")] = True,
    replay_window: Annotated[
        int | None,
        typer.Option("--replay-window", help="Replay with this context window for every model (what-if)."),
    ] = None,
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="An earlier summary.json to gate against.")
    ] = None,
    max_regression: Annotated[
        float,
        typer.Option("--max-regression", help="Percent a figure may worsen before the gate fails.", min=0),
    ] = 5.0,
    fail_on_new_group: Annotated[
        bool, typer.Option("--fail-on-new-group", help="Fail when a group has no baseline.")
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Write a markdown report with figures and summary.json; with --baseline, exit 1 on a regression."""
    from calib.analysis.report import run_report

    try:
        with progress_bar("report", quiet) as progress:
            result = run_report(
                db,
                out=out,
                estimators=estimator,
                config=config,
                fit=fit,
                base=base,
                figures=figures,
                replay_window=replay_window,
                baseline=baseline,
                max_regression=max_regression,
                fail_on_new_group=fail_on_new_group,
                progress=progress,
            )
    except CalibError as exc:
        fail(exc)
        return
    if as_json:
        emit_json(result.to_dict())
    else:
        typer.echo(f"wrote {', '.join(result.files)} to {result.out}")
        if result.gate is not None:
            for line in result.gate.lines():
                typer.echo(line)
    if result.failed:
        raise typer.Exit(1)


@app.command()
def replay(
    estimator: Annotated[
        list[str] | None,
        typer.Option("--estimator", "-e", help="Estimator to replay (repeatable; default: chars4, cjk)."),
    ] = None,
    policy: Annotated[
        list[str] | None,
        typer.Option(
            "--policy",
            help="Reasoning/cache policy (repeatable; default all: raw, include, strip-all-but-last, "
            "strip-all, ui-sum).",
        ),
    ] = None,
    rule: Annotated[
        list[str] | None,
        typer.Option(
            "--rule", help="Agent rule (repeatable; default all: dexto, opencode, opencode-2025, gemini-cli)."
        ),
    ] = None,
    windows: Annotated[
        Path | None,
        typer.Option("--windows", help='JSON file of model windows: {"model": {"context": N, ...}}.'),
    ] = None,
    window: Annotated[
        int | None, typer.Option("--window", help="What-if: give every model this context window (tokens).")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Replay the agents' /context display and compaction rules on every call against the true context."""
    from calib.analysis.replay import run_replay

    try:
        with progress_bar("count", quiet) as progress:
            result = run_replay(
                db, estimator, rules=rule, policies=policy, windows=windows, window=window, progress=progress
            )
    except CalibError as exc:
        fail(exc)
        return
    if result.unknown_models:
        typer.echo(
            f"Warning: no context window for {', '.join(result.unknown_models)}; their calls are left out "
            "(add them with --windows FILE or --window N)",
            err=True,
        )
    document = result.to_dict()
    if as_json:
        emit_json(document)
        return
    from rich.table import Table

    table = Table(
        "rule", "estimator", "policy", "calls", "compact", "early", "late", "missed", "refused",
        "|err| p50", "|err| p90", "rel p90", "wasted",
    )  # fmt: skip
    seen: set[tuple[str, str]] = set()
    for r in document["summary"]:
        name = r["estimator"]
        if not r["uses_estimator"]:
            # the same figures for every estimator: show them once
            if (r["rule"], r["policy"]) in seen:
                continue
            seen.add((r["rule"], r["policy"]))
            name = "(any)"
        table.add_row(
            r["rule"], name, r["policy"],
            *(str(r[k]) for k in ("calls", "compact", "early", "late", "missed", "refused")),
            _fmt(r["err_p50"], "{:.0f}"), _fmt(r["err_p90"], "{:.0f}"), _fmt(r["rel_err_p90"], "{:.2%}"),
            _fmt(r["wasted_tokens"], "{:.0f}"),
        )  # fmt: skip
    _wide_console().print(table)
    typer.echo("windows: " + ", ".join(f"{k} {v['context']}" for k, v in document["windows"].items()))


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except CalibError as exc:  # raised outside a command's own handling
        typer.echo(f"Error: {exc}", err=True)
        sys.exit(2 if isinstance(exc, UsageError) else 1)

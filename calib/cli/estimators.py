"""`calib estimators` and `calib bench`: what estimators there are, and how fast each counts."""

from typing import Annotated, Any

import typer

from calib.analysis.bench import SECTIONS
from calib.cli.common import (
    DbOption,
    JsonOption,
    QuietOption,
    console,
    escape,
    estimator_help,
    fail,
    progress_bar,
    table,
)
from calib.cli.output import emit_json
from calib.core.errors import CalibError


def estimators(db: DbOption = None, as_json: JsonOption = False) -> None:
    """List the token estimators and whether each can be used here (nothing is loaded)."""
    from calib.estimators import list_estimators

    infos = list_estimators()
    if as_json:
        emit_json([info.to_dict() for info in infos])
        return
    listing = table("name", "family", "available", "description")
    for info in infos:
        name = info.name + ("ARG" if info.name.endswith(":") else "")
        status = "yes" if info.available else f"no: {info.reason}"
        listing.add_row(name, info.family, status, info.description)
    console().print(listing)


def bench(
    estimator: Annotated[
        list[str] | None,
        typer.Option(
            "--estimator",
            "-e",
            help=estimator_help("Estimator to measure", "every fixed-name one that can be used here"),
        ),
    ] = None,
    sections: Annotated[
        list[str] | None,
        typer.Option(
            "--section",
            "-s",
            metavar="NAME",
            help=f"Section to run (repeatable; default: all): {', '.join(SECTIONS)}.",
            show_default=False,
        ),
    ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A corpus of ~0.5 MB instead of ~4 MB.")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Measure estimator and runtime throughput (MB/s) and tokens per character on a built-in mixed corpus."""
    from calib.analysis.bench import run_bench

    try:
        with progress_bar("bench", quiet) as progress:
            report = run_bench(estimators=estimator, quick=quick, sections=sections, progress=progress)
    except CalibError as exc:
        fail(exc)
    if as_json:
        emit_json(report.to_dict())
        return
    out = console()
    corpus = report.corpus
    out.print(
        f"corpus: {corpus['bytes'] / 1e6:.2f} MB UTF-8, "
        + ", ".join(f"{k} {v['bytes'] / 1e6:.2f} MB" for k, v in corpus["types"].items())
        + f" (sha256 {corpus['sha256'][:12]})"
    )
    for section in report.sections:
        rows = table(*(section.labels.get(c, c) for c in section.columns), title=section.title)
        for row in section.rows:
            rows.add_row(*(_bench_cell(col, row.get(col)) for col in section.columns))
        out.print(rows)
        for note in section.notes:
            out.print(escape(note))


def _bench_cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if column.startswith("tok_per_char"):
            return f"{value:.3f}"
        return f"{value:.2f}" if value < 10 else f"{value:.0f}"
    return str(value)

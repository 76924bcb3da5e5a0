"""`calib cost`: what the logged calls cost, per session, model, agent or day, cache included."""

from typing import Annotated

import typer

from calib.cli.common import (
    AgentOption,
    DbOption,
    JsonOption,
    SessionOption,
    console,
    fail,
    fmt,
    require_store,
    say,
    table,
)
from calib.cli.output import emit_json
from calib.core.errors import CalibError

_HELP = "\n\n".join(
    " ".join(paragraph.split())
    for paragraph in (
        """What the logged calls cost, per session, model, agent or day, with the prompt cache priced
        at its own rates.""",
        """Each call is priced alone from the price table the genai-prices package ships (offline;
        the version is printed): the whole prompt as input, cache reads and writes (5-minute and
        1-hour where the log splits them) at their own rates, reasoning as output, and a model's
        long-prompt tier by that call's prompt. For Claude Code and Codex the calls are those ccusage
        counts. A model the table has no price for keeps its tokens and no dollars; the output says
        which, and what else the figures cannot see.""",
    )
)


def cost(
    by: Annotated[
        str, typer.Option("--by", help="Group by session (default), model, agent or day (UTC).")
    ] = "session",
    session: SessionOption = None,
    agent: AgentOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    from calib.analysis.cost import GROUPINGS, run_cost

    require_store(db)
    try:
        report = run_cost(db, by=by, session=session, agent=agent)
    except CalibError as exc:
        fail(exc)
    if as_json:
        emit_json(report.to_dict())
        return
    keys = list(GROUPINGS[report.by])
    rows = table(
        *keys, "calls", "input", "cache read", "cache write", "output", "USD", title=f"cost by {report.by}"
    )
    for row in [*report.rows, {**dict.fromkeys(keys, ""), keys[0]: "total", **report.total}]:
        # a star: some calls of the row have usage and no price, so its dollars are a floor
        shown = fmt(row["usd"], "{:,.2f}") + ("*" if row["unpriced_calls"] and row["usd"] is not None else "")
        rows.add_row(
            *(str(row[k]) if row[k] is not None else "-" for k in keys),
            f"{row['calls']:,}",
            f"{row['input_tokens'] or 0:,}",
            f"{row['cache_read_tokens'] or 0:,}",
            f"{row['cache_write_tokens'] or 0:,}",
            f"{row['output_tokens'] or 0:,}",
            shown,
        )
    console(wide=True).print(rows)
    say(
        f"Prices: {report.prices} (offline). input: whole prompts, cache included; output: reasoning "
        "included. *: some of the calls have no price."
    )
    for note in report.notes():
        say(f"Note: {note}.")


cost.__doc__ = _HELP

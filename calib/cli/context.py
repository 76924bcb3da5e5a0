"""`calib context`: the /context panel calib's tracker would have shown before a logged call."""

from pathlib import Path
from typing import Annotated

import typer

from calib.cli.common import DbOption, JsonOption, QuietOption, fail, require_store, say
from calib.cli.output import emit_json, emit_json_list
from calib.core.errors import CalibError

_HELP = "\n\n".join(
    " ".join(paragraph.split())
    for paragraph in (
        """Show the /context panel calib's tracker would have shown before a logged call, beside the
        agent's own display and the provider's count.""",
        """The panel: the total, its share of the window, the breakdown (system, tools, messages,
        reasoning), free space, the basis, the compaction decision and the check of the call before;
        beside it, what the agent's own rule and estimator showed and what the provider counted.""",
        """Default: the last call of the newest session. --session ID (a uid, native id or unique start
        of one) and --call N (1 for the first) pick another. --all prints the verification line of every
        call (of every session without --session): the provider's count, the agent's display and the
        calibrated one, with their errors. The calibration is ./calibration.json (what calib fit writes)
        unless --config names one; the calibrated total is the one calib replay shows for it and the
        runtime an agent vendors computes.""",
    )
)


def context(
    session: Annotated[
        str | None, typer.Option("--session", help="Session uid or native id (or a unique start of one).")
    ] = None,
    call: Annotated[
        int | None,
        typer.Option("--call", help="Call number in the session, 1 for the first (default: last)."),
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", help="Every call's verification line (every session without --session).")
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Calibration config (default ./calibration.json).", readable=False),
    ] = None,
    window: Annotated[
        str,
        typer.Option(
            "--window",
            help="real (default): each model's own window; or N tokens for every model (its shape kept).",
        ),
    ] = "real",
    windows: Annotated[
        Path | None,
        typer.Option(
            "--windows", help='JSON file of model windows: {"model": {"context": N, ...}}.', readable=False
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    from calib.analysis.context import (
        DEFAULT_CONFIG,
        panel_lines,
        run_context,
        stream_context,
        verification_line,
        window_kind,
    )

    require_store(db)
    try:
        if every:
            # every call, written as it is read: memory holds one batch of sessions, not every call
            calls = stream_context(db, config, session=session, call=call, window=window, windows=windows)
            if as_json:
                head = {"config": str(config or DEFAULT_CONFIG), "window": window_kind(window)}
                emit_json_list(head, "calls", (c.to_dict() for c in calls))
                return
            shown = 0
            for c in calls:
                say(verification_line(c))
                shown += 1
            if not shown:
                say("No call to show: the sessions have no calls to replay.")
            return
        result = run_context(db, config, session=session, call=call, window=window, windows=windows)
    except CalibError as exc:
        fail(exc)
    if as_json:
        emit_json(result.to_dict())
        return
    if not result.calls:
        say("No call to show: the session has no calls with usage to replay.")
        return
    for line in panel_lines(result.calls[0]):
        say(line)


context.__doc__ = _HELP

"""`calib sample`: synthetic sessions in an agent's real layout."""

from pathlib import Path
from typing import Annotated

import typer

from calib.cli.common import JsonOption, fail, lazy_help, say
from calib.cli.output import emit_json
from calib.core.errors import CalibError


def _tool_help() -> str:
    from calib.synth import TOOLS

    return f"Agent: {', '.join(TOOLS)}."


def _layout_help() -> str:
    from calib.synth import DEFAULT_LAYOUT, TOOLS, layouts

    per_tool = "; ".join(
        f"{tool}: "
        + ", ".join(f"{name} (default)" if name == DEFAULT_LAYOUT[tool] else name for name in layouts(tool))
        for tool in TOOLS
    )
    return f"On-disk layout of the agent's files (default: the agent's current one). {per_tool}."


def sample(
    tool: Annotated[str, typer.Option("--tool", help=lazy_help(_tool_help))],
    out: Annotated[Path, typer.Option("--out", help="Folder to write (must be empty or absent).")],
    layout: Annotated[str | None, typer.Option("--layout", help=lazy_help(_layout_help))] = None,
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
    if as_json:
        emit_json(result.to_dict())
        return
    models = ", ".join(f"{k} {v}" for k, v in sorted(result.calls_by_model.items()))
    say(
        f"wrote {result.sessions} {result.tool} sessions ({result.calls} calls: {models}) "
        f"as {result.layout} to {result.out} ({result.bytes / 1024:.0f} KiB); truth in {result.truth}"
    )

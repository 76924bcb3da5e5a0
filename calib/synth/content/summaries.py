"""Compaction summaries, each in its agent's own format."""

from __future__ import annotations

import random

from calib.synth.content.project import Project, main_file
from calib.synth.content.shell import test_command
from calib.synth.content.words import fill


def summary_text(tool: str, rng: random.Random, project: Project, goal: str, changed: list[str]) -> str:
    """The compaction summary each agent writes in its own format."""
    files = ", ".join(f"`{p}`" for p in changed) or "none yet"
    w = project.words
    # Qwen Code's compression asks for the same snapshot; llxprt-code kept gemini-cli's prompt
    if tool in ("gemini-cli", "qwen-code", "llxprt"):
        return (
            "<state_snapshot>\n    <overall_goal>\n        "
            + goal.splitlines()[0][:300]
            + "\n    </overall_goal>\n\n    <key_knowledge>\n"
            + fill(
                f"        - Project `{project.name}` ({project.language}) lives at {project.root}.\n"
                "        - `@verb@` and the @num@ totals per @group@ are the code in question.\n"
                f"        - Tests run with `{test_command(project)}`.\n",
                w,
            )
            + "    </key_knowledge>\n\n    <file_system_state>\n"
            + "".join(f"        - MODIFIED: `{p}`\n" for p in changed)
            + f"        - READ: `{main_file(project)}`\n    </file_system_state>\n\n    <recent_actions>\n"
            "        - Ran the test suite; it passes after the fix.\n    </recent_actions>\n\n"
            "    <current_plan>\n        1. [DONE] Fix the aggregation.\n        2. [TODO] Address the follow-up request.\n"
            "    </current_plan>\n</state_snapshot>"
        )
    if tool == "dexto":
        return (
            "<session_compaction>\n## Conversation summary\n\n"
            f"**Goal:** {goal.splitlines()[0][:300]}\n\n**Progress so far:**\n"
            + fill("- Located the @num@ aggregation and the @collab@ retry path.\n", w)
            + f"- Files changed: {files}.\n- Tests: passing after the last run.\n\n"
            "**Open items:** continue with the user's latest request.\n</session_compaction>"
        )
    if tool == "claude-code":
        # Claude Code's summary arrives as a user message that says the session goes on from a summary.
        return (
            "This conversation continues an earlier one that no longer fit in the context window. What "
            "follows summarises it.\n\nSummary:\n1. Primary request:\n   "
            + goal.splitlines()[0][:300]
            + "\n\n2. Key technical points:\n"
            + fill(
                f"   - `{project.name}` is a {project.language} project at {project.root}.\n"
                "   - The @num@ totals are grouped by @group@; archived records must be skipped.\n",
                w,
            )
            + f"\n3. Files touched:\n   - {files}\n\n4. Pending work:\n   - Answer the latest request and "
            f"re-run `{test_command(project)}`.\n\nPick up where the conversation stopped without asking "
            "the user to repeat anything."
        )
    if tool == "codex":
        return (
            "Handoff summary for continuing this task.\n\nGoal: "
            + goal.splitlines()[0][:300]
            + "\n\nState:\n"
            + fill(f"- Working in {project.root}; the fix to the @num@ grouping is in place.\n", w)
            + f"- Files changed: {files}.\n- Verification: `{test_command(project)}` passed after the change."
            "\n\nNext: continue with the user's newest message."
        )
    return (
        "## Summary of the conversation so far\n\n"
        f"**Task:** {goal.splitlines()[0][:300]}\n\n**What we did**\n"
        + fill(
            f"- Explored `{project.root}` and read `{main_file(project)}`.\n- Fixed the @num@ grouping by @group@ (archived records are skipped).\n",
            w,
        )
        + f"- Changed files: {files}.\n\n**Next steps**\n- Continue with the follow-up request; re-run `{test_command(project)}` after each change."
    )

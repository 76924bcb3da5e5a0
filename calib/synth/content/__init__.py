"""Realistic content for synthetic coding sessions: projects, source files, prompts, tool output, prose.

Everything is drawn from one `random.Random` handed in by the generator, so a seed fixes every text.
The texts are written here from templates (no third-party text is embedded): source files in Python,
TypeScript, Go and Rust plus SQL, YAML, Markdown and JSON; `grep`/`ls`/test/`git` output; JSON API
payloads; diffs; tool errors; user prompts in English, Chinese, Japanese and mixed; assistant replies,
reasoning and compaction summaries in each agent's own style.

One module per kind of material: `words` (vocabulary and text helpers), `code_python`,
`code_typescript`, `code_go`, `code_rust` (source templates), `project` (the repository a session works
in), `files` (each file's text), `payloads` (JSON API records), `shell` (test, lint, git and ls output),
`edits` (one-line edits and their diffs), `prompts` (what the user asks), `replies` (what the model
says), `reasoning`, `summaries` (compaction summaries) and `toolkit` (actions as each agent's tool calls).
"""

from __future__ import annotations

from calib.synth.content.edits import pick_edit, unified_diff
from calib.synth.content.files import file_text
from calib.synth.content.payloads import api_records
from calib.synth.content.project import Project, SourceFile, main_file, make_project, test_file
from calib.synth.content.prompts import (
    FOLLOWUP_KINDS,
    FOLLOWUP_WEIGHTS,
    TASK_KINDS,
    TASK_WEIGHTS,
    followup_prompt,
    task_prompt,
)
from calib.synth.content.reasoning import reasoning_text
from calib.synth.content.replies import explain_answer, final_answer, followup_answer, remark
from calib.synth.content.shell import git_output, lint_output, ls_output, test_command, test_run
from calib.synth.content.summaries import summary_text
from calib.synth.content.toolkit import Toolkit, ToolRun
from calib.synth.content.words import fill, hexid

__all__ = [
    "FOLLOWUP_KINDS",
    "FOLLOWUP_WEIGHTS",
    "TASK_KINDS",
    "TASK_WEIGHTS",
    "Project",
    "SourceFile",
    "ToolRun",
    "Toolkit",
    "api_records",
    "explain_answer",
    "file_text",
    "fill",
    "final_answer",
    "followup_answer",
    "followup_prompt",
    "git_output",
    "hexid",
    "lint_output",
    "ls_output",
    "main_file",
    "make_project",
    "pick_edit",
    "reasoning_text",
    "remark",
    "summary_text",
    "task_prompt",
    "test_command",
    "test_file",
    "test_run",
    "unified_diff",
]

"""Generic actions (read, grep, run tests, edit, ...) rendered as one agent's tool calls and outputs."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from calib.synth.content.edits import pick_edit, unified_diff
from calib.synth.content.files import file_text
from calib.synth.content.payloads import api_records
from calib.synth.content.project import Project, SourceFile
from calib.synth.content.words import hexid


@dataclass
class ToolRun:
    """One tool call as an agent records it: its name, its argument object and the output text."""

    name: str
    args: dict[str, Any]
    output: str
    is_error: bool = False


# Cline and Roo Code (which began as its fork) share tool names and shapes.
CLINE_LIKE = ("cline", "roo-code")


def _numbered(text: str) -> str:
    lines = text.splitlines()
    return "\n".join(f"{i + 1:05d}| {line}" for i, line in enumerate(lines))


def _jdump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def _arrowed(text: str, start: int = 1) -> str:
    """Claude Code's Read output: a right-aligned line number and an arrow before each line."""
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(text.splitlines(), start))


def _codex_patch(path: str, old: str | None, new: str) -> str:
    """An `apply_patch` body: an update hunk of one line, or a whole added file."""
    if old is None:
        body = "".join(f"+{line}\n" for line in new.splitlines())
        return f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch"
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch"


class Toolkit:
    """Renders generic actions (read, grep, run tests, edit, ...) as one agent's tool calls and outputs."""

    def __init__(self, tool: str, rng: random.Random, project: Project) -> None:
        # Qwen Code and llxprt-code, gemini-cli forks, keep gemini-cli's built-in tools.
        self.tool = "gemini-cli" if tool in ("qwen-code", "llxprt") else tool
        self.rng = rng
        self.project = project

    def _exec(self, command: str, output: str, exit_code: int = 0) -> ToolRun:
        """Codex's `exec_command`: the output framed with its chunk id, wall time and exit code."""
        body = (
            f"Chunk ID: {hexid(self.rng, 6)}\nWall time: {self.rng.uniform(0.02, 9.0):.4f} seconds\n"
            f"Process exited with code {exit_code}\nOriginal token count: {max(1, len(output) // 4)}\n"
            f"Output:\n{output}"
        )
        args = {"cmd": command, "workdir": self.project.root}
        return ToolRun("exec_command", args, body, exit_code != 0)

    # names and argument shapes follow each agent's built-in tools
    def read(self, rel: str, *, missing: bool = False) -> ToolRun:
        """Read a file (or fail on a path that does not exist)."""
        p = self.project
        path = p.abs(rel)
        text = "" if missing else file_text(self.rng, p, rel)
        if self.tool == "gemini-cli":
            if missing:
                return ToolRun("read_file", {"absolute_path": path}, f"File not found: {path}", True)
            return ToolRun("read_file", {"absolute_path": path}, text)
        if self.tool == "opencode":
            if missing:
                near = ", ".join(p.abs(x) for x in p.layout[:3])
                return ToolRun(
                    "read",
                    {"filePath": path},
                    f"File not found: {path}\n\nDid you mean one of these?\n{near}",
                    True,
                )
            body = _numbered(text)
            n = len(text.splitlines())
            return ToolRun(
                "read", {"filePath": path}, f"<file>\n{body}\n\n(End of file - total {n} lines)\n</file>"
            )
        if self.tool == "claude-code":
            if missing:
                return ToolRun(
                    "Read", {"file_path": path}, f"File does not exist. Working directory: {p.root}", True
                )
            return ToolRun("Read", {"file_path": path}, _arrowed(text))
        if self.tool == "codex":
            if missing:
                return self._exec(
                    f"sed -n '1,250p' {rel}", f"sed: can't read {rel}: No such file or directory\n", 2
                )
            return self._exec(f"sed -n '1,250p' {rel}", text)
        if self.tool in CLINE_LIKE:
            if missing:
                return ToolRun(
                    "read_file", {"path": rel}, f"Error reading file: File not found: {path}", True
                )
            return ToolRun("read_file", {"path": rel}, text)
        if missing:
            return ToolRun(
                "internal--read_file",
                {"file_path": path},
                _jdump(
                    {"error": f"ENOENT: no such file or directory, open '{path}'", "code": "FILE_NOT_FOUND"}
                ),
                True,
            )
        return ToolRun(
            "internal--read_file",
            {"file_path": path},
            _jdump(
                {
                    "content": text,
                    "lines": len(text.splitlines()),
                    "truncated": False,
                    "size": len(text.encode()),
                }
            ),
        )

    def listing(self, folder: str = "") -> ToolRun:
        """List a folder of the project."""
        p = self.project
        path = p.abs(folder) if folder else p.root
        names = sorted({x[len(folder) :].lstrip("/").split("/")[0] for x in p.layout if x.startswith(folder)})
        if self.tool == "gemini-cli":
            dirs = [n for n in names if "." not in n]
            files = [n for n in names if "." in n]
            body = "\n".join([f"[DIR] {d}" for d in dirs] + files)
            return ToolRun("list_directory", {"path": path}, f"Directory listing for {path}:\n{body}")
        if self.tool == "opencode":
            tree = [f"{path}/"]
            for x in sorted(q for q in p.layout if q.startswith(folder)):
                depth = x[len(folder) :].lstrip("/").count("/")
                tree.append("  " * (depth + 1) + x.split("/")[-1])
            return ToolRun("list", {"path": path}, "\n".join(tree) + "\n")
        if self.tool == "claude-code":
            found = [p.abs(x) for x in p.layout if x.startswith(folder)]
            return ToolRun("Glob", {"pattern": "**/*", "path": path}, "\n".join(found))
        if self.tool == "codex":
            found = [x for x in p.layout if x.startswith(folder)]
            return self._exec(f"rg --files {folder}".rstrip(), "\n".join(found) + "\n")
        if self.tool in CLINE_LIKE:
            found = [x[len(folder) :].lstrip("/") for x in p.layout if x.startswith(folder)]
            return ToolRun("list_files", {"path": folder or ".", "recursive": True}, "\n".join(sorted(found)))
        files = [p.abs(x) for x in p.layout if x.startswith(folder)]
        return ToolRun(
            "internal--glob_files",
            {"pattern": "**/*", "path": path},
            _jdump({"files": files, "total": len(files), "truncated": False}),
        )

    def grep(self, pattern: str) -> ToolRun:
        """Search the project for a pattern; matches come from the files' real text."""
        p = self.project
        hits: list[tuple[str, int, str]] = []
        for rel in p.layout:
            if rel.endswith((".md", ".json", ".toml", ".mod")):
                continue
            text = file_text(self.rng, p, rel)
            for i, line in enumerate(text.splitlines(), 1):
                if pattern in line:
                    hits.append((rel, i, line.strip()))
        hits = hits[:25]
        include = f"*.{p.ext}"
        if self.tool == "gemini-cli":
            if not hits:
                return ToolRun(
                    "search_file_content",
                    {"pattern": pattern, "include": include},
                    f'No matches found for pattern "{pattern}" in path ".".',
                )
            body = (
                f'Found {len(hits)} matches for pattern "{pattern}" in path "." (filter: "{include}"):\n---\n'
            )
            current = None
            for rel, i, line in hits:
                if rel != current:
                    if current is not None:
                        body += "---\n"
                    body += f"File: {rel}\n"
                    current = rel
                body += f"L{i}: {line}\n"
            return ToolRun("search_file_content", {"pattern": pattern, "include": include}, body + "---")
        if self.tool == "opencode":
            if not hits:
                return ToolRun("grep", {"pattern": pattern, "include": include}, "No files found")
            body = f"Found {len(hits)} matches\n"
            current = None
            for rel, i, line in hits:
                if rel != current:
                    body += f"{'' if current is None else chr(10)}{p.abs(rel)}:\n"
                    current = rel
                body += f"  Line {i}: {line}\n"
            return ToolRun("grep", {"pattern": pattern, "include": include}, body)
        if self.tool == "claude-code":
            args = {"pattern": pattern, "path": p.root, "glob": include, "output_mode": "content", "-n": True}
            lines = [f"{p.abs(rel)}:{i}:{line}" for rel, i, line in hits]
            return ToolRun("Grep", args, "\n".join(lines) if lines else "No matches found")
        if self.tool == "codex":
            lines = [f"{rel}:{i}:{line}" for rel, i, line in hits]
            out = "\n".join(lines) + "\n" if lines else ""
            return self._exec(f"rg -n '{pattern}' -g '{include}'", out, 0 if lines else 1)
        if self.tool in CLINE_LIKE:
            args = {"path": ".", "regex": pattern, "file_pattern": include}
            body = f"Found {len(hits)} result{'s' if len(hits) != 1 else ''}.\n"
            for rel, _i, line in hits:
                body += f"\n{rel}\n\u2502----\n\u2502{line}\n\u2502----"
            return ToolRun("search_files", args, body)
        return ToolRun(
            "internal--grep_content",
            {"pattern": pattern, "path": p.root, "glob": include},
            _jdump(
                {
                    "matches": [
                        {"file": p.abs(rel), "line_number": i, "line": line} for rel, i, line in hits
                    ],
                    "total_matches": len(hits),
                    "files_searched": len(p.layout),
                }
            ),
        )

    def shell(self, command: str, output: str, *, exit_code: int = 0, description: str = "") -> ToolRun:
        """Run a shell command with the given output."""
        if self.tool == "gemini-cli":
            args = {"command": command, "description": description} if description else {"command": command}
            body = (
                f"Command: {command}\nDirectory: (root)\nOutput: {output.rstrip() or '(empty)'}\nError: (none)\n"
                f"Exit Code: {exit_code}\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: {self.rng.randint(20000, 99999)}"
            )
            return ToolRun("run_shell_command", args, body)
        if self.tool == "opencode":
            return ToolRun(
                "bash",
                {"command": command, "description": description or "Run " + command.split()[0]},
                output,
            )
        if self.tool == "claude-code":
            args = {"command": command, "description": description or "Run " + command.split()[0]}
            body = output.rstrip("\n") if exit_code == 0 else f"Exit code {exit_code}\n{output.rstrip()}"
            return ToolRun("Bash", args, body, exit_code != 0)
        if self.tool == "codex":
            return self._exec(command, output, exit_code)
        if self.tool in CLINE_LIKE:
            shell_args: dict[str, Any] = {"command": command}
            if self.tool == "cline":
                shell_args["requires_approval"] = False
            body = f"Command executed.\nOutput:\n{output.rstrip()}"
            if exit_code:
                body = f"Command executed.\nExit code: {exit_code}\nOutput:\n{output.rstrip()}"
            return ToolRun("execute_command", shell_args, body, exit_code != 0)
        return ToolRun(
            "internal--bash_exec",
            {"command": command, "description": description or f"Run {command.split()[0]}"},
            _jdump(
                {
                    "stdout": output,
                    "stderr": "",
                    "exit_code": exit_code,
                    "duration": self.rng.randint(40, 9000),
                }
            ),
        )

    def edit(self, rel: str) -> tuple[ToolRun, str]:
        """Edit one line of a file (changing the project state); returns the run and its diff."""
        p = self.project
        text = file_text(self.rng, p, rel)
        picked = pick_edit(self.rng, text)
        path = p.abs(rel)
        if picked is None:
            old, new, line = text.splitlines()[0], text.splitlines()[0] + " ", 1
        else:
            old, new, line = picked
        p.files[rel] = SourceFile(rel, text.replace(old, new, 1))
        diff = unified_diff(rel, old, new, line)
        if self.tool == "gemini-cli":
            args = {"file_path": path, "old_string": old, "new_string": new}
            return ToolRun("replace", args, f"Successfully modified file: {path} (1 replacements)."), diff
        if self.tool == "opencode":
            args = {"filePath": path, "oldString": old, "newString": new}
            return ToolRun("edit", args, "Edit applied successfully."), diff
        if self.tool == "claude-code":
            args = {"file_path": path, "old_string": old, "new_string": new}
            return ToolRun("Edit", args, f"The file {path} has been updated successfully."), diff
        if self.tool == "codex":
            args = {"input": _codex_patch(path, old, new)}
            return ToolRun("apply_patch", args, f"Success. Updated the following files:\nM {path}\n"), diff
        if self.tool in CLINE_LIKE:
            block = f"------- SEARCH\n{old}\n=======\n{new}\n+++++++ REPLACE"
            if self.tool == "roo-code":
                block = f"<<<<<<< SEARCH\n:start_line:{line}\n-------\n{old}\n=======\n{new}\n>>>>>>> REPLACE"
            name = "replace_in_file" if self.tool == "cline" else "apply_diff"
            done = f"The content was successfully saved to {rel}."
            return ToolRun(name, {"path": rel, "diff": block}, done), diff
        args = {"file_path": path, "old_string": old, "new_string": new}
        return ToolRun(
            "internal--edit_file", args, _jdump({"success": True, "path": path, "diff": diff})
        ), diff

    def write(self, rel: str, content: str) -> ToolRun:
        """Create a file."""
        p = self.project
        path = p.abs(rel)
        p.files[rel] = SourceFile(rel, content)
        if rel not in p.layout:
            p.layout.append(rel)
        if self.tool == "gemini-cli":
            return ToolRun(
                "write_file",
                {"file_path": path, "content": content},
                f"Successfully created and wrote to new file: {path}.",
            )
        if self.tool == "opencode":
            return ToolRun("write", {"filePath": path, "content": content}, "Wrote file successfully.")
        if self.tool == "claude-code":
            return ToolRun(
                "Write", {"file_path": path, "content": content}, f"File created successfully at: {path}"
            )
        if self.tool == "codex":
            args = {"input": _codex_patch(path, None, content)}
            return ToolRun("apply_patch", args, f"Success. Updated the following files:\nA {path}\n")
        if self.tool in CLINE_LIKE:
            write_args: dict[str, Any] = {"path": rel, "content": content}
            if self.tool == "roo-code":
                write_args["line_count"] = len(content.splitlines())
            return ToolRun("write_to_file", write_args, f"The content was successfully saved to {rel}.")
        return ToolRun(
            "internal--write_file",
            {"file_path": path, "content": content},
            _jdump({"success": True, "path": path, "bytes_written": len(content.encode())}),
        )

    def api_call(self) -> ToolRun:
        """Query the local API with curl: a JSON payload."""
        p = self.project
        n = self.rng.randint(2, 5)
        payload = {
            "data": api_records(self.rng, p, n),
            "next_cursor": hexid(self.rng, 16) if self.rng.random() < 0.6 else None,
            "total": self.rng.randint(n, 5000),
        }
        port = self.rng.choice((8000, 8080, 3000))
        cmd = f"curl -s 'http://localhost:{port}/api/v1/{p.words['ents']}?limit={n}' | jq ."
        return self.shell(cmd, _jdump(payload), description=f"Query the local {p.words['ents']} API")

    def todo(self, items: list[str]) -> ToolRun:
        """The agent's todo or plan tool (Dexto, which has none, gets a listing instead)."""
        todos = [
            {
                "content": t,
                "status": "completed" if i == 0 else "pending",
                "priority": "high" if i < 2 else "medium",
                "id": str(i + 1),
            }
            for i, t in enumerate(items)
        ]
        if self.tool == "opencode":
            return ToolRun("todowrite", {"todos": todos}, _jdump(todos))
        if self.tool == "claude-code":
            items_cc = [
                {"content": t["content"], "status": t["status"], "activeForm": "Working on: " + t["content"]}
                for t in todos
            ]
            return ToolRun("TodoWrite", {"todos": items_cc}, f"Todo list updated ({len(todos)} items).")
        if self.tool == "codex":
            plan = [{"step": t["content"], "status": t["status"]} for t in todos]
            return ToolRun("update_plan", {"plan": plan}, "Plan updated")
        if self.tool == "gemini-cli":
            return ToolRun(
                "write_todos",
                {"todos": [{"description": t["content"], "status": t["status"]} for t in todos]},
                "Successfully updated the todo list. The current list is now:\n"
                + "\n".join(f"{i + 1}. [{t['status']}] {t['content']}" for i, t in enumerate(todos)),
            )
        return self.listing("")

"""Session-shape planning: the user's requests and the tool steps that answer them, drawn from `calib.synth.content`."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from calib.synth import content as C


@dataclass
class StepPlan:
    """One planned step: the tool runs it makes, or the closing text of the turn."""

    runs: list[C.ToolRun] = field(default_factory=list)
    action: str = "shell"  # what the calls do, for the remark the model makes before them
    text: str = ""
    final: bool = False


class SessionPlanner:
    """Builds one session's turns from the content module, tracking the project state it changes."""

    def __init__(self, tool: str, rng: random.Random, provider: str, model: str, lang: str) -> None:
        self.tool = tool
        self.rng = rng
        self.provider = provider
        self.model = model
        self.lang = lang
        self.project = C.make_project(rng)
        self.kit = C.Toolkit(tool, rng, self.project)
        self.words = dict(self.project.words)
        self.words["file"] = C.main_file(self.project)
        self.changed: list[str] = []
        self.asked: set[str] = set()

    def _change(self, rel: str) -> None:
        if rel not in self.changed:
            self.changed.append(rel)

    def _tests(self, plans: list[StepPlan], *, failing: bool = False) -> str:
        cmd, out = C.test_run(self.rng, self.project, failing=failing)
        run = self.kit.shell(cmd, out, exit_code=1 if failing else 0, description="Run the test suite")
        plans.append(StepPlan([run], "test"))
        return f"`{cmd}` passes." if not failing else f"`{cmd}` fails."

    def first_turn(self) -> tuple[str, list[StepPlan]]:
        """The opening request and the steps that answer it."""
        rng, kit, p = self.rng, self.kit, self.project
        kind = rng.choices(C.TASK_KINDS, weights=C.TASK_WEIGHTS)[0]
        prompt = C.task_prompt(rng, self.lang, kind, self.words)
        main, test = C.main_file(p), C.test_file(p)
        plans: list[StepPlan] = []
        if kind == "explain":  # look around, then answer
            plans.append(StepPlan([kit.listing("")], "explore"))
            plans.append(StepPlan([kit.read(main), kit.read("README.md")], "read"))
            if rng.random() < 0.5:
                cfg = next((x for x in p.layout if x.endswith((".yaml", ".toml", ".json"))), main)
                plans.append(StepPlan([kit.read(cfg)], "read"))
            plans.append(StepPlan(text=C.explain_answer(rng, self.lang, p), final=True))
            return prompt, plans
        if self.tool in ("opencode", "claude-code", "codex") and rng.random() < 0.45:
            items = ["Reproduce the problem", "Find the root cause", "Fix it", "Run the tests"]
            plans.append(StepPlan([kit.todo(items)], "plan"))
        if kind == "ci":
            self._tests(plans, failing=True)
        explore = (
            [kit.grep(self.words["num"] if kind != "retry" else self.words["verb"])]
            if rng.random() < 0.6
            else []
        )
        if not explore or rng.random() < 0.4:
            if rng.random() < 0.25:  # some models list with the shell rather than the listing tool
                listing = kit.shell("ls -la", C.ls_output(rng, p), description="List the project root")
                explore.insert(0, listing)
            else:
                explore.insert(0, kit.listing(""))
        plans.append(StepPlan(explore, "explore"))
        if rng.random() < 0.15:
            plans.append(StepPlan([kit.read(main.replace(".", "_old.", 1), missing=True)], "read"))
        reads = [kit.read(main)]
        if rng.random() < 0.5:
            reads.append(kit.read(test))
        plans.append(StepPlan(reads, "read"))
        if rng.random() < 0.15:
            plans.append(StepPlan([kit.api_call()], "shell"))
        if kind != "ci" and rng.random() < 0.6:
            self._tests(plans, failing=True)
        run, _diff = kit.edit(main)
        self._change(main)
        plans.append(StepPlan([run], "edit"))
        if kind in ("feature", "review") and rng.random() < 0.5:
            run, _diff = kit.edit(main)
            plans.append(StepPlan([run], "edit"))
        tests = "Not run yet; say if you want me to run the suite."
        if rng.random() < 0.85:
            tests = self._tests(plans)
        plans.append(
            StepPlan(text=C.final_answer(rng, self.lang, kind, self.words, self.changed, tests), final=True)
        )
        return prompt, plans

    def followup_turn(self) -> tuple[str, list[StepPlan]]:
        """A follow-up request and the steps that answer it."""
        rng, kit, p = self.rng, self.kit, self.project
        # A user rarely asks for the same follow-up twice: draw among the kinds not asked yet.
        fresh = [
            (k, w)
            for k, w in zip(C.FOLLOWUP_KINDS, C.FOLLOWUP_WEIGHTS, strict=True)
            if k not in self.asked and (k != "migration" or any(x.endswith(".sql") for x in p.layout))
        ] or [("answer", 1)]
        kind = rng.choices([k for k, _ in fresh], weights=[w for _, w in fresh])[0]
        self.asked.add(kind)
        prompt = C.followup_prompt(rng, self.lang, kind, self.words)
        plans: list[StepPlan] = []
        tests = ""
        if kind == "test":
            rel = C.test_file(p)
            body = C.file_text(rng, p, rel) + C.fill(
                "\n\ndef test_empty_input_gives_empty_totals():\n    assert totals_by_@group@([]) == {}\n",
                self.words,
            )
            plans.append(StepPlan([kit.write(rel, body)], "write"))
            self._change(rel)
            tests = self._tests(plans)
        elif kind == "lint":
            cmd, out = C.lint_output(rng, p)
            plans.append(StepPlan([kit.shell(cmd, out, exit_code=1, description="Run the linter")], "shell"))
            run, _ = kit.edit(C.main_file(p))
            self._change(C.main_file(p))
            plans.append(StepPlan([run], "edit"))
            plans.append(
                StepPlan([kit.shell(cmd, "All checks passed!\n", description="Run the linter")], "shell")
            )
            tests = f"`{cmd}` is clean now."
        elif kind == "git":
            diff = ""
            for rel in self.changed[:2]:
                edit = C.pick_edit(rng, C.file_text(rng, p, rel))
                if edit:
                    diff += C.unified_diff(rel, edit[0], edit[1], edit[2])
            s_cmd, s_out = C.git_output(rng, p, "status")
            d_cmd, d_out = C.git_output(rng, p, "diff", diff)
            plans.append(StepPlan([kit.shell(s_cmd, s_out), kit.shell(d_cmd, d_out)], "shell"))
            if rng.random() < 0.4:
                l_cmd, l_out = C.git_output(rng, p, "log")
                plans.append(StepPlan([kit.shell(l_cmd, l_out)], "shell"))
        elif kind == "readme":
            plans.append(StepPlan([kit.read("README.md")], "read"))
            run, _ = kit.edit("README.md")
            self._change("README.md")
            plans.append(StepPlan([run], "edit"))
        elif kind == "api":
            plans.append(StepPlan([kit.api_call()], "shell"))
            fixture = next((x for x in p.layout if "fixtures" in x), None)
            if fixture and rng.random() < 0.6:
                plans.append(StepPlan([kit.read(fixture)], "read"))
        elif kind == "migration":
            sql = next(x for x in p.layout if x.endswith(".sql"))
            plans.append(StepPlan([kit.read(sql)], "read"))
            new = sql.replace("0001_create", "0002_index")
            body = C.fill(
                "-- speeds up the per-@group@ totals\n"
                "CREATE INDEX IF NOT EXISTS @ents@_@group@_status_idx ON @ents@ (@group@, status);\n",
                self.words,
            )
            plans.append(StepPlan([kit.write(new, body)], "write"))
            self._change(new)
        if kind == "answer":
            text = C.explain_answer(rng, self.lang, p)
        else:
            text = C.followup_answer(rng, self.lang, kind, self.words, self.changed, tests)
        plans.append(StepPlan(text=text, final=True))
        return prompt, plans

"""Shell output: test runs, linters, `git` and `ls`, in each project language's own tools."""

from __future__ import annotations

import random

from calib.synth.content.project import Project, main_file, test_file
from calib.synth.content.words import fill, hexid


def test_command(project: Project) -> str:
    """The command that runs the project's test suite."""
    return {
        "python": f"pytest -q {test_file(project)}",
        "typescript": "npm test",
        "go": "go test ./...",
        "rust": "cargo test",
    }[project.language]


def test_run(rng: random.Random, project: Project, *, failing: bool) -> tuple[str, str]:
    """(command, output) of the project's test suite, failing or passing."""
    w = project.words
    cmd = test_command(project)
    lang = project.language
    if lang == "python":
        n = rng.randint(6, 40)
        tf = test_file(project)
        if not failing:
            dots = "." * n
            return (
                cmd,
                f"{dots}{' ' * max(1, 70 - len(dots))}[100%]\n{n} passed in {rng.uniform(0.2, 4):.2f}s\n",
            )
        out = "." * (n - 1) + "F\n"
        out += "=" * 30 + " FAILURES " + "=" * 30 + "\n"
        out += fill("_______ test_totals_skip_archived _______\n\n    def test_totals_skip_archived():\n", w)
        out += fill(
            "        items = [...]\n>       assert totals_by_@group@(items) == {'eu': 3, 'us': 5}\n"
            "E       AssertionError: assert {'eu': 7, 'us': 5} == {'eu': 3, 'us': 5}\nE         Differing items:\n"
            "E         {'eu': 7} != {'eu': 3}\n\n",
            w,
        )
        out += f"{tf}:{rng.randint(14, 40)}: AssertionError\n"
        out += (
            f"FAILED {tf}::test_totals_skip_archived - AssertionError: assert {{'eu': 7, 'us': 5}} == ...\n"
        )
        out += f"1 failed, {n - 1} passed in {rng.uniform(0.3, 5):.2f}s\n"
        return cmd, out
    if lang == "typescript":
        n = rng.randint(5, 30)
        head = f"\n RUN  v2.1.4 {project.root}\n\n"
        if not failing:
            return cmd, head + fill(
                f" ✓ test/@lent@.test.ts ({n} tests) {rng.randint(4, 90)}ms\n\n Test Files  1 passed (1)\n      Tests  {n} passed ({n})\n   Duration  {rng.uniform(0.4, 3):.2f}s\n",
                w,
            )
        return cmd, head + fill(
            f" ❯ test/@lent@.test.ts ({n} tests | 1 failed) {rng.randint(4, 90)}ms\n   × @lent@ > groups totals by @lgroup@\n"
            "     → expected [ [ 'eu', 7 ], [ 'us', 5 ] ] to deeply equal [ [ 'eu', 3 ], [ 'us', 5 ] ]\n\n"
            f" Test Files  1 failed (1)\n      Tests  1 failed | {n - 1} passed ({n})\n",
            w,
        )
    if lang == "go":
        if not failing:
            return cmd, fill(
                f"ok  \tgithub.com/acme/{project.name}/internal/@pkg@\t{rng.uniform(0.01, 0.9):.3f}s\n"
                f"?   \tgithub.com/acme/{project.name}/cmd/server\t[no test files]\n",
                w,
            )
        return cmd, fill(
            "--- FAIL: TestValidate (0.00s)\n    @ent@_test.go:8: expected an error for a negative @num@\nFAIL\n"
            f"FAIL\tgithub.com/acme/{project.name}/internal/@pkg@\t0.{rng.randint(10, 99)}s\nFAIL\n",
            w,
        )
    if not failing:
        n = rng.randint(3, 20)
        return cmd, (
            f"   Compiling {project.name} v0.1.0 ({project.root})\n    Finished `test` profile [unoptimized + debuginfo] target(s) in {rng.uniform(1, 9):.2f}s\n"
            f"     Running unittests src/lib.rs\n\nrunning {n} tests\n"
            + "".join(f"test tests::case_{i} ... ok\n" for i in range(min(n, 6)))
            + f"\ntest result: ok. {n} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
        )
    return cmd, fill(
        f"   Compiling {project.name} v0.1.0 ({project.root})\nerror[E0308]: mismatched types\n"
        " --> src/@ent@.rs:42:9\n   |\n42 |         Ok(totals)\n   |         ^^^^^^^^^^ expected `BTreeMap<String, i64>`, found `Result<_, _>`\n\n"
        "error: could not compile due to 1 previous error\n",
        w,
    )


def git_output(rng: random.Random, project: Project, what: str, diff: str = "") -> tuple[str, str]:
    """(command, output) of a git command."""
    if what == "status":
        changed = rng.sample(project.layout[:6], k=rng.randint(1, 3))
        body = "On branch " + rng.choice(("main", "fix/retry-backoff", "feat/pagination")) + "\n"
        body += (
            'Changes not staged for commit:\n  (use "git add <file>..." to update what will be committed)\n'
        )
        body += "".join(f"\tmodified:   {p}\n" for p in changed)
        if rng.random() < 0.5:
            body += "\nUntracked files:\n\t" + test_file(project) + "\n"
        return "git status", body
    if what == "log":
        lines = []
        for _ in range(rng.randint(4, 10)):
            lines.append(
                f"{hexid(rng, 7)} {rng.choice(('fix', 'feat', 'chore', 'refactor', 'test'))}: "
                f"{rng.choice(('handle empty', 'add retry to', 'clean up', 'speed up', 'log'))} {project.words['ents']}"
            )
        return "git log --oneline -n 10", "\n".join(lines) + "\n"
    return "git diff", diff or "(no changes)\n"


def ls_output(rng: random.Random, project: Project, folder: str = "") -> str:
    """`ls -la` style listing of a folder of the project."""
    names = sorted(
        {p[len(folder) :].lstrip("/").split("/")[0] for p in project.layout if p.startswith(folder)}
    )
    lines = [f"total {rng.randint(20, 90)}"]
    for name in [".", "..", *names]:
        is_dir = name in (".", "..") or not ("." in name and not name.startswith("."))
        size = rng.randint(96, 640) if is_dir else rng.randint(120, 14000)
        perm = "drwxr-xr-x" if is_dir else "-rw-r--r--"
        lines.append(
            f"{perm}  {rng.randint(1, 9):>2} dev  staff  {size:>6} Feb {rng.randint(1, 28):>2} {rng.randint(8, 19):02d}:{rng.randint(0, 59):02d} {name}"
        )
    return "\n".join(lines) + "\n"


def lint_output(rng: random.Random, project: Project) -> tuple[str, str]:
    """(command, output) of the project's linter or type checker, with a few findings."""
    w = project.words
    f = main_file(project)
    if project.language == "python":
        return "ruff check .", (
            f"{f}:{rng.randint(3, 9)}:1: F401 [*] `collections.abc.Iterable` imported but unused\n"
            f"{f}:{rng.randint(40, 90)}:89: E501 Line too long (131 > 110)\nFound 2 errors.\n[*] 1 fixable with the `--fix` option.\n"
        )
    if project.language == "typescript":
        return "npx tsc --noEmit", fill(
            f"{f}({rng.randint(20, 60)},{rng.randint(3, 30)}): error TS2345: Argument of type 'string | undefined' is not assignable to parameter of type 'string'.\n"
            "  Type 'undefined' is not assignable to type 'string'.\n\nFound 1 error in "
            + f
            + ":"
            + str(rng.randint(20, 60))
            + "\n",
            w,
        )
    if project.language == "go":
        return "go vet ./...", fill(
            f"# github.com/acme/{project.name}/internal/@pkg@\n{f}:{rng.randint(30, 80)}:3: fmt.Errorf format %d has arg v.@Text@ of wrong type string\n",
            w,
        )
    return "cargo clippy", fill(
        f"warning: this `if` has identical blocks\n  --> src/@ent@.rs:{rng.randint(20, 60)}:9\n   |\n   = help: for further information visit https://rust-lang.github.io/rust-clippy/\n\nwarning: `{project.name}` (lib) generated 1 warning\n",
        w,
    )

"""The text of each project file (source in four languages, tests, SQL, YAML, README, JSON), made on first read."""

from __future__ import annotations

import json
import random

from calib.synth.content.code_go import GO_BLOCKS, GO_HEADER
from calib.synth.content.code_python import PY_BLOCKS, PY_HEADER
from calib.synth.content.code_rust import RS_BLOCKS, RS_HEADER
from calib.synth.content.code_typescript import TS_BLOCKS, TS_HEADER
from calib.synth.content.payloads import api_records
from calib.synth.content.project import Project, SourceFile, main_file
from calib.synth.content.words import fill

PURPOSES = (
    "models and helpers",
    "service layer",
    "persistence and caching",
    "API client",
    "background processing",
    "validation rules",
)
CJK_COMMENTS = (
    "注意：这里的顺序很重要，不要随意调整",
    "TODO: 大量数据时需要分页处理",
    "ここでは未処理のものだけを対象にする",
    "兼容旧版本的数据格式",
    "タイムアウトした場合は次のバッチで再試行される",
    "process pending items only",
    "keep the original order for stable output",
)


def file_text(rng: random.Random, project: Project, path: str) -> str:
    """The current text of a project file, generated on first read."""
    existing = project.files.get(path)
    if existing is not None:
        return existing.text
    text = _generate_file(rng, project, path)
    project.files[path] = SourceFile(path, text)
    return text


def _code(rng: random.Random, project: Project, header: str, blocks: list[str], n: int) -> str:
    words = dict(project.words)
    words["purpose"] = rng.choice(PURPOSES)
    words["cjk_comment"] = rng.choice(CJK_COMMENTS)
    chosen = rng.sample(blocks, k=min(n, len(blocks)))
    return fill(header + "".join(chosen), words)


def _generate_file(rng: random.Random, project: Project, path: str) -> str:
    w = project.words
    if path.endswith(".py") and "test" in path and not path.endswith("conftest.py"):
        return _py_tests(rng, project)
    if path.endswith("__init__.py"):
        return f'"""{project.name}: {w["domain"]} tooling."""\n\n__version__ = "0.{rng.randint(1, 9)}.{rng.randint(0, 20)}"\n'
    if path.endswith("conftest.py"):
        return fill(
            'import pytest\n\n\n@pytest.fixture\ndef @ent@_payload() -> dict:\n    return {"id": "@ent@-1", "@text@": "x", "@num@": 3, "status": "pending", "created_at": "2026-01-05T10:00:00"}\n',
            w,
        )
    if path.endswith(".py"):
        return _code(rng, project, PY_HEADER, PY_BLOCKS, rng.randint(2, 5))
    if path.endswith(".test.ts"):
        return _ts_tests(rng, project)
    if path.endswith(".ts"):
        return _code(rng, project, TS_HEADER, TS_BLOCKS, rng.randint(2, 4))
    if path.endswith("_test.go"):
        return fill(
            'package @pkg@\n\nimport "testing"\n\nfunc TestValidate(t *testing.T) {\n\tv := &@Ent@{ID: "a1", @Num@: -1}\n\tif err := v.Validate(); err == nil {\n\t\tt.Fatal("expected an error for a negative @num@")\n\t}\n}\n',
            w,
        )
    if path.endswith(".go"):
        return _code(rng, project, GO_HEADER, GO_BLOCKS, rng.randint(2, 4))
    if path.endswith(".rs"):
        return _code(rng, project, RS_HEADER, RS_BLOCKS, rng.randint(2, 4))
    if path.endswith(".sql"):
        return _sql(project)
    if path.endswith(".yaml"):
        return _yaml(rng, project)
    if path.endswith("README.md"):
        return _readme(rng, project)
    if path.endswith(".json") and "fixtures" in path:
        return json.dumps(api_records(rng, project, rng.randint(2, 4)), indent=2, ensure_ascii=False) + "\n"
    if path.endswith("package.json"):
        return json.dumps(
            {
                "name": project.name,
                "version": f"1.{rng.randint(0, 9)}.{rng.randint(0, 30)}",
                "type": "module",
                "scripts": {"build": "tsc -p .", "test": "vitest run", "lint": "eslint src"},
                "dependencies": {"zod": "^3.23.8", "pino": "^9.4.0"},
                "devDependencies": {"typescript": "^5.6.3", "vitest": "^2.1.4", "eslint": "^9.13.0"},
            },
            indent=2,
        )
    if path.endswith("tsconfig.json"):
        return json.dumps(
            {
                "compilerOptions": {
                    "target": "ES2022",
                    "module": "NodeNext",
                    "strict": True,
                    "outDir": "dist",
                    "declaration": True,
                },
                "include": ["src"],
            },
            indent=2,
        )
    if path.endswith("pyproject.toml"):
        return (
            f'[project]\nname = "{project.name}"\nversion = "0.{rng.randint(1, 9)}.0"\nrequires-python = ">=3.11"\n'
            'dependencies = ["httpx>=0.27", "pydantic>=2.7"]\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
        )
    if path.endswith("go.mod"):
        return f"module github.com/acme/{project.name}\n\ngo 1.23\n\nrequire github.com/jackc/pgx/v5 v5.7.1\n"
    if path.endswith("Cargo.toml"):
        return (
            f'[package]\nname = "{project.name}"\nversion = "0.{rng.randint(1, 9)}.0"\nedition = "2021"\n\n'
            '[dependencies]\nserde = { version = "1", features = ["derive"] }\nthiserror = "1"\n'
        )
    return f"// {path}\n"


def _py_tests(rng: random.Random, project: Project) -> str:
    w = project.words
    mod = main_file(project).split("/")[-1][:-3]
    pkg = project.name.replace("-", "_")
    body = f"from {pkg}.{mod} import *  # noqa: F403\n\n"
    body += fill(
        """import pytest


def test_validate_rejects_negative_@num@():
    item = @Ent@(id="a1", @text@="x", @num@=-1)
    assert validate_@ent@(item) == ["@num@ must be >= 0, got -1"]


def test_totals_skip_archived():
    items = [
        @Ent@(id="a", @text@="x", @num@=3, @group@="eu"),
        @Ent@(id="b", @text@="y", @num@=4, @group@="eu", status="archived"),
        @Ent@(id="c", @text@="z", @num@=5, @group@="us"),
    ]
    assert totals_by_@group@(items) == {"eu": 3, "us": 5}


@pytest.mark.parametrize("status", ["pending", "active"])
def test_known_statuses_are_valid(status):
    assert validate_@ent@(@Ent@(id="a", @text@="x", status=status)) == []
""",
        w,
    )
    return body


def _ts_tests(rng: random.Random, project: Project) -> str:
    return fill(
        """import { describe, expect, it } from "vitest";
import { parse@Ent@, totalsBy@Group@, validate@Ent@ } from "../src/@lent@";

describe("@lent@", () => {
  it("rejects a negative @lnum@", () => {
    const item = { id: "a1", @ltext@: "x", @lnum@: -1, @lgroup@: "eu", status: "pending", createdAt: "2026-01-05T10:00:00Z" } as const;
    expect(validate@Ent@(item)).toContain("@lnum@ must be >= 0, got -1");
  });

  it("groups totals by @lgroup@", () => {
    const totals = totalsBy@Group@([
      parse@Ent@({ id: "a", @ltext@: "x", @lnum@: 3, @lgroup@: "eu", status: "done", createdAt: "2026-01-05T10:00:00Z" }),
      parse@Ent@({ id: "b", @ltext@: "y", @lnum@: 5, @lgroup@: "us", status: "done", createdAt: "2026-01-05T10:00:00Z" }),
    ]);
    expect([...totals.entries()]).toEqual([["eu", 3], ["us", 5]]);
  });
});
""",
        project.words,
    )


def _sql(project: Project) -> str:
    return fill(
        """-- @Domain@ tables
CREATE TABLE IF NOT EXISTS @ents@ (
    id            TEXT PRIMARY KEY,
    @text@ TEXT NOT NULL,
    @num@  BIGINT NOT NULL DEFAULT 0 CHECK (@num@ >= 0),
    @group@ TEXT NOT NULL DEFAULT 'default',
    status        TEXT NOT NULL DEFAULT 'pending',
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS @ents@_status_idx ON @ents@ (status, created_at DESC);
CREATE INDEX IF NOT EXISTS @ents@_@group@_idx ON @ents@ (@group@);
""",
        project.words,
    )


def _yaml(rng: random.Random, project: Project) -> str:
    return fill(
        f"""# settings for {project.name}
server:
  host: 0.0.0.0
  port: {rng.choice((8000, 8080, 3000, 9090))}
  request_timeout_ms: {rng.choice((2000, 5000, 15000))}
database:
  url: postgres://app@localhost:5432/@domain@
  pool_size: {rng.choice((5, 10, 20))}
@collab@:
  batch_size: @n@
  max_attempts: @n3@
  backoff: exponential
logging:
  level: info
  format: json
""",
        project.words,
    )


def _readme(rng: random.Random, project: Project) -> str:
    w = project.words
    run = {
        "python": "pip install -e '.[dev]'\npytest -q",
        "typescript": "npm install\nnpm test",
        "go": "go build ./...\ngo test ./...",
        "rust": "cargo build\ncargo test",
    }[project.language]
    text = fill(
        f"""# {project.name}

Handles @ents@ for the @collab@ pipeline: validation, grouping by @group@, retries against the upstream API.

## Development

```sh
{run}
```

## Layout

"""
        + "\n".join(f"- `{p}`" for p in project.layout[:6])
        + "\n",
        w,
    )
    if rng.random() < 0.35:
        text += fill(
            "\n## 日本語メモ\n\n@ents@ の処理はバッチ単位で行われます。失敗したものは @n3@ 回まで再試行されます。\n"
            "設定は `config/settings.yaml` を参照してください。\n",
            w,
        )
    return text

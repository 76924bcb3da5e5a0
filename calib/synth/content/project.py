"""The synthetic project a session works in: its name, language, vocabulary and file tree."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from calib.synth.content.words import DOMAINS, HOMES, LANGUAGES, SUFFIXES, VERBS, camel, lower_camel, plural


@dataclass
class SourceFile:
    """One file of the synthetic project."""

    path: str  # relative to the project root
    text: str


@dataclass
class Project:
    """The repository a session works in, with files generated on first use."""

    name: str
    root: str
    language: str
    domain: str
    words: dict[str, str]
    files: dict[str, SourceFile] = field(default_factory=dict)
    layout: list[str] = field(default_factory=list)  # every path that exists, for listings

    @property
    def ext(self) -> str:
        return {"python": "py", "typescript": "ts", "go": "go", "rust": "rs"}[self.language]

    def abs(self, rel: str) -> str:
        return f"{self.root}/{rel}"


def _words(rng: random.Random, domain: str) -> dict[str, str]:
    ent, second, num, text, group, collab = DOMAINS[domain]
    return {
        "domain": domain,
        "Domain": domain.capitalize(),
        "ent": ent,
        "Ent": camel(ent),
        "lent": lower_camel(ent),
        "ents": plural(ent),
        "Ents": camel(plural(ent)),
        "second": second,
        "Second": camel(second),
        "num": num,
        "Num": camel(num),
        "lnum": lower_camel(num),
        "text": text,
        "Text": camel(text),
        "ltext": lower_camel(text),
        "group": group,
        "Group": camel(group),
        "lgroup": lower_camel(group),
        "collab": collab,
        "CONST": ent.upper(),
        "pkg": domain,
        "verb": rng.choice(VERBS),
        "Verb": "",
        "n": str(rng.choice((20, 25, 50, 100, 200, 500))),
        "n3": str(rng.choice((3, 4, 5))),
        "ttl": str(rng.choice((30, 60, 120, 300))),
    }


def make_project(rng: random.Random, language: str | None = None) -> Project:
    """A fresh project: name, root folder, language and the file tree (contents come later)."""
    domain = rng.choice(sorted(DOMAINS))
    language = language or rng.choices(LANGUAGES, weights=(4, 3, 2, 1))[0]
    name = f"{domain}-{rng.choice(SUFFIXES)}"
    words = _words(rng, domain)
    words["Verb"] = camel(words["verb"])
    root = f"{rng.choice(HOMES)}/{name}"
    project = Project(name=name, root=root, language=language, domain=domain, words=words)
    ent, second, collab = words["ent"], words["second"], words["collab"]
    if language == "python":
        pkg = name.replace("-", "_")
        project.layout = [
            f"src/{pkg}/__init__.py",
            f"src/{pkg}/{plural(ent)}.py",
            f"src/{pkg}/{second}.py",
            f"src/{pkg}/{collab}.py",
            f"src/{pkg}/config.py",
            f"tests/test_{plural(ent)}.py",
            f"tests/test_{collab}.py",
            "tests/conftest.py",
            "pyproject.toml",
            "README.md",
            f"migrations/0001_create_{plural(ent)}.sql",
            "config/settings.yaml",
            f"tests/fixtures/{plural(ent)}.json",
        ]
    elif language == "typescript":
        project.layout = [
            "src/index.ts",
            f"src/{lower_camel(ent)}.ts",
            f"src/{lower_camel(second)}.ts",
            f"src/{collab}.ts",
            "src/logger.ts",
            f"test/{lower_camel(ent)}.test.ts",
            "package.json",
            "tsconfig.json",
            "README.md",
            f"migrations/0001_create_{plural(ent)}.sql",
            f"test/fixtures/{plural(ent)}.json",
        ]
    elif language == "go":
        project.layout = [
            "cmd/server/main.go",
            f"internal/{domain}/{ent}.go",
            f"internal/{domain}/{second}.go",
            f"internal/{domain}/{ent}_test.go",
            f"internal/{collab}/{collab}.go",
            "go.mod",
            "README.md",
            f"migrations/0001_create_{plural(ent)}.sql",
            "config/settings.yaml",
        ]
    else:
        project.layout = [
            "src/main.rs",
            "src/lib.rs",
            f"src/{ent}.rs",
            f"src/{second}.rs",
            f"src/{collab}.rs",
            f"tests/{ent}_test.rs",
            "Cargo.toml",
            "README.md",
            "config/settings.yaml",
        ]
    return project


def main_file(project: Project) -> str:
    """The file that holds the main entity (what most tasks are about)."""
    return project.layout[1]


def test_file(project: Project) -> str:
    """The test file of the main entity."""
    for path in project.layout:
        if "test" in path and not path.endswith((".json", "conftest.py")):
            return path
    return project.layout[-1]

"""Realistic content for synthetic coding sessions: projects, source files, prompts, tool output, prose.

Everything is drawn from one `random.Random` handed in by the generator, so a seed fixes every text.
The texts are written here from templates (no third-party text is embedded): source files in Python,
TypeScript, Go and Rust plus SQL, YAML, Markdown and JSON; `grep`/`ls`/test/`git` output; JSON API
payloads; diffs; tool errors; user prompts in English, Chinese, Japanese and mixed; assistant replies,
reasoning and compaction summaries in each agent's own style.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

# -- vocabulary ---------------------------------------------------------------------------------------

# domain -> (main entity, second entity, numeric field, text field, grouping field, collaborator)
DOMAINS: dict[str, tuple[str, str, str, str, str, str]] = {
    "invoice": ("invoice", "line_item", "amount_cents", "customer_email", "currency", "billing"),
    "order": ("order", "cart", "quantity", "sku", "warehouse", "checkout"),
    "webhook": ("webhook", "delivery", "attempts", "target_url", "event_type", "dispatcher"),
    "session": ("session", "token", "ttl_seconds", "user_agent", "region", "auth"),
    "report": ("report", "metric", "value", "title", "period", "analytics"),
    "inventory": ("item", "stock_level", "on_hand", "location_code", "category", "warehouse"),
    "payment": ("payment", "refund", "amount_cents", "reference", "method", "ledger"),
    "schedule": ("job", "run", "duration_ms", "cron_expr", "queue", "scheduler"),
    "upload": ("upload", "chunk", "size_bytes", "content_type", "bucket", "storage"),
    "ticket": ("ticket", "comment", "priority", "subject", "assignee", "helpdesk"),
    "feed": ("feed", "entry", "word_count", "source_url", "language", "reader"),
    "metric": ("sample", "series", "value", "metric_name", "host", "telemetry"),
}
SUFFIXES = ("service", "api", "worker", "cli", "core", "sync", "kit", "hub", "gateway")
STATUSES = ("pending", "active", "failed", "done", "archived", "queued", "paid", "expired")
VERBS = ("load", "parse", "validate", "render", "fetch", "sync", "compute", "normalize", "flush", "resolve")
HOMES = ("/home/dev/src", "/home/mika/work", "/Users/alex/code", "/Users/chen/projects", "/srv/repos")
LANGUAGES = ("python", "typescript", "go", "rust")
CJK_PRODUCTS = (
    "無線マウス",
    "机械键盘",
    "保温杯",
    "ノートパソコンスタンド",
    "蓝牙耳机",
    "抹茶ラテ",
    "雨伞",
    "数据线",
)
PEOPLE = ("alice", "bob", "chen.wei", "sato.yuki", "maria", "li.na", "tanaka", "omar", "priya")


def camel(name: str) -> str:
    """`line_item` -> `LineItem`."""
    return "".join(w.capitalize() for w in name.split("_"))


def lower_camel(name: str) -> str:
    """`line_item` -> `lineItem`."""
    c = camel(name)
    return c[:1].lower() + c[1:]


def plural(name: str) -> str:
    """A good-enough English plural of an identifier."""
    if name.endswith(("s", "x", "ch")):
        return name + "es"
    if name.endswith("y") and name[-2:-1] not in "aeiou":
        return name[:-1] + "ies"
    return name + "s"


def fill(template: str, words: dict[str, str]) -> str:
    """Replace `@key@` markers (chosen so they never clash with code braces or `$`)."""
    return re.sub(r"@(\w+)@", lambda m: words.get(m.group(1), m.group(0)), template)


def hexid(rng: random.Random, n: int) -> str:
    """`n` random lowercase hex digits."""
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


# -- source files --------------------------------------------------------------------------------------

PY_HEADER = '''"""@Domain@ @purpose@."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

log = logging.getLogger(__name__)

@CONST@_STATUSES = frozenset({"pending", "active", "failed", "done"})
DEFAULT_PAGE_SIZE = @n@


class @Ent@Error(RuntimeError):
    """Raised when a @ent@ cannot be processed."""


@dataclass
class @Ent@:
    id: str
    @text@: str
    @num@: int = 0
    @group@: str = "default"
    status: str = "pending"
    created_at: datetime = field(default_factory=datetime.utcnow)
    tags: list[str] = field(default_factory=list)
'''

PY_BLOCKS = [
    '''

def validate_@ent@(@ent@: @Ent@) -> list[str]:
    """Return the problems found in a @ent@; empty when it is valid."""
    problems: list[str] = []
    if not @ent@.@text@:
        problems.append("@text@ is required")
    if @ent@.@num@ < 0:
        problems.append(f"@num@ must be >= 0, got {@ent@.@num@}")
    if @ent@.status not in @CONST@_STATUSES:
        problems.append(f"unknown status {@ent@.status!r}")
    return problems
''',
    '''

def @verb@_with_retry(client: Any, @ent@_id: str, *, attempts: int = @n3@) -> @Ent@:
    """Call the upstream API, backing off exponentially on timeouts."""
    delay = 0.5
    last_error: Exception | None = None
    for attempt in range(1, attempts + 1):
        try:
            return client.@verb@(@ent@_id)
        except TimeoutError as exc:
            last_error = exc
            log.warning("@verb@ %s failed (attempt %d/%d)", @ent@_id, attempt, attempts)
            time.sleep(delay)
            delay *= 2
    raise @Ent@Error(f"giving up on {@ent@_id} after {attempts} attempts") from last_error
''',
    '''

def totals_by_@group@(@ents@: Iterable[@Ent@]) -> dict[str, int]:
    """Sum @num@ per @group@, skipping archived records."""
    totals: dict[str, int] = defaultdict(int)
    for item in @ents@:
        if item.status == "archived":
            continue
        totals[item.@group@] += item.@num@
    return dict(sorted(totals.items()))
''',
    '''

def parse_@ent@(raw: dict[str, Any]) -> @Ent@:
    """Build a @Ent@ from an API payload."""
    try:
        created = datetime.fromisoformat(raw["created_at"])
    except (KeyError, ValueError) as exc:
        raise @Ent@Error(f"bad created_at in {raw.get('id')!r}") from exc
    return @Ent@(
        id=str(raw["id"]),
        @text@=raw.get("@text@", ""),
        @num@=int(raw.get("@num@", 0)),
        @group@=raw.get("@group@", "default"),
        status=raw.get("status", "pending"),
        created_at=created,
        tags=list(raw.get("tags", [])),
    )
''',
    '''

class @Ent@Cache:
    """Keeps recently used @ents@ in memory for a few seconds."""

    def __init__(self, ttl: float = @ttl@) -> None:
        self._ttl = ttl
        self._items: dict[str, tuple[float, @Ent@]] = {}

    def get(self, key: str) -> @Ent@ | None:
        entry = self._items.get(key)
        if entry is None:
            return None
        stored_at, value = entry
        if time.monotonic() - stored_at > self._ttl:
            del self._items[key]
            return None
        return value

    def put(self, key: str, value: @Ent@) -> None:
        self._items[key] = (time.monotonic(), value)

    def __len__(self) -> int:
        return len(self._items)
''',
    '''

async def fetch_all_@ents@(session: Any, base_url: str, page_size: int = DEFAULT_PAGE_SIZE) -> list[dict[str, Any]]:
    """Follow the cursor until the API has returned every page."""
    results: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": page_size}
        if cursor:
            params["cursor"] = cursor
        async with session.get(f"{base_url}/@ents@", params=params) as resp:
            resp.raise_for_status()
            body = await resp.json()
        results.extend(body["data"])
        cursor = body.get("next_cursor")
        if not cursor:
            return results
''',
    '''

def @verb@_batch(@ents@: list[@Ent@], *, chunk_size: int = @n@) -> int:
    """Process @ents@ in chunks; returns how many were handled."""
    handled = 0
    for start in range(0, len(@ents@), chunk_size):
        chunk = @ents@[start : start + chunk_size]
        # @cjk_comment@
        pending = [x for x in chunk if x.status == "pending"]
        for item in pending:
            item.status = "active"
        handled += len(pending)
        log.debug("chunk %d: %d of %d pending", start // chunk_size, len(pending), len(chunk))
    return handled
''',
    '''

def summarize(@ents@: list[@Ent@]) -> dict[str, Any]:
    """Counts per status and the newest record, for the dashboard."""
    by_status: dict[str, int] = defaultdict(int)
    for item in @ents@:
        by_status[item.status] += 1
    newest = max(@ents@, key=lambda x: x.created_at, default=None)
    return {
        "count": len(@ents@),
        "by_status": dict(by_status),
        "newest": newest.id if newest else None,
    }
''',
]

TS_HEADER = """// @Domain@ @purpose@.
import { z } from "zod";
import type { Logger } from "../logger";

export const @CONST@_STATUSES = ["pending", "active", "failed", "done"] as const;
export type @Ent@Status = (typeof @CONST@_STATUSES)[number];

export const @Ent@Schema = z.object({
  id: z.string(),
  @ltext@: z.string().min(1),
  @lnum@: z.number().int().nonnegative(),
  @lgroup@: z.string().default("default"),
  status: z.enum(@CONST@_STATUSES),
  createdAt: z.string().datetime(),
});

export type @Ent@ = z.infer<typeof @Ent@Schema>;

export class @Ent@Error extends Error {
  constructor(message: string, readonly @lent@Id?: string) {
    super(message);
    this.name = "@Ent@Error";
  }
}
"""

TS_BLOCKS = [
    """
export async function @verb@WithRetry(
  client: { @verb@(id: string): Promise<@Ent@> },
  id: string,
  attempts = @n3@,
): Promise<@Ent@> {
  let delay = 250;
  let lastError: unknown;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      return await client.@verb@(id);
    } catch (err) {
      lastError = err;
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay *= 2;
    }
  }
  throw new @Ent@Error(`giving up on ${id} after ${attempts} attempts: ${String(lastError)}`, id);
}
""",
    """
export function totalsBy@Group@(items: readonly @Ent@[]): Map<string, number> {
  const totals = new Map<string, number>();
  for (const item of items) {
    if (item.status === "failed") continue;
    totals.set(item.@lgroup@, (totals.get(item.@lgroup@) ?? 0) + item.@lnum@);
  }
  return new Map([...totals.entries()].sort(([a], [b]) => a.localeCompare(b)));
}
""",
    """
export function parse@Ent@(raw: unknown, log?: Logger): @Ent@ {
  const result = @Ent@Schema.safeParse(raw);
  if (!result.success) {
    log?.warn({ issues: result.error.issues }, "invalid @ent@ payload");
    throw new @Ent@Error(`invalid @ent@: ${result.error.issues.map((i) => i.path.join(".")).join(", ")}`);
  }
  return result.data;
}
""",
    """
export class @Ent@Cache {
  private readonly items = new Map<string, { storedAt: number; value: @Ent@ }>();

  constructor(private readonly ttlMs = @ttl@000) {}

  get(key: string): @Ent@ | undefined {
    const entry = this.items.get(key);
    if (!entry) return undefined;
    if (Date.now() - entry.storedAt > this.ttlMs) {
      this.items.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: @Ent@): void {
    this.items.set(key, { storedAt: Date.now(), value });
  }
}
""",
    """
export async function fetchAll@Ents@(baseUrl: string, pageSize = @n@): Promise<@Ent@[]> {
  const out: @Ent@[] = [];
  let cursor: string | undefined;
  do {
    const url = new URL(`${baseUrl}/@ents@`);
    url.searchParams.set("limit", String(pageSize));
    if (cursor) url.searchParams.set("cursor", cursor);
    const res = await fetch(url);
    if (!res.ok) throw new @Ent@Error(`GET ${url} -> ${res.status}`);
    const body = (await res.json()) as { data: unknown[]; next_cursor?: string };
    out.push(...body.data.map((d) => parse@Ent@(d)));
    cursor = body.next_cursor;
  } while (cursor);
  return out;
}
""",
    """
// @cjk_comment@
export function validate@Ent@(item: @Ent@): string[] {
  const problems: string[] = [];
  if (!item.@ltext@.trim()) problems.push("@ltext@ is required");
  if (item.@lnum@ < 0) problems.push(`@lnum@ must be >= 0, got ${item.@lnum@}`);
  if (!@CONST@_STATUSES.includes(item.status)) problems.push(`unknown status ${item.status}`);
  return problems;
}
""",
]

GO_HEADER = """// Package @pkg@ implements @domain@ @purpose@.
package @pkg@

import (
\t"context"
\t"errors"
\t"fmt"
\t"sort"
\t"time"
)

// Err@Ent@NotFound is returned when a @ent@ does not exist.
var Err@Ent@NotFound = errors.New("@ent@ not found")

// @Ent@ is one @ent@ as stored in the database.
type @Ent@ struct {
\tID        string    `json:"id"`
\t@Text@ string    `json:"@text@"`
\t@Num@  int64     `json:"@num@"`
\t@Group@    string    `json:"@group@"`
\tStatus    string    `json:"status"`
\tCreatedAt time.Time `json:"created_at"`
}

// Store loads and saves @ents@.
type Store interface {
\tGet(ctx context.Context, id string) (*@Ent@, error)
\tList(ctx context.Context, limit int) ([]@Ent@, error)
\tSave(ctx context.Context, v *@Ent@) error
}
"""

GO_BLOCKS = [
    """
// @Verb@WithRetry calls fn until it succeeds, the context ends or attempts run out.
func @Verb@WithRetry(ctx context.Context, attempts int, fn func(context.Context) error) error {
\tdelay := 200 * time.Millisecond
\tvar err error
\tfor i := 0; i < attempts; i++ {
\t\tif err = fn(ctx); err == nil {
\t\t\treturn nil
\t\t}
\t\tselect {
\t\tcase <-ctx.Done():
\t\t\treturn fmt.Errorf("@verb@: %w (last error: %v)", ctx.Err(), err)
\t\tcase <-time.After(delay):
\t\t}
\t\tdelay *= 2
\t}
\treturn fmt.Errorf("@verb@: giving up after %d attempts: %w", attempts, err)
}
""",
    """
// TotalsBy@Group@ sums @Num@ per @Group@, in key order.
func TotalsBy@Group@(items []@Ent@) []struct {
\tKey   string
\tTotal int64
} {
\tsums := map[string]int64{}
\tfor _, it := range items {
\t\tif it.Status == "failed" {
\t\t\tcontinue
\t\t}
\t\tsums[it.@Group@] += it.@Num@
\t}
\tkeys := make([]string, 0, len(sums))
\tfor k := range sums {
\t\tkeys = append(keys, k)
\t}
\tsort.Strings(keys)
\tout := make([]struct {
\t\tKey   string
\t\tTotal int64
\t}, 0, len(keys))
\tfor _, k := range keys {
\t\tout = append(out, struct {
\t\t\tKey   string
\t\t\tTotal int64
\t\t}{k, sums[k]})
\t}
\treturn out
}
""",
    """
// Validate reports what is wrong with a @ent@.
func (v *@Ent@) Validate() error {
\tvar errs []error
\tif v.@Text@ == "" {
\t\terrs = append(errs, errors.New("@text@ is required"))
\t}
\tif v.@Num@ < 0 {
\t\terrs = append(errs, fmt.Errorf("@num@ must be >= 0, got %d", v.@Num@))
\t}
\treturn errors.Join(errs...)
}
""",
    """
// Service coordinates the store and the clock.
type Service struct {
\tstore Store
\tnow   func() time.Time
\tttl   time.Duration
}

// Expire marks @ents@ older than the TTL as done and returns how many changed.
func (s *Service) Expire(ctx context.Context) (int, error) {
\t// @cjk_comment@
\titems, err := s.store.List(ctx, @n@)
\tif err != nil {
\t\treturn 0, fmt.Errorf("list @ents@: %w", err)
\t}
\tchanged := 0
\tfor i := range items {
\t\tif s.now().Sub(items[i].CreatedAt) < s.ttl || items[i].Status == "done" {
\t\t\tcontinue
\t\t}
\t\titems[i].Status = "done"
\t\tif err := s.store.Save(ctx, &items[i]); err != nil {
\t\t\treturn changed, err
\t\t}
\t\tchanged++
\t}
\treturn changed, nil
}
""",
]

RS_HEADER = """//! @Domain@ @purpose@.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum @Ent@Error {
    #[error("@ent@ {0} not found")]
    NotFound(String),
    #[error("invalid @ent@: {0}")]
    Invalid(String),
    #[error("upstream timed out after {0:?}")]
    Timeout(Duration),
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct @Ent@ {
    pub id: String,
    pub @text@: String,
    pub @num@: i64,
    pub @group@: String,
    pub status: Status,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Active,
    Failed,
    Done,
}
"""

RS_BLOCKS = [
    """
impl @Ent@ {
    /// Checks the invariants the API relies on.
    pub fn validate(&self) -> Result<(), @Ent@Error> {
        if self.@text@.trim().is_empty() {
            return Err(@Ent@Error::Invalid("@text@ is required".into()));
        }
        if self.@num@ < 0 {
            return Err(@Ent@Error::Invalid(format!("@num@ must be >= 0, got {}", self.@num@)));
        }
        Ok(())
    }
}
""",
    """
/// Sums `@num@` per `@group@`, skipping failed records.
pub fn totals_by_@group@(items: &[@Ent@]) -> BTreeMap<String, i64> {
    let mut totals = BTreeMap::new();
    for item in items.iter().filter(|i| i.status != Status::Failed) {
        *totals.entry(item.@group@.clone()).or_insert(0) += item.@num@;
    }
    totals
}
""",
    """
pub struct Cache {
    ttl: Duration,
    items: BTreeMap<String, (Instant, @Ent@)>,
}

impl Cache {
    pub fn new(ttl: Duration) -> Self {
        Self { ttl, items: BTreeMap::new() }
    }

    pub fn get(&mut self, key: &str) -> Option<&@Ent@> {
        // @cjk_comment@
        let expired = match self.items.get(key) {
            Some((at, _)) => at.elapsed() > self.ttl,
            None => return None,
        };
        if expired {
            self.items.remove(key);
            return None;
        }
        self.items.get(key).map(|(_, v)| v)
    }

    pub fn put(&mut self, key: String, value: @Ent@) {
        self.items.insert(key, (Instant::now(), value));
    }
}
""",
    """
pub fn @verb@_with_retry<F, T>(mut op: F, attempts: u32) -> Result<T, @Ent@Error>
where
    F: FnMut() -> Result<T, @Ent@Error>,
{
    let mut delay = Duration::from_millis(200);
    let mut last = None;
    for _ in 0..attempts {
        match op() {
            Ok(v) => return Ok(v),
            Err(e @ @Ent@Error::Timeout(_)) => {
                last = Some(e);
                std::thread::sleep(delay);
                delay *= 2;
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or(@Ent@Error::Timeout(delay)))
}
""",
]

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


def api_records(rng: random.Random, project: Project, n: int) -> list[dict[str, Any]]:
    """API-like records of the project's main entity (JSON payloads, some with CJK names)."""
    w = project.words
    out = []
    for _ in range(n):
        rid = f"{w['ent'][:3]}_{hexid(rng, 10)}"
        text_value: str
        if w["text"].endswith(("email",)):
            text_value = f"{rng.choice(PEOPLE)}@example.com"
        elif w["text"].endswith(("url",)):
            text_value = f"https://hooks.example.com/{hexid(rng, 8)}"
        elif rng.random() < 0.3:
            text_value = rng.choice(CJK_PRODUCTS)
        else:
            text_value = f"{w['domain']}-{rng.randint(100, 999)}"
        out.append(
            {
                "id": rid,
                w["text"]: text_value,
                w["num"]: rng.randint(0, 50000),
                w["group"]: rng.choice(("eu-west-1", "us-east-1", "ap-northeast-1", "default", "JPY", "EUR")),
                "status": rng.choice(STATUSES),
                "created_at": f"2026-0{rng.randint(1, 2)}-{rng.randint(10, 28)}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
                "tags": rng.sample(
                    ["priority", "beta", "legacy", "bulk", "manual", "retry"], k=rng.randint(0, 3)
                ),
                "meta": {"source": rng.choice(("api", "import", "backfill")), "version": rng.randint(1, 4)},
            }
        )
    return out


# -- shell output -------------------------------------------------------------------------------------


def _test_cmd(project: Project) -> str:
    return {
        "python": f"pytest -q {test_file(project)}",
        "typescript": "npm test",
        "go": "go test ./...",
        "rust": "cargo test",
    }[project.language]


def test_run(rng: random.Random, project: Project, *, failing: bool) -> tuple[str, str]:
    """(command, output) of the project's test suite, failing or passing."""
    w = project.words
    cmd = _test_cmd(project)
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


def unified_diff(path: str, old: str, new: str, line: int) -> str:
    """A small unified diff replacing `old` by `new` at `line`."""
    old_lines = old.splitlines()
    new_lines = new.splitlines()
    out = [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}"]
    out.append(f"@@ -{line},{len(old_lines)} +{line},{len(new_lines)} @@")
    out += [f"-{x}" for x in old_lines]
    out += [f"+{x}" for x in new_lines]
    return "\n".join(out) + "\n"


def pick_edit(rng: random.Random, text: str) -> tuple[str, str, int] | None:
    """An (old, new, line) one-line edit of `text`: flip a comparison, change a number, or annotate a line."""
    lines = text.splitlines()
    candidates = [
        i
        for i, line in enumerate(lines)
        if len(line.strip()) > 12
        and not line.strip().startswith(("import", "from", "use ", "package", "#!", "//!", '"""'))
        and lines.count(line) == 1
    ]
    if not candidates:
        return None
    i = rng.choice(candidates)
    old = lines[i]
    indent = old[: len(old) - len(old.lstrip())]
    body = old.strip()
    if "==" in body and rng.random() < 0.5:
        new = old.replace("==", "!=", 1)
    elif re.search(r"\b\d+\b", body):
        new = re.sub(r"\b(\d+)\b", lambda m: str(int(m.group(1)) * 2), old, count=1)
    else:
        comment = "#" if text.lstrip().startswith(('"""', "import", "from", "#")) else "//"
        new = f"{indent}{comment} NOTE: keep in sync with the API schema\n{old}"
    return old, new, i + 1


# -- prose: prompts, replies, reasoning, summaries ------------------------------------------------------

# What the opening request asks for; each kind has its own prompts, tool flow and closing answer.
TASK_KINDS = ("bug", "retry", "ci", "feature", "explain", "review")
TASK_WEIGHTS = (5, 3, 3, 3, 2, 2)

TASKS: dict[str, dict[str, list[str]]] = {
    "bug": {
        "en": [
            "The totals in `@file@` look wrong when a @ent@ is archived: archived ones still get counted. Can you find out why and fix it?",
            "Users report that the @group@ summary double counts @num@ after an archive. Please track it down in `@file@` and fix it.",
            "Something is off with `totals_by_@group@`: archived @ents@ show up in the dashboard numbers. Fix it without changing the API.",
        ],
        "zh": [
            "帮我看一下 `@file@` 里的汇总逻辑，为什么已归档的 @ent@ 还会被算进去？找到原因并修复。",
            "按 @group@ 汇总的 @num@ 不对，归档之后的数据还在统计里。请查一下 `@file@` 并修复。",
        ],
        "ja": [
            "`@file@` の集計がおかしいです。アーカイブ済みの @ent@ も数えられているようなので、原因を調べて直してください。",
            "@group@ ごとの @num@ の合計が合いません。アーカイブしたデータが含まれているようです。修正をお願いします。",
        ],
        "mixed": [
            "The @group@ totals are wrong again — 归档的 @ents@ 也被算进去了。Can you fix `@file@`?",
            "`@file@` の集計で archived な @ents@ が数えられています。Please fix it and add a regression test.",
        ],
    },
    "retry": {
        "en": [
            "Add retry with exponential backoff to `@verb@` in `@file@`. Max @n3@ attempts, and log each failure.",
            "`@verb@` gives up on the first timeout. Make it retry with backoff (start at 500ms, double each time, @n3@ attempts max).",
        ],
        "zh": ["请给 `@verb@` 加上指数退避重试，最多重试 @n3@ 次，每次失败都要打日志。"],
        "ja": [
            "`@verb@` がタイムアウトすることがあります。指数バックオフで最大 @n3@ 回リトライするようにしてください。"
        ],
        "mixed": ["The @verb@ retry is broken again. 日志里一直是 timeout，帮我看看 backoff 是不是没生效。"],
    },
    "ci": {
        "en": [
            "Tests are failing on CI after the last merge. Run them, figure out what broke and fix it without changing the test expectations.",
            "CI is red on main. Can you run the suite locally and fix whatever is failing?",
        ],
        "zh": ["测试在 CI 上一直失败，请先跑一下测试，找出问题并修复，不要改测试的期望值。"],
        "ja": ["CI でテストが落ちています。テストを実行して原因を特定し、修正してください。"],
        "mixed": [
            "`@file@` のテストが flaky です — please make it deterministic and explain the root cause."
        ],
    },
    "feature": {
        "en": [
            "I need a `validate_@ent@` check that rejects negative @num@ values. Please add it with tests.",
            "Can you add pagination to the @ents@ listing? The API returns `next_cursor`; we currently only read the first page.",
            "Can you make the @verb@ step idempotent? Running it twice should not double-count @num@.",
        ],
        "zh": ["请给 @ents@ 列表接口加上分页，API 会返回 `next_cursor`，现在只读了第一页。"],
        "ja": [
            "@ents@ の一覧 API にページネーションを追加してほしいです。既存のテストは壊さないようにお願いします。"
        ],
        "mixed": ["Please add a `validate_@ent@` check; エラーメッセージは英語のままで大丈夫です。"],
    },
    "explain": {
        "en": [
            "Explain how the @collab@ module talks to the @ents@ code. I'm new to this repo and want the big picture before I touch anything.",
            "Give me a quick tour of this project: where do @ents@ come from and where are they validated?",
        ],
        "zh": ["解释一下这个项目的目录结构，以及 @collab@ 模块是怎么和 @ents@ 交互的。"],
        "ja": ["このリポジトリの構成と、@collab@ モジュールの役割を説明してもらえますか？"],
        "mixed": ["Can you explain the layout of this repo? 特别是 @collab@ 模块是做什么的。"],
    },
    "review": {
        "en": [
            "Please review `@file@` for obvious bugs and edge cases (empty input, unicode, huge numbers) and fix what you find.",
            "The @ent@ cache never expires entries in production. Check the TTL handling in `@file@`.",
        ],
        "zh": ["`@file@` 里的缓存好像永远不会过期，帮我检查一下 TTL 的处理。"],
        "ja": ["`@file@` をレビューして、空入力や巨大な数値などのエッジケースの問題があれば直してください。"],
        "mixed": ["Can you refactor `@file@`? 现在的实现太长了，拆成几个小函数，每个都要有测试。"],
    },
}

FOLLOWUP_KINDS = ("test", "lint", "git", "answer", "readme", "api", "migration")
FOLLOWUP_WEIGHTS = (4, 3, 3, 2, 2, 2, 1)

FOLLOWUPS: dict[str, dict[str, list[str]]] = {
    "test": {
        "en": [
            "Thanks. Can you also add a test for the empty case?",
            "Please add a regression test for this so it doesn't come back.",
        ],
        "zh": ["没问题。再加一个空输入的测试用例吧。", "好的，再帮我补一个回归测试。"],
        "ja": ["ありがとうございます。空の入力に対するテストも追加してください。"],
        "mixed": ["Thanks! 再加一个空输入的 test case。"],
    },
    "lint": {
        "en": [
            "Looks good. Run the linter too and fix anything it reports.",
            "Can you make the linter happy before I push?",
        ],
        "zh": ["可以，再跑一下 lint，有问题顺便修一下。"],
        "ja": ["いいですね。ついでにリンターも実行して、警告があれば直してください。"],
        "mixed": ["OK 了，再跑一下 lint。"],
    },
    "git": {
        "en": [
            "Hmm, the CI still fails on the other job. Can you check `git status` and the diff before I push?",
            "What exactly did we change? Show me the diff.",
        ],
        "zh": ["提交之前帮我看一下 `git status` 和 diff。"],
        "ja": ["コミットする前に `git status` と差分を確認してもらえますか？"],
        "mixed": ["Before I commit — git diff 看一下改了哪些地方？"],
    },
    "answer": {
        "en": [
            "Why did you pick that approach over just filtering earlier? Keep it short.",
            "Perfect. Summarize what changed so I can paste it into the PR description.",
        ],
        "zh": [
            "这里为什么要这样写？有没有更简单的写法？简单说明一下就行。",
            "帮我总结一下这次改了什么，我要写到 PR 描述里。",
        ],
        "ja": ["変更内容を箇条書きでまとめてください。PR の説明に使います。"],
        "mixed": ["Why this approach? 简单解释一下就行。"],
    },
    "readme": {
        "en": ["Great, now update the README section about @ents@ to match."],
        "zh": ["可以，顺便把 README 里关于 @ents@ 的部分也更新一下。"],
        "ja": ["README の @ents@ の説明も今回の変更に合わせて更新してもらえますか？"],
        "mixed": ["Thanks! 顺便把 README 更新一下。"],
    },
    "api": {
        "en": [
            "Can you hit the local API and check the @ents@ payload looks right now?",
            "ok, one more thing: check what the API returns for @ents@ with the new field.",
        ],
        "zh": ["帮我调用一下本地 API，看看 @ents@ 返回的数据对不对。"],
        "ja": ["ローカルの API を叩いて、@ents@ のレスポンスが正しいか確認してください。"],
        "mixed": ["Can you curl the local API? 看看返回的 @ents@ 数据。"],
    },
    "migration": {
        "en": [
            "Can you double-check the SQL migration matches the new field?",
            "We also need an index on `@group@`. Add a migration.",
        ],
        "zh": ["再加一个迁移脚本，给 `@group@` 建索引。"],
        "ja": ["`@group@` にインデックスを追加するマイグレーションも作ってください。"],
        "mixed": ["Also add a migration — `@group@` 上面需要索引。"],
    },
}

# Short remarks before a tool call, by what the call does.
REMARKS: dict[str, dict[str, list[str]]] = {
    "explore": {
        "en": [
            "Let me look at how the project is laid out first.",
            "I'll search for where `@num@` is used.",
            "Let me find the relevant code.",
        ],
        "zh": ["我先看一下项目结构。", "搜索一下 `@num@` 在哪里用到。"],
        "ja": ["まずプロジェクトの構成を確認します。", "`@num@` を使っている箇所を検索します。"],
    },
    "read": {
        "en": [
            "Reading the relevant files.",
            "Let me read the file first.",
            "I'll check what the code currently does.",
        ],
        "zh": ["先读一下相关的文件。", "看一下现在的代码。"],
        "ja": ["関連するファイルを読みます。", "現在のコードを確認します。"],
    },
    "test": {
        "en": ["Running the test suite.", "Let me run the tests.", "Checking with the tests."],
        "zh": ["运行一下测试。", "跑一遍测试确认。"],
        "ja": ["テストを実行します。", "テストで確認します。"],
    },
    "edit": {
        "en": ["Making the change now.", "I'll make the edit.", "Applying the change."],
        "zh": ["找到原因了，现在修改。", "修改这一处。"],
        "ja": ["原因が分かりました。修正します。", "ここを修正します。"],
    },
    "write": {
        "en": ["Adding the new file.", "I'll write the test now."],
        "zh": ["新建文件。", "现在写测试。"],
        "ja": ["新しいファイルを追加します。", "テストを書きます。"],
    },
    "shell": {
        "en": ["Let me check.", "Running it now."],
        "zh": ["我看一下。", "运行一下。"],
        "ja": ["確認します。", "実行します。"],
    },
    "plan": {
        "en": ["I'll track the steps in a todo list."],
        "zh": ["先列一个待办清单。"],
        "ja": ["やることをリストにまとめます。"],
    },
}


def _pool(pools: dict[str, list[str]], lang: str, rng: random.Random) -> str:
    if lang == "mixed" and "mixed" not in pools:
        lang = rng.choice(("en", "zh", "ja"))
    return rng.choice(pools.get(lang) or pools["en"])


def task_prompt(rng: random.Random, lang: str, kind: str, words: dict[str, str]) -> str:
    """The opening request of a session, for a task kind."""
    text = fill(_pool(TASKS[kind], lang, rng), words)
    if lang == "en" and rng.random() < 0.3:
        text += "\n\n" + rng.choice(
            (
                "Context: this started after we bumped the client library last week.",
                "Don't touch the public API if you can avoid it.",
                "Keep the change small, we want to backport it.",
                "Here's what I see in the logs:\n```\n"
                + fill(
                    "2026-02-27T08:14:02Z WARN @collab@: @verb@ @ent@_8f2c failed (attempt 3/3): TimeoutError\n"
                    "2026-02-27T08:14:02Z ERROR @collab@: giving up on @ent@_8f2c\n",
                    words,
                )
                + "```",
            )
        )
    return text


def followup_prompt(rng: random.Random, lang: str, kind: str, words: dict[str, str]) -> str:
    """A later user message asking for a follow-up of the given kind."""
    return fill(_pool(FOLLOWUPS[kind], lang, rng), words)


def remark(rng: random.Random, lang: str, action: str, words: dict[str, str]) -> str:
    """A short remark the model makes before a tool call of the given kind."""
    pools = REMARKS.get(action, REMARKS["shell"])
    return fill(_pool(pools, lang if lang != "mixed" else "en", rng), words)


CAUSES = {
    "bug": (
        "`totals_by_@group@` added `@num@` before checking the status, so archived @ents@ were still counted.",
        "汇总时先累加了 `@num@`，之后才判断状态，所以已归档的 @ents@ 也被算进去了。",
        "`@num@` を集計した後でステータスを確認していたため、アーカイブ済みの @ents@ も数えられていました。",
    ),
    "retry": (
        "`@verb@` caught only the first timeout and gave up; it now retries with exponential backoff.",
        "`@verb@` 第一次超时就放弃了，现在改成了指数退避重试。",
        "`@verb@` は最初のタイムアウトで諦めていました。指数バックオフでリトライするようにしました。",
    ),
    "ci": (
        "The last merge flipped a status check, which broke the grouping test.",
        "上次合并把状态判断写反了，导致分组测试失败。",
        "前回のマージでステータスの判定が逆になり、グループ化のテストが失敗していました。",
    ),
    "feature": (
        "Added the new behaviour behind the existing function, so callers don't change.",
        "在原有函数里加上了新逻辑，调用方不需要改动。",
        "既存の関数に新しい処理を追加したので、呼び出し側の変更は不要です。",
    ),
    "review": (
        "The TTL comparison used the wrong clock value, so entries never expired; fixed and tidied the edge cases.",
        "TTL 的比较用错了时间，缓存永远不会过期；已修复并处理了边界情况。",
        "TTL の比較に誤った時刻を使っていたため期限切れになりませんでした。修正し、エッジケースも整理しました。",
    ),
}


def final_answer(
    rng: random.Random, lang: str, kind: str, words: dict[str, str], changed: list[str], tests: str
) -> str:
    """The model's closing message of a task turn: what it found and changed, in markdown."""
    files = "\n".join(f"- `{p}`" for p in changed) or "- (no files changed)"
    en, zh, ja = (fill(x, words) for x in CAUSES.get(kind, CAUSES["feature"]))
    if lang == "zh":
        return f"已完成修改。\n\n**原因**：{zh}\n\n**修改的文件**：\n{files}\n\n**验证**：{tests}\n\n如果需要，我可以再补充边界情况的测试。"
    if lang == "ja":
        return f"修正が完了しました。\n\n**原因**：{ja}\n\n**変更したファイル**：\n{files}\n\n**確認**：{tests}\n\n必要であればエッジケースのテストも追加します。"
    intro = rng.choice(
        (
            "Done. Here's a summary of the change.",
            "Fixed. The root cause and the change are below.",
            "I made the change; details below.",
        )
    )
    snippet = ""
    if kind == "bug" and rng.random() < 0.6:
        snippet = fill(
            '\n\nThe key part now reads:\n\n```\nfor item in @ents@:\n    if item.status == "archived":\n        continue\n    totals[item.@group@] += item.@num@\n```',
            words,
        )
    tail = " 需要的话我也可以补充中文注释。" if lang == "mixed" and rng.random() < 0.5 else ""
    return f"{intro}\n\n### What was wrong\n{en}{snippet}\n\n### Files changed\n{files}\n\n### Verification\n{tests}{tail}"


def followup_answer(
    rng: random.Random, lang: str, kind: str, words: dict[str, str], changed: list[str], tests: str
) -> str:
    """The closing message of a follow-up turn."""
    files = ", ".join(f"`{p}`" for p in changed[-2:]) or "nothing"
    if lang in ("zh", "ja"):
        done = {
            "test": ("已添加测试，", "テストを追加しました。"),
            "lint": ("已修复 lint 报告的问题，", "リンターの指摘を修正しました。"),
            "git": ("改动如上所示，涉及 ", "差分は上記のとおりです。対象："),
            "readme": ("README 已更新，", "README を更新しました。"),
            "api": ("API 返回的数据看起来是正确的，", "API のレスポンスは正しいようです。"),
            "migration": ("已添加迁移脚本，", "マイグレーションを追加しました。"),
        }.get(kind, ("已处理，", "対応しました。"))
        if lang == "zh":
            return f"{done[0]}相关文件：{files}。{tests}"
        return f"{done[1]}対象ファイル：{files}。{tests}"
    lines = {
        "test": f"Added the test in {files}. {tests}",
        "lint": f"The linter findings are fixed ({files}). {tests}",
        "git": f"The working tree has the changes shown above ({files}); nothing unexpected is staged.",
        "readme": f"Updated the README to describe the new behaviour ({files}).",
        "api": "The payload looks right: every record has an id, a status and the new field, and `next_cursor` is set when there are more pages.",
        "migration": f"Added the migration ({files}); it only creates an index, so it is safe to run online.",
    }
    return lines.get(kind, f"Done ({files}). {tests}")


def explain_answer(rng: random.Random, lang: str, project: Project) -> str:
    """A no-tool (or read-only) answer explaining part of the project."""
    w = project.words
    if lang == "zh":
        return fill(
            f"这个项目（`{project.name}`）主要分三层：\n\n1. `{main_file(project)}`：定义 @Ent@ 数据结构和校验逻辑；\n"
            "2. @collab@ 模块：负责批量处理和重试，失败时使用指数退避；\n3. 测试在 `tests/` 下，覆盖了汇总和校验。\n\n"
            "这样写的好处是每一层都可以单独测试。",
            w,
        )
    if lang == "ja":
        return fill(
            f"`{project.name}` は大きく三つの部分に分かれています。\n\n1. `{main_file(project)}`：@Ent@ のデータ構造と検証\n"
            "2. @collab@：バッチ処理とリトライ（指数バックオフ）\n3. テスト：集計と検証のケース\n\n各層を独立してテストできる構成です。",
            w,
        )
    tail = "\n\n要点是：每一层都可以单独测试。" if lang == "mixed" else ""
    return fill(
        f"Short version: `{main_file(project)}` owns the @Ent@ model and its validation, the @collab@ module batches "
        "work and retries upstream calls with exponential backoff, and the tests pin the grouping by @group@.\n\n"
        "Filtering before the sum avoids touching archived records at all, which also makes "
        f"the {rng.choice(('cache', 'retry', 'batch'))} path cheaper.{tail}",
        w,
    )


# Thought subjects and descriptions, by what the step is about to do.
REASONING: dict[str, list[tuple[str, str]]] = {
    "explore": [
        (
            "Mapping the Project Layout",
            "I'll list the source folder to understand how the @collab@ module and the @ent@ model relate.",
        ),
        (
            "Locating the Aggregation",
            "I'm looking for where @num@ gets summed. The grouping by @group@ is the likely culprit, so I'll search for it before reading whole files.",
        ),
    ],
    "read": [
        (
            "Reading the Implementation",
            "The search points at one file. I'll read it whole, together with its tests, before deciding anything.",
        ),
        (
            "Reading the Test Expectations",
            "The failing assertion expects archived @ents@ to be skipped. I need to confirm the test is right before changing the implementation.",
        ),
    ],
    "test": [
        (
            "Running the Suite",
            "I want the exact failure first, so I'll run the tests and read the assertion message.",
        ),
        (
            "Verifying the Change",
            "The edit is in. Running the suite again tells me whether anything else depended on the old behaviour.",
        ),
    ],
    "edit": [
        (
            "Planning the Fix",
            "Moving the status check ahead of the accumulation is the smallest change. I'll make that edit and re-run the suite.",
        ),
        (
            "Checking the Retry Path",
            "The @verb@ call retries on TimeoutError only; other errors bubble up. The backoff should double each time, starting at half a second.",
        ),
        (
            "Considering Edge Cases",
            "Empty input should give an empty mapping, and very large @num@ values must not overflow; the SQL column is BIGINT, so that is fine.",
        ),
    ],
    "write": [
        (
            "Writing the Test",
            "A small test that pins the empty case and the archived case is enough; it should fail on the old code.",
        ),
    ],
    "shell": [
        (
            "Checking the Output",
            "I'll run the command and compare what it prints with what the user expects.",
        ),
        (
            "Reviewing the Diff",
            "The change touches one line in the aggregation and one test. Nothing else in the @collab@ module depends on the old behaviour.",
        ),
    ],
    "plan": [
        (
            "Breaking Down the Task",
            "Reproduce, find the cause, fix, verify. I'll keep a todo list so nothing gets skipped.",
        ),
    ],
    "answer": [
        (
            "Summarizing the Work",
            "Everything passes. I'll explain the cause in one sentence and list the files that changed.",
        ),
        (
            "Answering the Question",
            "The user wants the reasoning behind the approach, briefly. No tools needed.",
        ),
    ],
}


def reasoning_text(rng: random.Random, style: str, words: dict[str, str], action: str = "answer") -> str:
    """Reasoning in the provider's style: a gemini-cli thought (`**Subject**\\n\\ndescription`) or prose."""
    subject, description = rng.choice(REASONING.get(action, REASONING["shell"]))
    description = fill(description, words)
    if style == "thought":
        return f"**{subject}**\n\n{description}"
    extra = rng.choice(
        (
            " Let me be careful not to change the public signature.",
            " There might also be a second caller in the @collab@ module.",
            " If the tests encode the old behaviour I'll ask before changing them.",
            "",
        )
    )
    return description + fill(extra, words)


def summary_text(tool: str, rng: random.Random, project: Project, goal: str, changed: list[str]) -> str:
    """The compaction summary each agent writes in its own format."""
    files = ", ".join(f"`{p}`" for p in changed) or "none yet"
    w = project.words
    if tool == "gemini-cli":
        return (
            "<state_snapshot>\n    <overall_goal>\n        "
            + goal.splitlines()[0][:300]
            + "\n    </overall_goal>\n\n    <key_knowledge>\n"
            + fill(
                f"        - Project `{project.name}` ({project.language}) lives at {project.root}.\n"
                "        - `@verb@` and the @num@ totals per @group@ are the code in question.\n"
                f"        - Tests run with `{_test_cmd(project)}`.\n",
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
    return (
        "## Summary of the conversation so far\n\n"
        f"**Task:** {goal.splitlines()[0][:300]}\n\n**What we did**\n"
        + fill(
            f"- Explored `{project.root}` and read `{main_file(project)}`.\n- Fixed the @num@ grouping by @group@ (archived records are skipped).\n",
            w,
        )
        + f"- Changed files: {files}.\n\n**Next steps**\n- Continue with the follow-up request; re-run `{_test_cmd(project)}` after each change."
    )


# -- tools, per agent ----------------------------------------------------------------------------------


@dataclass
class ToolRun:
    """One tool call as an agent records it: its name, its argument object and the output text."""

    name: str
    args: dict[str, Any]
    output: str
    is_error: bool = False


def _numbered(text: str) -> str:
    lines = text.splitlines()
    return "\n".join(f"{i + 1:05d}| {line}" for i, line in enumerate(lines))


def _jdump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


class Toolkit:
    """Renders generic actions (read, grep, run tests, edit, ...) as one agent's tool calls and outputs."""

    def __init__(self, tool: str, rng: random.Random, project: Project) -> None:
        self.tool = tool
        self.rng = rng
        self.project = project

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
        """OpenCode's todo list tool (other agents get a no-op listing instead)."""
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
        if self.tool == "gemini-cli":
            return ToolRun(
                "write_todos",
                {"todos": [{"description": t["content"], "status": t["status"]} for t in todos]},
                "Successfully updated the todo list. The current list is now:\n"
                + "\n".join(f"{i + 1}. [{t['status']}] {t['content']}" for i, t in enumerate(todos)),
            )
        return self.listing("")

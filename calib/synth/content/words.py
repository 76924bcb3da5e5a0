"""The vocabulary every kind of material draws from: domains, names, people, and the text helpers."""

from __future__ import annotations

import random
import re

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


def pick_text(pools: dict[str, list[str]], lang: str, rng: random.Random) -> str:
    """One text of `pools` in `lang` (English where the language has none; "mixed" draws one)."""
    if lang == "mixed" and "mixed" not in pools:
        lang = rng.choice(("en", "zh", "ja"))
    return rng.choice(pools.get(lang) or pools["en"])

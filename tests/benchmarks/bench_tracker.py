"""How close the tracker's total before each call is to the provider's count, on held-out sessions.

    python tests/benchmarks/bench_tracker.py STORE CONFIG [--json]

STORE is a store `calib fit` wrote with CONFIG (its held-out sessions, `calib.scoring.chain.is_holdout`,
are the ones the fit did not see). Per provider, over the held-out calls with usage, the relative error
|shown - actual| / actual at p50 / p90 / p99 of:

- `agent`: what the agent's own rule and estimator displayed before the call (`calib context`'s
  `agent_shown`);
- `tracker`: the tracker's total with CONFIG (the default: no online correction);
- `tracker+corr`: the same with the online correction (`Tracker(correction=True)`);
- `o200k`: the same tracker with `tiktoken:o200k_base` uncalibrated (every ratio 1, no framing, no
  static overhead), the tokenizer-only baseline.

and, on the first call of each held-out session (nothing reported yet: the estimated basis), the share
of the prompt the breakdown's system + tools take and the error of the whole estimate.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from calib.analysis.context import ContextCall, context_calls
from calib.scoring.chain import is_holdout
from calib.store.store import Store


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def _plain_o200k(folder: Path) -> Path:
    doc = {
        "schema_version": 1,
        "base": "tiktoken:o200k_base",
        "kind_groups": {},
        "ratio_groups": ["model", "tool", "user"],
        "default_group": "user",
        "default": {"ratios": {"model": 1.0, "tool": 1.0, "user": 1.0}, "message_overhead": 0.0},
        "providers": {},
    }
    path = folder / "o200k.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _held_out(calls: list[ContextCall]) -> list[ContextCall]:
    return [c for c in calls if is_holdout(c.session) and c.actual]


def measure(db: Path, config: Path) -> dict[str, Any]:
    with Store(db, read_only=True) as store, tempfile.TemporaryDirectory() as tmp:
        runs = {
            "tracker": context_calls(store, config, every=True).calls,
            "tracker+corr": context_calls(store, config, every=True, correction=True).calls,
            "o200k": context_calls(store, _plain_o200k(Path(tmp)), every=True).calls,
        }
    errors: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    sessions: dict[str, set[str]] = defaultdict(set)
    first: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for c in _held_out(runs["tracker"]):
        assert c.actual is not None
        provider = c.provider or "?"
        sessions[provider].add(c.session)
        if c.agent_shown is not None:
            errors[provider]["agent"].append(abs(c.agent_shown - c.actual) / c.actual)
        errors[provider]["tracker"].append(abs(c.calibrated - c.actual) / c.actual)
        if c.call == 1 and c.basis == "estimated":
            b = c.usage["breakdown"]
            first[provider].append(
                ((b["system"] + b["tools"]) / c.actual, (c.calibrated - c.actual) / c.actual)
            )
    for name in ("tracker+corr", "o200k"):
        for c in _held_out(runs[name]):
            assert c.actual is not None
            errors[c.provider or "?"][name].append(abs(c.calibrated - c.actual) / c.actual)
    out: dict[str, Any] = {}
    for provider in sorted(errors):
        row: dict[str, Any] = {"sessions": len(sessions[provider]), "calls": len(errors[provider]["tracker"])}
        for name in ("agent", "tracker", "tracker+corr", "o200k"):
            values = errors[provider][name]
            row[name] = {f"p{int(q * 100)}": _quantile(values, q) for q in (0.5, 0.9, 0.99)}
        starts = first[provider]
        row["first_call"] = {
            "sessions": len(starts),
            "static_share_p50": statistics.median(s for s, _ in starts) if starts else None,
            "estimate_error_p50": statistics.median(e for _, e in starts) if starts else None,
        }
        out[provider] = row
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.2f}%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("config", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.db, args.config)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    names = ("agent", "tracker", "tracker+corr", "o200k")
    print("| provider | sessions | calls | " + " | ".join(f"{n} p50 / p90 / p99" for n in names) + " |")
    print("|---" * (3 + len(names)) + "|")
    for provider, row in result.items():
        cells = [" / ".join(_pct(row[n][k]) for k in ("p50", "p90", "p99")) for n in names]
        print(f"| {provider} | {row['sessions']} | {row['calls']} | " + " | ".join(cells) + " |")
    print()
    print("| provider | first calls | system+tools share of the prompt (p50) | whole estimate error (p50) |")
    print("|---|---|---|---|")
    for provider, row in result.items():
        f = row["first_call"]
        print(
            f"| {provider} | {f['sessions']} | {_pct(f['static_share_p50'])} | {_pct(f['estimate_error_p50'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

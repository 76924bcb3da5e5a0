"""Scale benchmark: every command's wall time and peak memory at 1x, 4x and 10x the gemini-cli corpus.

Scale n copies the shared gemini fixtures 20·n times (scale 1: 317 MB, the ingest benchmark's corpus
size). By default every copy after the first tags its long texts with its number, so that what calib
does once per distinct text (counting tokens) grows with the corpus as it would with a user's;
`--texts copied` repeats the texts as the ingest benchmark does. At each scale, each command runs as a
fresh process on a settled machine (see `harness`): ccusage (when found) and `calib ingest` cold (a
new store each round) and warm, in interleaved rounds whose order turns; then `calib score`, `calib
fit`, `calib report` and `calib replay`, each on a copy of the store as the commands before it left it
(so that every repeat starts from the same store: a first `score` computes the counts that later ones
reuse, which `score-warm` times). Figures: median wall seconds, peak memory two ways (the largest
single process, ru_maxrss; the summed PSS of the process tree, sampled every 100 ms), the most over the
repeats. Each scale's corpus is deleted after it unless `--keep` (10x is 3.2 GB).

    python tests/benchmarks/bench_scale.py --scales 1,4,10
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: put tests/ on the path, as pytest's pythonpath does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (
    Quiet,
    Run,
    build_gemini_corpus,
    calib_cmd,
    ccusage_args,
    copy_store,
    default_fixtures,
    find_ccusage,
    fresh_store,
    gemini_sources,
    median,
    move_store,
    timed,
)

COMMANDS = ("ccusage", "ingest-cold", "ingest-warm", "score", "score-warm", "fit", "report", "replay")
DEFAULT_COMMANDS = ("ccusage", "ingest-cold", "ingest-warm", "score", "fit", "report", "replay")
COPIES_PER_SCALE = 20
DEFAULT_OUT = Path(__file__).resolve().parents[2] / ".bench" / "scale"  # /.bench/ is gitignored
NOISY_LOAD = 0.25  # cores the rest of the machine used during a run above which it is marked noisy


@dataclass
class Context:
    """What the commands of one scale run against."""

    gemini: Path  # the corpus folder handed to calib
    home: Path  # its HOME, for ccusage
    work: Path  # stores, the calibration, the report
    quiet: Quiet | None


def _store_commands(ctx: Context, db: Path) -> dict[str, list[str]]:
    """The command lines of the commands that run on a store (`calib X --help` lists these flags)."""
    calib = calib_cmd()
    return {
        "score": [*calib, "score", "--db", str(db), "-q", "--json"],
        "score-warm": [*calib, "score", "--db", str(db), "-q", "--json"],
        # fit ingests first: with no paths, each agent's default folder under the real HOME; given the
        # corpus it finds nothing new there, as a user's `calib fit` does after their ingest.
        "fit": [
            *calib,
            "fit",
            str(ctx.gemini),
            "--db",
            str(db),
            "--out",
            str(ctx.work / "calibration.json"),
            "-q",
        ],
        "report": [*calib, "report", "--db", str(db), "--out", str(ctx.work / "report"), "-q"],
        "replay": [*calib, "replay", "--db", str(db), "-q"],
    }


def _summary(runs: list[Run]) -> dict[str, Any]:
    """Median seconds; the most memory over the runs; every run's figures."""
    loads = [r.others_load for r in runs if r.others_load is not None]
    return {
        "s": median([r.seconds for r in runs]),
        "cpu_s": median([r.cpu_seconds for r in runs]),
        "max_rss_mib": max(r.max_rss_kib for r in runs) / 1024,
        "tree_peak_mib": max(r.tree_peak_kib for r in runs) / 1024,
        "others_load": median(loads) if loads else None,
        "runs": [r.figures() for r in runs],
    }


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bench_scale_once(
    ctx: Context,
    commands: Sequence[str],
    *,
    ccusage: str | None,
    repeats: int,
    ingest_repeats: int,
    label: str = "",
) -> dict[str, Any]:
    """Run `commands` on the corpus of `ctx` and return their figures (and the corpus' counts)."""
    ctx.work.mkdir(parents=True, exist_ok=True)
    db = ctx.work / "ingest.duckdb"
    ingest = [*calib_cmd(), "ingest", str(ctx.gemini), "--db", str(db), "-q", "--json"]
    runs: dict[str, list[Run]] = {name: [] for name in commands}
    errors: dict[str, str] = {}
    doc: dict[str, Any] = {}
    quiet = ctx.quiet

    def note(name: str, run: Run) -> None:
        runs[name].append(run)
        _log(
            f"{label}{name} {len(runs[name])}: {run.seconds:.2f} s, {run.max_rss_kib / 1024:.0f} MB "
            f"(tree {run.tree_peak_kib / 1024:.0f} MB)"
            + (f", others {run.others_load:.2f} cores" if run.others_load is not None else "")
        )

    def run_ccusage() -> None:
        assert ccusage is not None
        note("ccusage", timed(ccusage_args(ccusage), dict(os.environ, HOME=str(ctx.home)), quiet=quiet))

    def run_calib() -> None:
        nonlocal doc
        fresh_store(db)
        run = timed(ingest, quiet=quiet if "ingest-cold" in runs else None)
        doc = json.loads(run.stdout)
        if "ingest-cold" in runs:
            note("ingest-cold", run)
        if "ingest-warm" in runs:
            note("ingest-warm", timed(ingest, quiet=quiet))

    steps: list[Callable[[], None]] = []
    if "ccusage" in runs and ccusage:
        steps.append(run_ccusage)
    if {"ingest-cold", "ingest-warm"} & set(runs):
        steps.append(run_calib)
    for round_ in range(ingest_repeats if steps else 0):
        turn = round_ % len(steps)  # the order turns each round
        for step in steps[turn:] + steps[:turn]:
            step()
    store_needed = bool(set(runs) - {"ccusage"})
    if store_needed and not doc:
        run_calib()  # the store the other commands read, untimed

    state, scratch = ctx.work / "state.duckdb", ctx.work / "run.duckdb"
    if doc:
        move_store(db, state)
    for name in (c for c in COMMANDS if c in runs and c not in ("ccusage", "ingest-cold", "ingest-warm")):
        cmd = _store_commands(ctx, scratch)[name]
        try:
            for _ in range(repeats):
                copy_store(state, scratch)  # every repeat starts from the store the commands before left
                shutil.rmtree(ctx.work / "report", ignore_errors=True)
                note(name, timed(cmd, quiet=quiet))
        except RuntimeError as exc:
            errors[name] = str(exc)
            _log(f"{label}{name} failed: {exc}")
            continue
        move_store(scratch, state)  # the store as this command left it, for the next
    for path in (db, state, scratch):
        fresh_store(path)

    out: dict[str, Any] = {
        "sessions": doc.get("sessions"),
        "calls": doc.get("calls"),
        "parts": doc.get("parts"),
        "commands": {},
        "argv": {},
    }
    argv = {
        "ccusage": f"HOME={ctx.home} {' '.join(ccusage_args(ccusage))}" if ccusage else None,
        "ingest-cold": " ".join(ingest).replace(str(db), "NEW"),
        "ingest-warm": " ".join(ingest).replace(str(db), "SAME"),
        **{k: " ".join(v) for k, v in _store_commands(ctx, Path("S")).items()},
    }
    for name in commands:
        out["argv"][name] = argv.get(name)
        if name in errors:
            out["commands"][name] = {"error": errors[name]}
        elif runs.get(name):
            out["commands"][name] = _summary(runs[name])
    figures = out["commands"]
    if "ccusage" in figures:
        for name in ("ingest-cold", "ingest-warm"):
            if "s" in figures.get(name, {}):
                out[f"{name.split('-')[1]}_over_ccusage"] = figures[name]["s"] / figures["ccusage"]["s"]
    return out


def _growth(first: float | None, last: float | None) -> float | None:
    """Relative growth from `first` to `last` (0.1 for 10 %), None when either is missing."""
    return last / first - 1 if first and last is not None else None


def summarise(scales: list[dict[str, Any]], commands: Sequence[str]) -> dict[str, Any]:
    """Per command, from the smallest to the largest scale: peak memory growth and time per call."""
    out: dict[str, Any] = {}
    if not scales:
        return out
    first, last = scales[0], scales[-1]
    for name in commands:
        a, b = first["commands"].get(name, {}), last["commands"].get(name, {})
        per_call = {
            str(s["scale"]): s["commands"][name]["s"] / s["calls"] * 1e6
            for s in scales
            if name in s["commands"] and "s" in s["commands"][name] and s.get("calls")
        }
        pc = list(per_call.values())
        out[name] = {
            "from_scale": first["scale"],
            "to_scale": last["scale"],
            "max_rss_growth": _growth(a.get("max_rss_mib"), b.get("max_rss_mib")),
            "tree_peak_growth": _growth(a.get("tree_peak_mib"), b.get("tree_peak_mib")),
            "us_per_call": per_call,
            # > 0: time per call grows with the corpus (worse than linear)
            "us_per_call_growth": _growth(pc[0], pc[-1]) if len(pc) > 1 else None,
        }
    return out


def _cell(fig: dict[str, Any] | None) -> str:
    if not fig:
        return ""
    if "error" in fig:
        return "failed"
    noisy = "*" if (fig.get("others_load") or 0) > NOISY_LOAD else ""
    return f"{fig['s']:.2f} s{noisy} · {fig['max_rss_mib']:.0f} / {fig['tree_peak_mib']:.0f} MB"


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:+.0%}"


def markdown(report: dict[str, Any]) -> str:
    """The report as two Markdown tables: one row per scale, then per command how it grows."""
    commands = report["commands"]
    scales = report["scales"]
    head = ["scale", "corpus MB", "sessions", "calls", *commands, "cold/ccusage", "warm/ccusage"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in scales:
        cells = [
            f"{s['scale']}x",
            f"{s['corpus']['bytes'] / 1e6:.0f}",
            f"{s['sessions'] or 0:,}",
            f"{s['calls'] or 0:,}",
            *(_cell(s["commands"].get(name)) for name in commands),
            f"{s['cold_over_ccusage']:.2f}x" if "cold_over_ccusage" in s else "",
            f"{s['warm_over_ccusage']:.2f}x" if "warm_over_ccusage" in s else "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Cells: median wall seconds · peak MB of the largest single process (ru_maxrss) / of the whole "
        "process tree (summed PSS, sampled every 100 ms), the most over the repeats. "
        f"`*`: the rest of the machine kept more than {NOISY_LOAD} cores busy during the runs (noisy).",
        "Texts: "
        + (
            "distinct (each copy's long texts are its own)."
            if report.get("texts") == "distinct"
            else "copied (every copy repeats the 1x texts: what calib does once per distinct text, such as "
            "counting tokens, does not grow with the scale)."
        ),
    ]
    growth = report["growth"]
    if len(scales) > 1:
        names = [str(s["scale"]) for s in scales]
        head = [
            "command",
            *(f"µs/call {n}x" for n in names),
            "µs/call growth",
            f"peak growth {names[0]}x→{names[-1]}x (process / tree)",
        ]
        lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name in commands:
            g = growth.get(name, {})
            per_call = g.get("us_per_call", {})
            cells = [
                name,
                *(f"{per_call[n]:.1f}" if n in per_call else "" for n in names),
                _pct(g.get("us_per_call_growth")),
                f"{_pct(g.get('max_rss_growth'))} / {_pct(g.get('tree_peak_growth'))}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def bench_scale(
    src: Path,
    out: Path,
    *,
    scales: Sequence[int] = (1, 4, 10),
    copies_per_scale: int = COPIES_PER_SCALE,
    commands: Sequence[str] = DEFAULT_COMMANDS,
    repeats: int = 3,
    ingest_repeats: int = 5,
    ccusage: str | None = None,
    keep: bool = False,
    distinct_texts: bool = True,
    quiet: Quiet | None = Quiet(),  # noqa: B008  (frozen)
) -> dict[str, Any]:
    """Build the corpus at each scale, run `commands` on it, and return the report (see the module).

    `distinct_texts`: each copy's long texts are its own (see `build_gemini_corpus`), so that what
    calib does once per distinct text (counting tokens) grows with the scale, as it would on a bigger
    real corpus; False: every copy repeats the 1x texts, as the ingest benchmark's corpus does.
    """
    unknown = set(commands) - set(COMMANDS)
    if unknown:
        raise ValueError(f"unknown commands {sorted(unknown)}; choose from {', '.join(COMMANDS)}")
    commands = [c for c in COMMANDS if c in commands and (c != "ccusage" or ccusage)]
    out.mkdir(parents=True, exist_ok=True)
    unit = sum(p.stat().st_size for p in gemini_sources(src))
    results = []
    for scale in scales:
        copies = scale * copies_per_scale
        folder = out / f"scale-{scale}"
        # the corpus, and two stores of about half its size (the state and the copy a command runs on)
        need, free = 2.5 * unit * copies, shutil.disk_usage(out).free
        if need > free:
            raise OSError(f"{scale}x needs about {need / 1e9:.1f} GB under {out}; {free / 1e9:.1f} GB free")
        _log(f"[{scale}x] building the corpus: {copies} copies of {src}")
        info = build_gemini_corpus(src, folder / "home", copies, distinct_texts=distinct_texts)
        ctx = Context(gemini=info.gemini_dir, home=info.home, work=folder / "work", quiet=quiet)
        try:
            result = bench_scale_once(
                ctx,
                commands,
                ccusage=ccusage,
                repeats=repeats,
                ingest_repeats=ingest_repeats,
                label=f"[{scale}x] ",
            )
        finally:
            if not keep:
                shutil.rmtree(folder, ignore_errors=True)
        result = {
            "scale": scale,
            "copies": copies,
            "corpus": {"path": str(info.gemini_dir), "files": info.files, "bytes": info.bytes},
            **result,
        }
        results.append(result)
    return {
        "scales": results,
        "commands": commands,
        "repeats": repeats,
        "ingest_repeats": ingest_repeats,
        "copies_per_scale": copies_per_scale,
        "texts": "distinct" if distinct_texts else "copied",
        "source": str(src),
        "quiet": vars(quiet) if quiet is not None else None,
        "cores": os.cpu_count(),
        "growth": summarise(results, commands),
    }


def merged(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One report of the scales of several runs (each with its own repeats), in scale order: a large
    scale is often run alone, with fewer repeats, after the small ones."""
    if not reports:
        raise ValueError("no report to merge")
    texts = {r.get("texts") for r in reports}
    if len(texts) > 1:
        raise ValueError(f"the reports' corpora differ (texts {', '.join(sorted(map(str, texts)))})")
    scales = sorted((s for r in reports for s in r["scales"]), key=lambda s: s["scale"])
    if len({s["scale"] for s in scales}) < len(scales):
        raise ValueError("two reports hold the same scale")
    commands = [c for c in COMMANDS if any(c in r["commands"] for r in reports)]
    return {
        **reports[0],
        "scales": scales,
        "commands": commands,
        "repeats": sorted({r["repeats"] for r in reports}),
        "ingest_repeats": sorted({r["ingest_repeats"] for r in reports}),
        "growth": summarise(scales, commands),
    }


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    """`python tests/benchmarks/bench_scale.py`: print the report as JSON, then as Markdown tables."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--src", type=Path, default=default_fixtures(), help="folder of real recordings")
    parser.add_argument("--scales", type=_ints, default=[1, 4, 10], help="comma-separated (default 1,4,10)")
    parser.add_argument(
        "--copies-per-scale", type=int, default=COPIES_PER_SCALE, help="copies of the fixtures at 1x"
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of score, fit, report, replay")
    parser.add_argument("--ingest-repeats", type=int, default=5, help="rounds of ccusage and ingest")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="work folder (gitignored .bench/)")
    parser.add_argument("--keep", action="store_true", help="keep each scale's corpus")
    parser.add_argument(
        "--texts",
        choices=("distinct", "copied"),
        default="distinct",
        help="distinct (default): each copy's long texts are its own, as in a bigger real corpus; copied: "
        "every copy repeats the 1x texts (the ingest benchmark's corpus), which calib counts only once",
    )
    parser.add_argument(
        "--commands",
        default=",".join(DEFAULT_COMMANDS),
        help=f"comma-separated subset of {','.join(COMMANDS)} (default: all but score-warm)",
    )
    parser.add_argument("--ccusage", default=None, help="ccusage executable (default: $CALIB_CCUSAGE, PATH)")
    parser.add_argument("--max-load", type=float, default=Quiet.max_load, help="cores others may use")
    parser.add_argument("--settle-timeout", type=float, default=Quiet.timeout, help="seconds to wait for it")
    parser.add_argument("--json", action="store_true", help="print only the JSON report")
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="REPORT",
        help="run nothing: print the report.json files of earlier runs (other scales) as one report",
    )
    args = parser.parse_args(argv)
    if args.merge:
        report = merged([json.loads(path.read_text()) for path in args.merge])
        print(
            json.dumps(report, indent=2) if args.json else markdown(report), end="" if not args.json else "\n"
        )
        return 0
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    if not args.src.is_dir():
        parser.error(f"no fixtures at {args.src} (clone the project with ../shared beside it, or --src)")
    ccusage = find_ccusage(args.ccusage) if "ccusage" in commands else None
    if "ccusage" in commands and not ccusage:
        _log("ccusage not found (set CALIB_CCUSAGE or --ccusage): timing calib alone")
    report = bench_scale(
        args.src,
        args.out.resolve(),
        scales=args.scales,
        copies_per_scale=args.copies_per_scale,
        commands=commands,
        repeats=args.repeats,
        ingest_repeats=args.ingest_repeats,
        ccusage=ccusage,
        keep=args.keep,
        distinct_texts=args.texts == "distinct",
        quiet=Quiet(max_load=args.max_load, timeout=args.settle_timeout),
    )
    text = json.dumps(report, indent=2)
    table = markdown(report)
    (args.out / "report.json").write_text(text + "\n")
    (args.out / "report.md").write_text(table)
    print(text)
    if not args.json:
        print()
        print(table, end="")
    _log(f"wrote {args.out / 'report.json'} and {args.out / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

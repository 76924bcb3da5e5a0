"""`calib bench`'s counting section: the first count of a store's texts against the counters alone.

`calib score` and `calib fit` count each distinct text of a store once per estimator
(`calib.scoring.counts.update_estimates`): the texts are read from the store, counted and the counts
stored. This section times that on the bench corpus, stored as the parts of one session, for each
estimator alone and for all of them together, beside the estimator's own `count_many` on the same
documents: how close the store's first count comes to the counter's own speed.
"""

from __future__ import annotations

import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from calib.analysis.bench import BenchContext, BenchSection, best_seconds
from calib.core.records import ParsedSession, Part, Session
from calib.estimators import DEFAULT_SCORE_SET, get_estimator, why_unusable
from calib.scoring.counts import update_estimates
from calib.store.store import Store


def counting_section(ctx: BenchContext) -> BenchSection:
    """The store's first count of the corpus per estimator (default: `calib score`'s set) and together."""
    section = BenchSection(
        "counting",
        "First counts of a store: MB/s of distinct text read, counted and stored, beside count_many alone",
        ["estimators", "mb_s", "count_many_mb_s", "share", "note"],
        {
            "estimators": "estimators",
            "mb_s": "store MB/s",
            "count_many_mb_s": "count_many MB/s",
            "share": "share",
            "note": "note",
        },
    )
    names = (
        list(ctx.estimators) if ctx.estimators else [n for n in DEFAULT_SCORE_SET if why_unusable(n) is None]
    )
    groups = [[name] for name in names] + ([names] if len(names) > 1 else [])
    corpus = ctx.corpus
    docs = corpus.all()
    megabytes = corpus.utf8_bytes() / 1e6
    repeats = 3 if ctx.quick else 5
    estimators = {name: get_estimator(name) for name in names}  # loaded before: `estimators` times the load
    alone: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory(prefix="calib-bench-") as folder,
        Store(Path(folder) / "counting.duckdb") as store,
    ):
        store.write([_corpus_session(docs)])
        for i, group in enumerate(groups):
            if ctx.progress:
                ctx.progress(i, len(groups), ", ".join(group))
            stored = float("inf")
            for _ in range(repeats):
                store.con.execute("DELETE FROM text_counts")  # every text uncounted: a first count
                start = time.perf_counter()
                update_estimates(store, group)
                stored = min(stored, time.perf_counter() - start)
                if len(group) == 1:  # the estimator alone, interleaved with the store's passes
                    (name,) = group
                    (seconds,) = best_seconds(partial(estimators[name].count_many, docs), repeats=1)
                    alone[name] = min(alone.get(name, float("inf")), seconds)
            counted = sum(alone[name] for name in group)
            row: dict[str, Any] = {
                "estimators": group[0] if len(group) == 1 else f"all {len(group)} together",
                "mb_s": megabytes / stored,
                "count_many_mb_s": megabytes / counted,
                "share": counted / stored,
                "note": None if len(group) == 1 else "count_many: the sum of each alone",
            }
            section.rows.append(row)
    if ctx.progress:
        ctx.progress(len(groups), len(groups), "")
    section.notes.append(
        f"best of {repeats} first counts of the corpus's {len(docs)} documents as the parts of one stored "
        "session (calib.scoring.counts.update_estimates: read from the store, counted, stored), each "
        "followed by a count_many pass over the same documents; share = count_many's time / the store's "
        "(1.0: the store's first count runs at the counter's own speed; above 1: estimators counted "
        "together overlap)"
    )
    return section


def _corpus_session(docs: list[str]) -> ParsedSession:
    """The corpus as the parts of one session, the way a store holds what it counts."""
    uid = "bench:corpus"
    session = Session(uid, "bench", "corpus", "(calib bench corpus)", "bench")
    parts = [Part(f"{uid}:p{i}", uid, i, "user", "user_text", doc) for i, doc in enumerate(docs)]
    return ParsedSession(session, [], parts)

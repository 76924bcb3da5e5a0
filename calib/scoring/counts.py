"""The per-part count cache: each count source's tokens for every part, kept in `part_estimates`.

Counts per part are computed once per count source and kept in the `part_estimates` table (keyed by
source and part, with the source's version and a hash of the part's texts to spot stale rows), so
scoring again, or with another calibration of the same base, only re-reads the store. A count source
is an estimator name or a character class `class:<name>` (see `calib.estimators.charclass`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from calib.core.errors import UsageError
from calib.core.progress import Progress
from calib.estimators import get_estimator
from calib.estimators.charclass import CLASS_PREFIX, CLASSES, class_counts, class_sources
from calib.store.store import Store


@dataclass(slots=True)
class _CountJob:
    """Sources counted in one pass over the texts (one estimator, or every character class)."""

    sources: list[str]
    version: str
    count: Callable[[list[str]], dict[str, list[int]]]


def _jobs(sources: Sequence[str]) -> list[_CountJob]:
    jobs: list[_CountJob] = []
    classes = [s for s in sources if s.startswith(CLASS_PREFIX)]
    if classes:
        known = class_sources()
        unknown = sorted(set(classes) - set(known))
        if unknown:
            raise UsageError(
                f"unknown character class {unknown[0]!r}", hint=f"valid classes: {', '.join(known)}"
            )
        names = list(CLASSES)

        def count_classes(texts: list[str]) -> dict[str, list[int]]:
            frame = class_counts(texts)
            return {CLASS_PREFIX + name: frame[name].to_list() for name in names}

        # the class names stand for the class definitions: renaming or adding one recounts everything
        jobs.append(_CountJob(known, "classes:" + ",".join(names), count_classes))
    for source in sources:
        if source.startswith(CLASS_PREFIX):
            continue
        estimator = get_estimator(source)

        def count_texts(
            texts: list[str], estimator: Any = estimator, source: str = source
        ) -> dict[str, list[int]]:
            return {source: estimator.count_many(texts)}

        jobs.append(_CountJob([source], str(getattr(estimator, "version", 1)), count_texts))
    return jobs


_BATCH = 20_000


def update_estimates(store: Store, sources: Sequence[str], progress: Progress | None = None) -> int:
    """Count every part (and its pruned text) with each source whose stored count is missing or stale.

    Returns the number of parts counted. Sources are estimator names or `class:<name>` counts.
    """
    con = store.con
    con.execute(
        "DELETE FROM part_estimates e WHERE NOT EXISTS (SELECT 1 FROM parts p WHERE p.part_uid = e.part_uid)"
    )
    done = 0
    for job in _jobs(sorted(set(sources))):
        # rows of an older version, or of a part whose text changed since, go first; the parts then
        # without a row are counted (so each (source, part) keeps exactly one row)
        con.execute(
            "DELETE FROM part_estimates e WHERE list_contains($sources, e.source) AND (e.version <> $version "
            "OR e.text_hash <> (SELECT hash(p.text, p.pruned_text) FROM parts p WHERE p.part_uid = e.part_uid))",
            {"sources": job.sources, "version": job.version},
        )
        # a job writes all its sources together, so its first source tells which parts lack counts
        missing = (
            "FROM parts p WHERE NOT EXISTS (SELECT 1 FROM part_estimates e "
            "WHERE e.source = $source AND e.part_uid = p.part_uid)"
        )
        row = con.execute(f"SELECT count(*) {missing}", {"source": job.sources[0]}).fetchone()
        total = int(row[0]) if row else 0
        if not total:
            continue
        label = ", ".join(job.sources) if len(job.sources) == 1 else "character classes"
        reader = con.cursor()
        try:
            result = reader.execute(
                f"SELECT p.part_uid, p.text, p.pruned_text, hash(p.text, p.pruned_text) AS h {missing}",
                {"source": job.sources[0]},
            )
            # to_arrow_reader replaces fetch_record_batch in duckdb 1.4
            fetch = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
            counted = 0
            for batch in fetch(_BATCH):
                _insert(store, job, batch)
                counted += batch.num_rows
                if progress is not None:
                    progress(counted, total, label)
        finally:
            reader.close()
        done += total
    return done


def _insert(store: Store, job: _CountJob, batch: pa.RecordBatch) -> None:
    """Count one batch of (part_uid, text, pruned_text, hash) rows with a job and store the counts."""
    uids = batch.column(0).to_pylist()
    texts = batch.column(1).to_pylist()
    pruned = batch.column(2).to_pylist()
    hashes = batch.column(3)
    counts = job.count(texts)
    pruned_idx = [i for i, t in enumerate(pruned) if t is not None]
    pruned_counts = job.count([pruned[i] for i in pruned_idx]) if pruned_idx else {}
    columns: dict[str, list[Any]] = {name: [] for name in ("source", "tokens", "pruned_tokens")}
    for source in job.sources:
        pc: list[int | None] = [None] * len(uids)
        for j, i in enumerate(pruned_idx):
            pc[i] = pruned_counts[source][j]
        columns["source"] += [source] * len(uids)
        columns["tokens"] += counts[source]
        columns["pruned_tokens"] += pc
    n = len(job.sources)
    table = pa.table(
        {
            "source": pa.array(columns["source"], pa.string()),
            "part_uid": pa.array(uids * n, pa.string()),
            "version": pa.array([job.version] * (len(uids) * n), pa.string()),
            "text_hash": pa.concat_arrays([hashes] * n),
            "tokens": pa.array(columns["tokens"], pa.int64()),
            "pruned_tokens": pa.array(columns["pruned_tokens"], pa.int64()),
        }
    )
    con = store.con
    con.register("_new_estimates", table)
    try:
        con.execute("INSERT INTO part_estimates BY NAME SELECT * FROM _new_estimates")
    finally:
        con.unregister("_new_estimates")

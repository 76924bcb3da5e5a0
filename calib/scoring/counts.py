"""The count cache: each count source's tokens for every distinct part text, kept in `text_counts`.

A text (a part's text with its pruned text, identified by `parts.text_hash`) is counted once per count
source and kept in the `text_counts` table with the source's version, so scoring again, scoring
parts that repeat a text, or scoring with another calibration of the same base only re-reads the
store; the `part_estimates` view gives each part its text's counts. A count source is an estimator
name or a character class `class:<name>` (see `calib.estimators.charclass`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import pyarrow as pa

from calib.core.errors import UsageError
from calib.core.progress import Progress
from calib.estimators import cache_version, get_estimator, loaded_for_now
from calib.estimators.charclass import CLASS_PREFIX, CLASSES, class_counts, class_sources
from calib.store.store import Store, release_cache


@dataclass(slots=True)
class _CountJob:
    """Sources counted in one pass over the texts (one estimator, or every character class)."""

    sources: list[str]
    version: str
    count: Callable[[list[str]], dict[str, list[int]]]
    # builds what counting needs (a tokenizer), before any text is read: its load peaks on less
    prepare: Callable[[], object] | None = None


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

        # the estimator is built on the first text to count: with every count cached, never
        def count_texts(texts: list[str], source: str = source) -> dict[str, list[int]]:
            return {source: get_estimator(source).count_many(texts)}

        def build(source: str = source) -> object:
            return get_estimator(source)

        jobs.append(_CountJob([source], cache_version(source), count_texts, build))
    return jobs


# Texts counted per batch (and, at most, their characters): bounds the memory counting holds.
_BATCH = 20_000
_BATCH_CHARS = 8 << 20
# Progress is reported per slice of a batch: about `_SLICES` per estimator, so that the bar moves (and
# shows a rate) on a small store too, of no fewer than `_MIN_SLICE` texts, so that a slice's insert
# stays small beside its counting.
_SLICES = 10
_MIN_SLICE = 100

# The phase counting reports to `progress`, with the count source: `counting texts (chars4)`.
COUNTING = "counting texts"


def update_estimates(
    store: Store,
    sources: Sequence[str],
    progress: Progress | None = None,
    *,
    sessions: Sequence[str] | None = None,
) -> int:
    """Count every distinct part text (with its pruned text) with each source that lacks its count;
    with `sessions` (session uids), only the texts of those sessions.

    Counts are kept per (source, text hash) in `text_counts`, so a text is counted once however many
    parts hold it and whatever was ingested since; a source whose version changed is counted again.
    Returns the number of texts counted. Sources are estimator names or `class:<name>` counts.
    """
    con = store.con
    jobs = _jobs(sorted(set(sources)))
    for job in jobs:
        store.forget_counts(job.sources, job.version)
    done = 0
    # The texts are read on a cursor of their own while the counts are written on the store's
    # connection; its temporary tables are its own, and it reads the counts as `store.counts_sql()`
    # (a store opened read-only keeps the counts it adds aside).
    reader = con.cursor()
    try:
        # One part per distinct text: its rowid, to read the text back in batches.
        if sessions is None:
            reader.execute(
                "CREATE TEMP TABLE _texts AS SELECT text_hash, min(part_uid) AS rid FROM parts GROUP BY text_hash"
            )
        else:
            reader.register("_only", pa.table({"session_uid": pa.array(list(sessions), pa.string())}))
            try:
                reader.execute(
                    "CREATE TEMP TABLE _texts AS SELECT text_hash, min(part_uid) AS rid FROM parts "
                    "SEMI JOIN _only USING (session_uid) GROUP BY text_hash"
                )
            finally:
                reader.unregister("_only")
        for job in jobs:
            # a job writes all its sources together, so its first source tells which texts lack counts
            reader.execute(
                "CREATE OR REPLACE TEMP TABLE _uncounted AS SELECT t.* FROM _texts t WHERE NOT EXISTS "
                f"(SELECT 1 FROM {store.counts_sql()} c WHERE c.source = $source AND c.text_hash = t.text_hash)",
                {"source": job.sources[0]},
            )
            row = reader.execute("SELECT count(*) FROM _uncounted").fetchone()
            total = int(row[0]) if row else 0
            if total:
                # the scans that found the texts leave their blocks cached: dropped, and the tokenizer
                # built before any text is read, so that its load peaks on as little as can be
                release_cache(con)
                # one tokenizer in memory at a time, and none once the counts are stored
                with loaded_for_now():
                    if job.prepare is not None:
                        job.prepare()
                    _count_job(store, reader, job, total, progress)
            done += total
    finally:
        reader.close()
    return done


def counting_label(sources: Sequence[str]) -> str:
    """What counting with a job's `sources` reports as: `counting texts (NAME)` (a path in the name
    shortened to its file name: `hf:tokenizer.json`), or `counting texts (character classes)`."""
    name = sources[0]
    if name.startswith(CLASS_PREFIX):
        return f"{COUNTING} (character classes)"
    prefix, sep, arg = name.partition(":")
    if "/" in arg or "\\" in arg:
        name = prefix + sep + PurePath(arg.replace("\\", "/")).name
    return f"{COUNTING} ({name})"


def _count_job(store: Store, reader: Any, job: _CountJob, total: int, progress: Progress | None) -> None:
    """Read the uncounted texts (`_uncounted` on `reader`) in batches, count them and store the counts."""
    label = counting_label(job.sources)
    if progress is not None:
        progress(0, total, label)  # the phase starts: its time counts from here
    result = reader.execute(
        "SELECT p.text_hash, p.text, p.pruned_text FROM parts p SEMI JOIN _uncounted u ON p.part_uid = u.rid"
    )
    # to_arrow_reader replaces fetch_record_batch in duckdb 1.4
    fetch = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
    rows = min(_BATCH, max(_MIN_SLICE, -(-total // _SLICES)))
    counted = 0
    for batch in fetch(_BATCH):
        for piece in _pieces(batch, rows):
            _insert(store, job, piece)
            counted += piece.num_rows
            if progress is not None:
                progress(counted, total, label)
        release_cache(store.con)  # the texts read so far are not read again


def _pieces(batch: pa.RecordBatch, rows: int) -> list[pa.RecordBatch]:
    """A batch cut so that no piece holds more than `rows` texts, nor much more than `_BATCH_CHARS`
    characters of text."""
    import pyarrow.compute as pc

    lengths = pc.utf8_length(batch.column(1)).to_pylist()
    pieces, start, size = [], 0, 0
    for i, n in enumerate(lengths):
        size += n or 0
        if size >= _BATCH_CHARS or i + 1 - start >= rows:
            pieces.append(batch.slice(start, i + 1 - start))
            start, size = i + 1, 0
    if start < batch.num_rows:
        pieces.append(batch.slice(start))
    return pieces


def _insert(store: Store, job: _CountJob, batch: pa.RecordBatch) -> None:
    """Count one batch of (text_hash, text, pruned_text) rows with a job and store the counts."""
    hashes = batch.column(0)
    texts = batch.column(1).to_pylist()
    pruned = batch.column(2).to_pylist()
    counts = job.count(texts)
    del texts
    pruned_idx = [i for i, t in enumerate(pruned) if t is not None]
    pruned_counts = job.count([pruned[i] for i in pruned_idx]) if pruned_idx else {}
    n_rows = batch.num_rows
    columns: dict[str, list[Any]] = {name: [] for name in ("source", "tokens", "pruned_tokens")}
    for source in job.sources:
        pc: list[int | None] = [None] * n_rows
        for j, i in enumerate(pruned_idx):
            pc[i] = pruned_counts[source][j]
        columns["source"] += [source] * n_rows
        columns["tokens"] += counts[source]
        columns["pruned_tokens"] += pc
    n = len(job.sources)
    table = pa.table(
        {
            "source": pa.array(columns["source"], pa.string()),
            "version": pa.array([job.version] * (n_rows * n), pa.string()),
            "text_hash": pa.concat_arrays([hashes] * n),
            "tokens": pa.array(columns["tokens"], pa.int64()),
            "pruned_tokens": pa.array(columns["pruned_tokens"], pa.int64()),
        }
    )
    store.add_counts(table)

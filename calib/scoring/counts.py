"""The count cache: each count source's tokens for every distinct part text, kept in `text_counts`.

A text (a part's text with its pruned text, identified by `parts.text_hash`) is counted once per count
source and kept in the `text_counts` table with the source's version, so scoring again, scoring
parts that repeat a text, or scoring with another calibration of the same base only re-reads the
store; the `part_estimates` view gives each part its text's counts. A count source is an estimator
name or a character class `class:<name>` (see `calib.estimators.charclass`).

The texts that lack counts are read once per tokenizer (one in memory at a time). The light sources,
which count from the characters alone (the agents' rules, `charclass`, the classes), ride along on the
first tokenizer's pass: the tokenizer counts a piece of texts on its own threads (tiktoken and Hugging
Face release the GIL) while this thread counts the light sources of the same piece; a pass with no
tokenizer counts in the worker thread instead. Meanwhile this thread reads the next texts and stores
the counts made so far, gathered into inserts of `_STORE_ROWS` rows. `calib bench --section counting`
times it against the counters alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from calib.core.errors import UsageError
from calib.core.progress import Progress
from calib.estimators import cache_version, estimator_family, get_estimator, loaded_for_now
from calib.estimators.charclass import CLASS_PREFIX, CLASSES, class_counts, class_sources
from calib.store.store import Store, release_cache

# The registry family of the estimators that count from the characters alone (see `_CountJob.light`).
LIGHT_FAMILY = "heuristic"


@dataclass(slots=True)
class _CountJob:
    """Sources counted in one pass over the texts (one estimator, or every character class)."""

    sources: list[str]
    version: str
    count: Callable[[list[str]], dict[str, list[int]]]
    # builds what counting needs (a tokenizer), before any text is read: its load peaks on less
    prepare: Callable[[], object] | None = None
    # counts from the characters alone with nothing to load (the agents' rules, character classes):
    # it rides along on a tokenizer's pass, in the main thread while the tokenizer counts in its own
    light: bool = False


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
        jobs.append(_CountJob(known, "classes:" + ",".join(names), count_classes, light=True))
    for source in sources:
        if source.startswith(CLASS_PREFIX):
            continue

        # the estimator is built on the first text to count: with every count cached, never
        def count_texts(texts: list[str], source: str = source) -> dict[str, list[int]]:
            return {source: get_estimator(source).count_many(texts)}

        def build(source: str = source) -> object:
            return get_estimator(source)

        version = cache_version(source)
        light = estimator_family(source) == LIGHT_FAMILY
        jobs.append(_CountJob([source], version, count_texts, build, light))
    return jobs


def _flag(job: int) -> str:
    """The column of `_need` that tells the texts job number `job` lacks."""
    return f"lacks{job}"


def _passes(jobs: Sequence[tuple[_CountJob, str]]) -> list[list[tuple[_CountJob, str]]]:
    """The passes over the texts that count `jobs` (each with its column of `_need`): one per
    tokenizer, so that one tokenizer at a time is in memory, the light jobs riding along on the first."""
    light = [job for job in jobs if job[0].light]
    heavy = [job for job in jobs if not job[0].light]
    if not heavy:
        return [light] if light else []
    return [[heavy[0], *light], *([job] for job in heavy[1:])]


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
    The texts are read once per tokenizer: the light sources (the agents' rules, character classes)
    are counted on the first tokenizer's pass, while it counts on its own threads.
    Returns the number of texts counted (summed over the sources counted together).
    Sources are estimator names or `class:<name>` counts.
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
                "CREATE TEMP TABLE _need AS SELECT text_hash, min(part_uid) AS rid FROM parts GROUP BY text_hash"
            )
        else:
            reader.register("_only", pa.table({"session_uid": pa.array(list(sessions), pa.string())}))
            try:
                reader.execute(
                    "CREATE TEMP TABLE _need AS SELECT text_hash, min(part_uid) AS rid FROM parts "
                    "SEMI JOIN _only USING (session_uid) GROUP BY text_hash"
                )
            finally:
                reader.unregister("_only")
        # A flag per job on each text: whether it lacks that job's counts (a job writes all its
        # sources together, so its first source tells). One table, so that a pass reads its texts
        # through one join whatever the number of jobs; a job at a time, so that one source's
        # counts at a time are joined.
        todo: list[tuple[_CountJob, str]] = []
        for i, job in enumerate(jobs):
            flag = _flag(i)
            reader.execute(f"ALTER TABLE _need ADD COLUMN {flag} BOOLEAN DEFAULT TRUE")
            reader.execute(
                f"UPDATE _need SET {flag} = FALSE WHERE text_hash IN "
                f"(SELECT text_hash FROM {store.counts_sql()} WHERE source = $source)",
                {"source": job.sources[0]},
            )
            row = reader.execute(f"SELECT count(*) FROM _need WHERE {flag}").fetchone()
            total = int(row[0]) if row else 0
            if total:
                todo.append((job, flag))
            done += total
        for group in _passes(todo):
            # the scans that found the texts leave their blocks cached: dropped, and the tokenizer
            # built before any text is read, so that its load peaks on as little as can be
            release_cache(con)
            # one tokenizer in memory at a time, and none once the counts are stored
            with loaded_for_now():
                for job, _ in group:
                    if job.prepare is not None:
                        job.prepare()
                _count_pass(store, reader, group, progress)
    finally:
        reader.close()
    return done


def counting_label(sources: Sequence[str]) -> str:
    """What counting `sources` (those of the jobs of one pass) reports as: `counting texts (NAME)`, a
    path in a name shortened to its file name (`hf:tokenizer.json`) and the classes as one, or
    `counting texts (NAME, NAME, character classes)`."""
    names: list[str] = []
    for name in sources:
        if name.startswith(CLASS_PREFIX):
            name = "character classes"
        else:
            prefix, sep, arg = name.partition(":")
            if "/" in arg or "\\" in arg:
                name = prefix + sep + PurePath(arg.replace("\\", "/")).name
        if name not in names:
            names.append(name)
    return f"{COUNTING} ({', '.join(names)})"


def _count_pass(
    store: Store, reader: Any, group: Sequence[tuple[_CountJob, str]], progress: Progress | None
) -> None:
    """Read the texts that any job of `group` lacks (its columns of `_need` on `reader`) in
    batches, count them and store the counts: the tokenizer in a worker thread and the light jobs
    meanwhile in this one (with no tokenizer, they count in the worker), the counts made gathered and
    stored while the next piece is counted."""
    group = sorted(group, key=lambda item: item[0].light)  # the tokenizer's job first
    jobs = [job for job, _ in group]
    columns = [column for _, column in group]
    label = counting_label([source for job in jobs for source in job.sources])
    needed = " OR ".join(columns)
    row = reader.execute(f"SELECT count(*) FROM _need WHERE {needed}").fetchone()
    total = int(row[0]) if row else 0
    if progress is not None:
        progress(0, total, label)  # the phase starts: its time counts from here
    # which of the jobs lacks each text (a source added since the others were counted)
    flags = "".join(f", {column}" for column in columns) if len(columns) > 1 else ""
    result = reader.execute(
        f"SELECT p.text_hash, p.text, p.pruned_text{flags} FROM parts p "
        f"JOIN (SELECT rid{flags} FROM _need WHERE {needed}) u ON p.part_uid = u.rid"
    )
    # to_arrow_reader replaces fetch_record_batch in duckdb 1.4
    fetch = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
    rows = min(_BATCH, max(_MIN_SLICE, -(-total // _SLICES)))
    # What counts in the worker thread: the tokenizer's job, or with none, every job. A pass of light
    # jobs alone (the fit's character classes over every text) then counts while this thread reads the
    # next texts and stores the last counts, work DuckDB does outside the GIL.
    heavy = next((job for job in jobs if not job.light), None)
    worker = ThreadPoolExecutor(1, thread_name_prefix="calib-count")
    counted = 0
    pending: _Piece | None = None
    made: list[pa.RecordBatch] = []  # counts made and not yet stored
    try:
        for batch in fetch(_BATCH):
            for piece in _pieces(batch, rows):
                texts = piece.column(1).to_pylist()
                pruned = piece.column(2)
                prunes = None if pruned.null_count == piece.num_rows else pruned.to_pylist()
                picks = [_picked(piece, i) for i in range(len(jobs))] if flags else [None] * len(jobs)
                # the tokenizer counts on its threads while the light jobs count on this one (with no
                # tokenizer, they count in the worker)
                counts: list[_JobCounts | Future[_JobCounts]] = [
                    worker.submit(_count_piece, job, texts, prunes, pick)
                    if heavy is None or job is heavy
                    else _count_piece(job, texts, prunes, pick)
                    for job, pick in zip(jobs, picks, strict=True)
                ]
                del texts, prunes
                if pending is not None:
                    counted += _finish_piece(pending, made)
                    if sum(b.num_rows for b in made) >= _STORE_ROWS:
                        _store_counts(store, made)
                    if progress is not None:
                        progress(counted, total, label)
                pending = _Piece(piece.column(0), jobs, picks, counts)
            release_cache(store.con)  # the texts read so far are not read again
        if pending is not None:
            counted += _finish_piece(pending, made)
            pending = None
        _store_counts(store, made)
        if progress is not None:
            progress(counted, total, label)
    finally:
        worker.shutdown(wait=True, cancel_futures=True)


# A job's counts of a piece: per source, the tokens of each text and of its pruned text (None: none).
_JobCounts = dict[str, tuple[list[int], list[int | None]]]


@dataclass(slots=True)
class _Piece:
    """A piece of texts whose counts are being made, to be stored once made."""

    hashes: pa.Array
    jobs: list[_CountJob]
    picks: list[pa.Array | None]  # per job, the rows it counts (None: all)
    counts: list[_JobCounts | Future[_JobCounts]]


def _picked(piece: pa.RecordBatch, job: int) -> pa.Array | None:
    """The rows of `piece` that job number `job` counts (its flag column): None when all of them."""
    flag = piece.column(3 + job)
    if flag.null_count == 0 and pc.all(flag).as_py():
        return None
    return pa.array(np.flatnonzero(flag.to_numpy(zero_copy_only=False)), pa.int64())


def _count_piece(
    job: _CountJob, texts: list[str], pruned: list[str | None] | None, pick: pa.Array | None
) -> _JobCounts:
    """Count the texts of a piece (those `pick`ed) with a job, and the pruned texts among them."""
    if pick is not None:
        rows = pick.to_pylist()
        texts = [texts[i] for i in rows]
        pruned = None if pruned is None else [pruned[i] for i in rows]
    counts = job.count(texts)
    n = len(texts)
    out: _JobCounts = {}
    if pruned is None:
        for source in job.sources:
            out[source] = (counts[source], [None] * n)
        return out
    indices = [i for i, text in enumerate(pruned) if text is not None]
    pruned_counts = job.count([text for text in pruned if text is not None]) if indices else {}
    for source in job.sources:
        column: list[int | None] = [None] * n
        for j, i in enumerate(indices):
            column[i] = pruned_counts[source][j]
        out[source] = (counts[source], column)
    return out


def _finish_piece(piece: _Piece, made: list[pa.RecordBatch]) -> int:
    """Add the counts of a piece (once the tokenizer's are made) to `made`; returns its number of texts."""
    for job, pick, counting in zip(piece.jobs, piece.picks, piece.counts, strict=True):
        counts = counting.result() if isinstance(counting, Future) else counting
        hashes = piece.hashes if pick is None else piece.hashes.take(pick)
        n = len(hashes)
        # the source and version as dictionaries: a count row holds 4 bytes of each, not the names
        same = pa.array(np.zeros(n, np.int32))
        version = pa.DictionaryArray.from_arrays(same, pa.array([job.version], pa.string()))
        for source, (tokens, pruned) in counts.items():
            made.append(
                pa.record_batch(
                    [
                        pa.DictionaryArray.from_arrays(same, pa.array([source], pa.string())),
                        version,
                        hashes,
                        pa.array(tokens, pa.int64()),
                        pa.array(pruned, pa.int64()),
                    ],
                    names=list(_COUNT_COLUMNS),
                )
            )
    return len(piece.hashes)


# Counts stored per insert, at least (but the last): DuckDB spends about 12 ms on an insert besides
# its rows. The fit's character classes over the 1x scale corpus (936k count rows) spent 0.93 s in
# inserts of a piece each, 0.54-0.61 s in inserts of 64k rows, 0.40-0.42 s of 128k and 0.36 s of 256k.
# A count row held is 33 bytes, and DuckDB holds an insert's rows until it ends: 128k rows it is.
_STORE_ROWS = 1 << 17


def _store_counts(store: Store, made: list[pa.RecordBatch]) -> None:
    """Store the counts in `made` in one insert, and empty it."""
    if made:
        store.add_counts(pa.Table.from_batches(made))
        made.clear()


_COUNT_COLUMNS = ("source", "version", "text_hash", "tokens", "pruned_tokens")


def _pieces(batch: pa.RecordBatch, rows: int) -> list[pa.RecordBatch]:
    """A batch cut so that no piece holds more than `rows` texts, nor much more than `_BATCH_CHARS`
    characters of text."""
    lengths = pc.utf8_length(batch.column(1)).fill_null(0).to_numpy(zero_copy_only=False)
    ends = np.cumsum(lengths, dtype=np.int64)
    pieces: list[pa.RecordBatch] = []
    start, n = 0, batch.num_rows
    while start < n:
        before = int(ends[start - 1]) if start else 0
        # the first text at which the piece reaches `_BATCH_CHARS` characters ends it
        full = int(np.searchsorted(ends, before + _BATCH_CHARS, side="left")) + 1
        stop = min(start + rows, full, n)
        pieces.append(batch.slice(start, stop - start))
        start = stop
    return pieces

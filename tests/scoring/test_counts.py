from __future__ import annotations

import polars as pl
import pytest
from scoring.sessions import basic, call

from calib.core.errors import UsageError
from calib.core.records import ParsedSession, Part, Session
from calib.estimators import get_estimator
from calib.estimators.charclass import class_sources
from calib.scoring.chain import features
from calib.scoring.counts import _MIN_SLICE, update_estimates
from calib.store.store import Store


def test_estimates_are_cached_and_stale_rows_recounted(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    session = basic()
    store.write([session])
    assert update_estimates(store, ["chars4"]) == 8
    assert update_estimates(store, ["chars4"]) == 0
    stored = store.query("SELECT count(*) AS n FROM part_estimates WHERE source = 'chars4'")["n"][0]
    assert stored == 8
    session.parts[7].text = "v" * 12
    store.write([session])  # re-ingest rewrites the session: only the changed text is counted again
    assert update_estimates(store, ["chars4"]) == 1
    tokens = store.query(
        "SELECT tokens FROM part_estimates WHERE part_uid = 't:basic:p7' AND source = 'chars4'"
    )
    assert tokens["tokens"][0] == 3
    monkeypatch.setattr(get_estimator("chars4"), "version", "2", raising=False)
    assert update_estimates(store, ["chars4"]) == 8
    store.write([ParsedSession(Session("t:other", "test", "o", "/y", "test"), [], [])])
    store.con.execute("DELETE FROM parts WHERE part_uid = 't:basic:p0'")
    update_estimates(store, ["chars4"])
    orphans = store.query("SELECT count(*) AS n FROM part_estimates WHERE part_uid = 't:basic:p0'")["n"][0]
    assert orphans == 0


def test_pruned_text_is_counted_beside_the_text(store: Store) -> None:
    session = basic()
    session.parts[4].pruned_text = "[cleared]" * 4  # 36 chars: 9 tokens
    store.write([session])
    update_estimates(store, ["chars4"])
    row = store.query(
        "SELECT tokens, pruned_tokens FROM part_estimates WHERE part_uid = 't:basic:p4' AND source = 'chars4'"
    ).to_dicts()[0]
    assert row == {"tokens": 100, "pruned_tokens": 9}
    others = store.query(
        "SELECT count(pruned_tokens) AS n FROM part_estimates WHERE part_uid <> 't:basic:p4'"
    )
    assert others["n"][0] == 0


def test_class_counts_are_stored_per_class(store: Store) -> None:
    store.write([basic()])
    # asking for one class counts every class in the same pass
    assert update_estimates(store, ["class:letters"]) == 8
    sources = store.query("SELECT DISTINCT source FROM part_estimates ORDER BY source")["source"].to_list()
    assert sources == sorted(class_sources())
    frame = features(store, ["class:letters", "class:digits"])
    row = frame.filter(pl.col("seq") == 1).to_dicts()[0]
    # appended: 400 + 200 letters of tool output, no digits
    assert row["a|class:letters|tool"] == 600.0
    assert row["a|class:digits|tool"] == 0.0
    # DuckDB draws its progress bar on stdout, where `--json` documents go
    assert store.con.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)


def test_unknown_class_lists_the_valid_ones(store: Store) -> None:
    with pytest.raises(UsageError, match="unknown character class 'class:emoji'") as info:
        update_estimates(store, ["class:emoji"])
    assert "class:letters" in str(info.value.hint)


def test_progress_reports_each_source(store: Store) -> None:
    store.write([basic()])
    seen: list[tuple[int, int, str]] = []
    update_estimates(
        store, ["chars4", "class:digits"], lambda done, total, what: seen.append((done, total, what))
    )
    # each source is a phase of its own, reported from its start
    assert seen == [
        (0, 8, "counting texts (character classes)"),
        (8, 8, "counting texts (character classes)"),
        (0, 8, "counting texts (chars4)"),
        (8, 8, "counting texts (chars4)"),
    ]


def test_progress_reports_slices_of_the_texts(store: Store) -> None:
    # a few hundred texts are counted in slices (of at least `_MIN_SLICE`), each reported
    uid = "t:many"
    texts = [f"text number {i}" for i in range(3 * _MIN_SLICE)]
    parts = [Part(f"{uid}:p{i}", uid, i, "user", "user_text", text) for i, text in enumerate(texts)]
    store.write(
        [ParsedSession(Session(uid, "test", uid, "/x", "test"), [call(uid, 0, len(parts), 900, 9)], parts)]
    )
    seen: list[tuple[int, int, str]] = []
    update_estimates(store, ["chars4"], lambda done, total, what: seen.append((done, total, what)))
    total = seen[0][1]
    assert total == len(texts)
    dones = [done for done, _, _ in seen]
    assert dones[0] == 0 and dones[-1] == total and len(dones) >= 3
    assert dones == sorted(dones)


def test_a_text_is_counted_once_however_many_parts_hold_it(store: Store) -> None:
    # two sessions with the same texts under other uids: the second adds parts, not texts to count
    store.write([basic("t:one")])
    texts = store.query("SELECT count(DISTINCT text_hash) AS n FROM parts")["n"][0]
    assert update_estimates(store, ["chars4"]) == texts == 8
    store.write([basic("t:two")])
    assert update_estimates(store, ["chars4"]) == 0
    rows = store.query(
        "SELECT part_uid, tokens FROM part_estimates WHERE source = 'chars4' AND part_uid LIKE 't:two:%' "
        "ORDER BY part_uid"
    ).rows()
    assert len(rows) == 8 and dict(rows)["t:two:p4"] == 100
    kept = store.query("SELECT count(*) AS n FROM text_counts WHERE source = 'chars4'")["n"][0]
    assert kept == 8


def test_cached_counts_are_read_without_loading_the_tokenizer(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import calib.estimators as registry
    from calib.scoring import counts

    session = basic()
    store.write([session])
    assert update_estimates(store, ["tiktoken:o200k_base"]) == 8
    monkeypatch.setattr(registry, "_CACHE", {})
    built: list[str] = []
    real = counts.get_estimator
    monkeypatch.setattr(counts, "get_estimator", lambda name: built.append(name) or real(name))
    assert update_estimates(store, ["tiktoken:o200k_base"]) == 0
    assert built == []  # every count was cached: no tokenizer to load
    session.parts[7].text = "a text not counted yet"
    store.write([session])
    assert update_estimates(store, ["tiktoken:o200k_base"]) == 1
    # asked for before the texts are read, then by the count (the registry builds it once)
    assert set(built) == {"tiktoken:o200k_base"}

from __future__ import annotations

import polars as pl
import pytest
from scoring.sessions import basic, call

from calib.core.errors import EstimatorError, UsageError
from calib.core.records import ParsedSession, Part, Session
from calib.estimators import get_estimator
from calib.estimators.charclass import class_sources
from calib.scoring import counts
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


def _phases(store: Store, sources: list[str]) -> list[tuple[int, int, str]]:
    seen: list[tuple[int, int, str]] = []
    update_estimates(store, sources, lambda done, total, what: seen.append((done, total, what)))
    return seen


def test_light_sources_are_counted_on_the_tokenizers_pass(store: Store) -> None:
    store.write([basic()])
    # one pass over the texts: the tokenizer's, with the agents' rules and the classes beside it
    label = "counting texts (tiktoken:o200k_base, character classes, chars4, cjk)"
    assert _phases(store, ["chars4", "cjk", "class:digits", "tiktoken:o200k_base"]) == [
        (0, 8, label),
        (8, 8, label),
    ]


def test_light_sources_alone_share_one_pass(store: Store) -> None:
    store.write([basic()])
    label = "counting texts (character classes, chars4)"
    assert _phases(store, ["class:digits", "chars4"]) == [(0, 8, label), (8, 8, label)]


def test_each_tokenizer_has_a_pass_of_its_own(store: Store) -> None:
    store.write([basic()])
    # one tokenizer in memory at a time: the light sources go with the first
    phases = _phases(store, ["chars4", "tiktoken:cl100k_base", "tiktoken:o200k_base"])
    assert [what for done, _, what in phases if done == 0] == [
        "counting texts (tiktoken:cl100k_base, chars4)",
        "counting texts (tiktoken:o200k_base)",
    ]


def test_a_pass_counts_each_source_only_where_it_lacks_counts(store: Store) -> None:
    store.write([basic("t:one")])
    assert update_estimates(store, ["chars4"]) == 8
    other = basic("t:two")
    for part in other.parts:
        part.text += " and more"
    other.parts[4].pruned_text = "[cleared] " * 3
    store.write([other])
    sources = ["chars4", "cjk", "class:letters", "tiktoken:o200k_base"]
    # chars4 lacks the second session's 8 texts; the others lack all 16 (the classes are 6 sources)
    assert update_estimates(store, sources) == 8 + 16 + 16 + 16
    stored = store.query("SELECT source, count(*) AS n FROM text_counts GROUP BY source").rows()
    assert dict(stored) == {"chars4": 16, "cjk": 16, "tiktoken:o200k_base": 16} | dict.fromkeys(
        class_sources(), 16
    )
    rows = store.query(
        "SELECT e.source, p.text, p.pruned_text, e.tokens, e.pruned_tokens "
        "FROM part_estimates e JOIN parts p USING (part_uid) WHERE e.source NOT LIKE 'class:%'"
    ).rows()
    assert len(rows) == 3 * 16
    for source, text, pruned, tokens, pruned_tokens in rows:
        estimator = get_estimator(source)
        assert tokens == estimator.count(text)
        assert pruned_tokens == (None if pruned is None else estimator.count(pruned))
    assert any(pruned is not None for _, _, pruned, _, _ in rows)


def test_a_tokenizer_that_fails_stops_the_count_and_stores_none_of_its_piece(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Broken:
        name = "tiktoken:o200k_base"

        def count_many(self, texts: list[str]) -> list[int]:
            raise EstimatorError("the vocabulary went away", hint="reinstall it")

    store.write([basic()])
    real = counts.get_estimator
    monkeypatch.setattr(counts, "get_estimator", lambda name: Broken() if name == Broken.name else real(name))
    with pytest.raises(EstimatorError, match="the vocabulary went away"):
        update_estimates(store, ["chars4", "tiktoken:o200k_base"])
    assert store.query("SELECT count(*) AS n FROM text_counts")["n"][0] == 0
    monkeypatch.setattr(counts, "get_estimator", real)
    assert update_estimates(store, ["chars4", "tiktoken:o200k_base"]) == 16


def _many(store: Store, n: int) -> list[str]:
    """A session of `n` parts with texts of their own, written to `store`; returns the texts."""
    uid = "t:many"
    texts = [f"text number {i} {'x' * (i % 37)}" for i in range(n)]
    parts = [Part(f"{uid}:p{i}", uid, i, "user", "user_text", text) for i, text in enumerate(texts)]
    store.write(
        [ParsedSession(Session(uid, "test", uid, "/x", "test"), [call(uid, 0, len(parts), 900, 9)], parts)]
    )
    return texts


@pytest.mark.parametrize("store_rows", [1, 1 << 18])
def test_counts_stored_a_piece_at_a_time_or_gathered_are_the_same(
    store: Store, monkeypatch: pytest.MonkeyPatch, store_rows: int
) -> None:
    # the pieces' counts are gathered into inserts of at least `_STORE_ROWS` rows (the last one less)
    texts = _many(store, 3 * _MIN_SLICE)
    monkeypatch.setattr(counts, "_STORE_ROWS", store_rows)
    inserts: list[int] = []
    add = store.add_counts
    monkeypatch.setattr(store, "add_counts", lambda table: inserts.append(table.num_rows) or add(table))
    sources = ["chars4", "class:letters", "class:digits"]
    assert update_estimates(store, sources) == 2 * len(texts)
    assert sum(inserts) == len(texts) * (1 + len(class_sources()))
    assert len(inserts) == (1 if store_rows > sum(inserts) else 3)
    stored = store.query(
        "SELECT p.text, e.source, e.tokens FROM part_estimates e JOIN parts p USING (part_uid)"
    ).rows()
    assert len(stored) == sum(inserts)
    for text, source, tokens in stored:
        if source == "chars4":
            assert tokens == get_estimator("chars4").count(text)
        elif source == "class:letters":
            assert tokens == sum(c.isalpha() for c in text)
        elif source == "class:digits":
            assert tokens == sum(c.isdigit() for c in text)


def test_progress_reports_slices_of_the_texts(store: Store) -> None:
    # a few hundred texts are counted in slices (of at least `_MIN_SLICE`), each reported
    texts = _many(store, 3 * _MIN_SLICE)
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

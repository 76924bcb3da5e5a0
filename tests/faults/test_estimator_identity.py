"""The count cache is keyed by an estimator's whole identity, files included; a wrong name is a usage error."""

from __future__ import annotations

import json
from pathlib import Path

from faults.kit import counts, error_line, json_of, run_calib

from calib.store.store import Store


def _score(db: Path, name: str) -> list[dict[str, object]]:
    result = run_calib("score", "--db", db, "-e", name, "--json")
    assert result.returncode == 0, result.stderr
    return json_of(result)


def test_an_edited_weights_file_is_counted_again(store_copy: Path, tmp_path: Path) -> None:
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"weights": {"letters": 0.25, "whitespace": 0.1}, "intercept": 1}))
    name = f"charclass:{weights}"
    first = _score(store_copy, name)
    weights.write_text(json.dumps({"weights": {"letters": 0.5, "whitespace": 0.3}, "intercept": 2}))
    second = _score(store_copy, name)
    fresh = tmp_path / "fresh.duckdb"
    fresh.write_bytes(store_copy.read_bytes())
    with Store(fresh) as store:
        store.con.execute("DELETE FROM text_counts")
    assert second == _score(fresh, name)  # what a store that never saw the old file gives
    assert second != first
    with Store(store_copy, read_only=True) as store:
        rows = store.query("SELECT count(*) AS n FROM part_estimates WHERE source = ?", [name])["n"][0]
        kept = store.query("SELECT count(*) AS n FROM text_counts WHERE source = ?", [name])["n"][0]
        texts = store.query("SELECT count(DISTINCT text_hash) AS n FROM parts")["n"][0]
        parts = counts(store_copy)["parts"]
    assert rows == parts  # each part has its text's count, once: the old file's counts replaced
    assert kept == texts  # one count per distinct text, not kept beside the old ones


def test_an_unknown_estimator_is_a_usage_error_listing_the_names(store_copy: Path) -> None:
    stored = counts(store_copy)
    for command in (("score",), ("replay",), ("report", "--no-figures", "--out", store_copy.parent / "r")):
        result = run_calib(*command, "--db", store_copy, "-e", "nosuch")
        assert result.returncode == 2
        line = error_line(result)
        assert line.startswith(
            "Error: unknown estimator 'nosuch'; valid names: chars4, cjk, cjk:1.3, charclass,"
        )
        assert line.endswith("charclass:ARG, hf:ARG, ctok:ARG, calibrated:ARG")
    assert counts(store_copy) == stored

"""`calib export --parquet` as a library: a store written as Parquet files and read back as a store."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

from calib.calibration.pipeline import run_fit
from calib.core.errors import NotAStoreError, StoreError, UsageError
from calib.core.records import AgentEstimate, Call, ParsedSession, Part, Session
from calib.ingest.pipeline import ingest
from calib.scoring.counts import update_estimates
from calib.scoring.score import score_store
from calib.store.parquet import MANIFEST, read_manifest
from calib.store.store import ParquetStore, Store, check_store_file, export_parquet, open_store
from calib.synth import write_sample

# A tool name that must be escaped in a folder name, and a session without a start time.
ODD_TOOL = "my agent/2"


def _odd_session() -> list[ParsedSession | AgentEstimate]:
    """A session of ODD_TOOL with no start time (month `unknown`), and an estimate an agent logged."""
    uid = f"{ODD_TOOL}:s1"
    session = Session(uid, ODD_TOOL, "s1", "/logs/s1.json", "custom", meta={"k": [1, 2]})
    calls, parts = [], []
    for k in range(3):
        parts.append(Part(f"{uid}:u{k}", uid, 2 * k, "user", "user_text", f"question {k} 質問"))
        call_uid = f"{uid}:c{k}"
        calls.append(
            Call(
                call_uid, uid, k, 0, 2 * k + 1, "ok", "gemini",
                provider="google", model="gemini-2.5-pro", input=1000 + 120 * k, output=20,
                ctx=1000 + 120 * k, carry=20, usage_raw={"input": 1000 + 120 * k, "output": 20},
            )
        )  # fmt: skip
        parts.append(
            Part(
                f"{uid}:a{k}", uid, 2 * k + 1, "assistant", "assistant_text", f"answer {k}", call_uid=call_uid
            )
        )
    estimate = AgentEstimate(uid, "/logs/agent.log", 7, 900, 1000, ts=datetime(2026, 1, 2, 3, 4, 5))
    return [ParsedSession(session, calls, parts), estimate]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of synthetic gemini-cli and OpenCode sessions, one odd session, and chars4 counted."""
    root = tmp_path_factory.mktemp("parquet")
    write_sample("gemini-cli", root / "gemini", layout="gemini-jsonl", sessions=3, seed=1)
    write_sample("opencode", root / "opencode", sessions=3, seed=2)
    path = root / "calib.duckdb"
    result = ingest([root / "gemini", root / "opencode"], db=path, workers=1)
    assert not result.errors
    with Store(path) as store:
        store.write(_odd_session())
        update_estimates(store, ["chars4"])  # a count cache with rows to export
    return path


@pytest.fixture(scope="module")
def exported(db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "pooled"
    export_parquet(db, out)
    return out


def _base_tables(store: Store) -> list[str]:
    return [
        r[0]
        for r in store.con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT internal AND NOT temporary ORDER BY 1"
        ).fetchall()
    ]


def _sorted_rows(frame: pl.DataFrame) -> list[str]:
    return sorted(json.dumps(row, default=str, sort_keys=True) for row in frame.to_dicts())


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_every_table_and_view_comes_back_with_the_same_rows_and_columns(db: Path, exported: Path) -> None:
    manifest = read_manifest(exported)
    with Store(db, read_only=True) as original, open_store(exported) as folder:
        assert isinstance(folder, ParquetStore) and folder.read_only
        tables = _base_tables(original)
        assert "text_counts" in tables and "part_estimates" not in tables  # a view since migration 014
        assert sorted(manifest["tables"]) == tables
        assert folder.applied_migrations() == original.applied_migrations()
        assert manifest["schema_version"] == max(original.applied_migrations())
        views = original.query("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal")
        assert {v["name"]: v["sql"] for v in manifest["views"]} == dict(views.iter_rows())
        for name in [*tables, *views["view_name"]]:
            want = original.query(f"SELECT * FROM {name}")
            got = folder.query(f"SELECT * FROM {name}")
            assert got.schema == want.schema, name
            assert _sorted_rows(got) == _sorted_rows(want), name
            assert want.height > 0, name  # every table and view holds rows to compare
            if name in tables:
                assert manifest["tables"][name]["rows"] == want.height
        assert folder.parts().columns == original.parts().columns
        assert folder.counts() == original.counts()


def test_tables_with_sessions_are_partitioned_by_tool_and_month(db: Path, exported: Path) -> None:
    with Store(db, read_only=True) as original:
        months = "coalesce(strftime(s.started_at, '%Y-%m'), 'unknown')"
        expected = {
            table: set(
                original.con.execute(
                    f"SELECT DISTINCT s.tool, {months} FROM {table} t JOIN sessions s USING (session_uid)"
                ).fetchall()
            )
            for table in ("sessions", "calls", "parts")
        }
    assert (ODD_TOOL, "unknown") in expected["sessions"]
    assert len({tool for tool, _ in expected["sessions"]}) == 3
    manifest = read_manifest(exported)
    for table, keys in expected.items():
        assert manifest["tables"][table]["partition_by"] == ["tool", "month"]
        found = {
            (p.parent.parent.name, p.parent.name) for p in (exported / table).rglob("*.parquet")
        }  # tool=X/month=Y/data_0.parquet
        assert found == {
            (f"tool={tool}".replace("/", "%2F").replace(" ", "%20"), f"month={m}") for tool, m in keys
        }
    for table in ("files", "text_counts", "schema_migrations", "agent_estimates"):
        assert manifest["tables"][table]["partition_by"] == []
        assert sorted(p.name for p in (exported / table).iterdir()) == ["data_0.parquet"]
    # the session's own tool is kept in the folder name only, where every reader takes it from
    files = str(exported / "sessions" / "**" / "*.parquet")
    plain = duckdb.sql(f"SELECT * FROM read_parquet('{files}', hive_partitioning = false)")
    assert "tool" not in plain.columns


def test_other_readers_get_tool_and_month_from_the_folders(db: Path, exported: Path) -> None:
    """The README's recipe: DuckDB on another host reads the parts with their session's tool and month."""
    files = str(exported / "parts" / "**" / "*.parquet")
    rows = duckdb.sql(
        f"SELECT tool, month, count(*) FROM read_parquet('{files}', hive_partitioning = true) "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    with Store(db, read_only=True) as original:
        want = original.con.execute(
            "SELECT s.tool, coalesce(strftime(s.started_at, '%Y-%m'), 'unknown'), count(*) "
            "FROM parts p JOIN sessions s USING (session_uid) GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert rows == want


def test_score_on_the_folder_equals_score_on_the_store_and_writes_nothing(db: Path, exported: Path) -> None:
    before = _tree(exported)
    # charclass is not in the exported count cache: the folder counts it in memory
    on_folder = score_store(exported, ["chars4", "charclass"])
    with open_store(exported) as folder:
        cached = folder.query("SELECT DISTINCT source FROM text_counts")["source"].to_list()
    assert cached == ["chars4"]  # what scoring counted was not written back
    assert _tree(exported) == before
    on_store = score_store(db, ["chars4", "charclass"])
    assert on_folder.height > 0
    assert on_folder.equals(on_store)


def test_fit_on_the_folder_gives_the_config_of_the_store(db: Path, exported: Path, tmp_path: Path) -> None:
    from_folder = run_fit(db=exported, ingest=False, base="chars4", out=tmp_path / "folder.json")
    from_store = run_fit(db=db, ingest=False, base="chars4", out=tmp_path / "store.json")
    assert from_folder.train_calls > 0
    assert from_folder.config == from_store.config
    assert from_folder.rows == from_store.rows


def test_a_folder_that_is_not_an_export_is_refused_and_kept(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(UsageError) as caught:
        export_parquet(db, out)
    assert str(caught.value) == (
        f"cannot export to {out}: the folder is not empty and not a calib export; name a new or empty "
        "folder, or one an earlier `calib export --parquet` wrote; nothing was changed"
    )
    assert _tree(out) == {"notes.txt": b"keep me"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # no half-written export beside it


def test_an_export_holding_a_file_of_its_own_is_not_replaced(
    db: Path, exported: Path, tmp_path: Path
) -> None:
    out = tmp_path / "copy"
    shutil.copytree(exported, out)
    (out / "parts" / "notes.txt").write_text("mine")  # inside a table folder: fine, replaced with it
    (out / "report.md").write_text("mine")
    before = _tree(out)
    with pytest.raises(UsageError, match=r"it holds 'report.md', which a calib export does not write"):
        export_parquet(db, out)
    assert _tree(out) == before


def test_a_second_export_replaces_the_first(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "pooled"
    export_parquet(db, out)
    assert (out / "sessions" / "tool=opencode").is_dir()
    only_gemini = tmp_path / "gemini.duckdb"
    assert not ingest([db.parent / "gemini"], db=only_gemini, workers=1).errors
    result = export_parquet(only_gemini, out)
    assert result.replaced
    assert not (out / "sessions" / "tool=opencode").exists()  # replaced, not merged
    assert read_manifest(out)["tables"]["sessions"]["rows"] == result.tables["sessions"]["rows"] == 3
    with open_store(out) as folder:
        assert folder.query("SELECT DISTINCT tool FROM sessions")["tool"].to_list() == ["gemini-cli"]
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no work folder left


def test_an_empty_folder_is_used_and_a_file_is_refused(db: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not export_parquet(db, empty).replaced
    assert (empty / MANIFEST).is_file()
    taken = tmp_path / "taken"
    taken.write_text("mine")
    with pytest.raises(UsageError, match="it is a file"):
        export_parquet(db, taken)
    assert taken.read_text() == "mine"


def test_the_store_path_check_tells_an_export_from_another_folder(exported: Path, tmp_path: Path) -> None:
    check_store_file(exported, create=False)  # a store that can be read
    with pytest.raises(NotAStoreError, match="is a Parquet export, which calib only reads"):
        check_store_file(exported, create=True)
    with pytest.raises(NotAStoreError) as caught:
        check_store_file(tmp_path, create=False)
    assert str(caught.value) == (
        f"not a calib store: {tmp_path} is a folder; point --db at a .duckdb file, or at a folder "
        "`calib export --parquet` wrote"
    )


def test_the_folder_store_is_read_only_and_has_extension_loading_off(exported: Path) -> None:
    with open_store(exported) as folder:
        settings = folder.con.execute(
            "SELECT current_setting('autoinstall_known_extensions'), current_setting('autoload_known_extensions')"
        ).fetchone()
        assert settings == (False, False)
        with pytest.raises(StoreError, match="read-only"):
            folder.write(_odd_session())
    with pytest.raises(UsageError, match="is already a Parquet export"):
        export_parquet(exported, exported.parent / "again")


def test_an_export_of_another_schema_is_refused(exported: Path, tmp_path: Path) -> None:
    newer = tmp_path / "newer"
    shutil.copytree(exported, newer)
    manifest = read_manifest(newer)
    manifest["migrations"].append({"version": 999, "name": "future"})
    (newer / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match=r"written by a newer calib \(migration 999\)"):
        open_store(newer)
    manifest["migrations"] = manifest["migrations"][:-2]
    (newer / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match=r"written before migration .*export the store again"):
        open_store(newer)


def test_a_manifest_can_only_add_views(exported: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(exported, bad)
    manifest = read_manifest(bad)
    target = tmp_path / "written.csv"
    manifest["views"].append(
        {"name": "x", "sql": f"CREATE VIEW x AS SELECT 1; COPY (SELECT 1) TO '{target}'"}
    )
    (bad / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match="is not one CREATE VIEW statement"):
        open_store(bad)
    assert not target.exists()

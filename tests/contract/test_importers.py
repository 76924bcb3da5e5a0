"""The one contract every registered importer must meet, run over a synthetic sample of each of its layouts.

Written for the author of a new importer: each test checks one rule, and its failure message names the
importer, the sample layout and the source, and says what the contract expects. To put a new agent under
this suite, register it in `calib.importers._REGISTRY` and give it a writer in `calib.synth.WRITERS`.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import re
import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, get_args

import pytest

import calib.importers as registry
from calib import synth
from calib.core.errors import InputError, InputWarning, UsageError
from calib.core.records import (
    PART_KINDS,
    ROLES,
    AgentEstimate,
    ParsedSession,
    Record,
    UsageStatus,
    UsageStyle,
)
from calib.core.usage import carried_tokens, context_tokens
from calib.importers import HEAD_BYTES, Importer, get_importer, importer_names, incremental
from calib.importers.sqlite import SQLITE_MAGIC
from calib.ingest.sources import Source, find_sources

SESSIONS = 3  # sessions per sample: enough for uniqueness checks, small enough to keep the suite fast
SEED = 11
STATUSES = get_args(UsageStatus)
STYLES = get_args(UsageStyle)


def _synth_layouts(name: str) -> tuple[str, ...]:
    """The layouts calib.synth can write for importer `name` (empty when it has no writer)."""
    if name not in synth.WRITERS or name not in synth.TOOLS:
        return ()
    try:
        return synth.layouts(name)
    except UsageError:
        return ()


CASES = [(name, layout) for name in importer_names() for layout in _synth_layouts(name)]


# -- the samples -------------------------------------------------------------------------------------


def _snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every file and folder under `root`: (size, mtime, sha256) of files, mtime of folders."""
    out: dict[str, tuple[Any, ...]] = {}
    for dirpath, _dirs, files in os.walk(root):
        here = Path(dirpath)
        out[str(here.relative_to(root)) + "/"] = (here.stat().st_mtime_ns,)
        for file in files:
            path = here / file
            st = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns, digest)
    return out


@dataclass
class Sample:
    """One synthetic sample of one layout, the sources found in it and (lazily) what they parse into."""

    name: str
    layout: str
    root: Path
    truth: dict[str, Any]
    snapshot: dict[str, tuple[Any, ...]]
    sources: list[Source] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _parsed: dict[Path, list[Record]] = field(default_factory=dict)

    def where(self, path: Path | None = None) -> str:
        """`importer 'x' on its 'layout' sample[, source rel/path]`, for failure messages."""
        text = f"importer {self.name!r} on its {self.layout!r} sample"
        if path is not None:
            text += f", source {self.rel(path)}"
        return text

    def rel(self, path: Path | str) -> str:
        try:
            return str(Path(path).relative_to(self.root))
        except ValueError:
            return str(path)

    def own_sources(self) -> list[Source]:
        """The sources of this sample, which must all be this importer's (checked by the sniffing test)."""
        if not self.sources:
            pytest.fail(
                f"{self.where()}: find_sources found no source in {self.root}; the importer's "
                f"sniff_file/sniff_dir must claim the files calib.synth writes for layout {self.layout!r} "
                f"(skipped: {[self.rel(p) for p in self.skipped]})"
            )
        return self.sources

    def records(self, source: Source) -> list[Record]:
        """What `parse` yields for one source (parsed once per module)."""
        if source.path not in self._parsed:
            self._parsed[source.path] = parse_or_fail(self, source.importer, source.path)
        return self._parsed[source.path]

    def all_records(self) -> Iterator[tuple[Source, Record]]:
        for source in self.own_sources():
            for record in self.records(source):
                yield source, record

    def sessions(self) -> list[tuple[Source, ParsedSession]]:
        return [(s, r) for s, r in self.all_records() if isinstance(r, ParsedSession)]


def parse_or_fail(sample: Sample, importer: Importer, path: Path) -> list[Record]:
    """`list(importer.parse(path))`, turning any exception into a failure that says whose and where."""
    try:
        return list(importer.parse(path))
    except Exception as exc:
        pytest.fail(
            f"{sample.where(path)}: parse raised {type(exc).__name__}: {exc}; an importer must parse every "
            "layout calib.synth writes for it"
        )


@pytest.fixture(scope="module", params=CASES, ids=[f"{n}/{layout}" for n, layout in CASES])
def sample(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Sample:
    """A sample of one (importer, layout), written once per module; snapshotted before anything reads it."""
    name, layout = request.param
    root = tmp_path_factory.mktemp(f"{name}-{layout}") / "data"
    result = synth.write_sample(name, root, layout=layout, sessions=SESSIONS, seed=SEED)
    snapshot = _snapshot(root)
    truth = json.loads(result.truth.read_text(encoding="utf-8"))
    sources, skipped, errors = find_sources([root])
    return Sample(name, layout, root, truth, snapshot, sources, skipped, [str(e) for e in errors])


# -- registry ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", importer_names())
def test_registry_module_exposes_a_conforming_importer(name: str) -> None:
    module_path = registry._REGISTRY[name]
    module = importlib.import_module(module_path)
    assert hasattr(module, "IMPORTER"), (
        f"importer {name!r}: module {module_path} (named in calib.importers._REGISTRY) must define "
        "a module-level IMPORTER, the importer instance"
    )
    importer = module.IMPORTER
    assert get_importer(name) is importer, (
        f"importer {name!r}: get_importer must return {module_path}.IMPORTER"
    )
    assert isinstance(importer, Importer), (
        f"importer {name!r}: IMPORTER must satisfy calib.importers.Importer: attribute `name` and methods "
        f"sniff_file, sniff_dir, parse, default_paths (missing: "
        f"{[a for a in ('name', 'sniff_file', 'sniff_dir', 'parse', 'default_paths') if not hasattr(importer, a)]})"
    )
    assert importer.name == name, (
        f"importer {name!r}: IMPORTER.name is {importer.name!r}; it must equal its registry name, "
        "which is also the value of sessions.tool"
    )
    arity = {"sniff_file": 2, "sniff_dir": 1, "parse": 1, "default_paths": 0}
    if incremental(importer) is not None:
        arity["parse_from"] = 3
    for method, n in arity.items():
        params = list(inspect.signature(getattr(importer, method)).parameters)
        assert len(params) == n, (
            f"importer {name!r}: {method} takes {params}; the contract calls it with {n} positional "
            f"argument(s) (see calib.importers.Importer / IncrementalImporter)"
        )
    paths = importer.default_paths()
    assert isinstance(paths, list) and all(isinstance(p, Path) for p in paths), (
        f"importer {name!r}: default_paths() returned {paths!r}; it must return a list of pathlib.Path "
        "(folders that may not exist)"
    )


@pytest.mark.parametrize("name", importer_names())
def test_importer_has_a_synthetic_writer(name: str) -> None:
    assert _synth_layouts(name), (
        f"importer {name!r} has no writer in calib.synth.WRITERS (or it writes no layout), so this contract "
        "suite cannot test it: add calib/synth/<agent>.py with LAYOUTS and write(), and register it"
    )


def test_unknown_importer_name_lists_the_valid_ones() -> None:
    with pytest.raises(UsageError) as info:
        get_importer("no-such-agent")
    message = str(info.value)
    missing = [n for n in importer_names() if n not in message]
    assert "no-such-agent" in message and not missing, (
        f"get_importer('no-such-agent') said {message!r}; an unknown name must be repeated and every valid "
        f"name listed (missing: {missing})"
    )


# -- sniffing ----------------------------------------------------------------------------------------


def _head(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(HEAD_BYTES)


def _claimants(path: Path) -> list[str]:
    """Names of every importer whose sniffer claims `path` (a file or a folder)."""
    names = []
    for importer in registry.all_importers():
        claimed = importer.sniff_dir(path) if path.is_dir() else importer.sniff_file(path, _head(path))
        if claimed:
            names.append(importer.name)
    return names


def test_sample_sources_are_claimed_by_this_importer_only(sample: Sample) -> None:
    assert not sample.errors, f"{sample.where()}: find_sources reported errors: {sample.errors}"
    for source in sample.own_sources():
        assert source.importer.name == sample.name, (
            f"{sample.where(source.path)}: find_sources gave this source to {source.importer.name!r}; "
            f"the {sample.name!r} sniffers must claim it and the other importers' must not"
        )
        claimants = _claimants(source.path)
        assert claimants == [sample.name], (
            f"{sample.where(source.path)}: claimed by {claimants}; exactly one importer may claim a source "
            f"(only {sample.name!r} here): make the sniffers check more than the file type"
        )
    assert any(Path(p).name == synth.TRUTH_FILE for p in sample.skipped), (
        f"{sample.where()}: truth.json was not skipped; no sniffer may claim a file that is not a session"
    )


def _decoys(folder: Path) -> list[Path]:
    """Files that are no session of any agent, written into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    texts = {
        "README.md": "# Notes\n\nNothing to see here: this file is not a session.\n",
        "notes.json": json.dumps({"id": 3, "name": "widget", "items": [1, 2, 3], "ok": True}, indent=2),
        "list.json": json.dumps([{"role": "user", "content": "hi"}]),
        "events.jsonl": "".join(json.dumps({"event": "click", "n": i}) + "\n" for i in range(5)),
        "empty.json": "",
        "empty.jsonl": "",
        "empty.log": "",
        "blank": "\n\n",
    }
    paths = []
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
        paths.append(folder / name)
    con = sqlite3.connect(folder / "notes.db")
    try:
        con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        con.execute("INSERT INTO notes (body) VALUES ('not a session')")
        con.commit()
    finally:
        con.close()
    paths.append(folder / "notes.db")
    return paths


def test_files_that_are_no_session_are_claimed_by_no_importer(
    sample: Sample, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The decoys sit in the same folders the sample's sources sit in, where the sniffers look hardest.
    mirror = tmp_path_factory.mktemp("decoys")
    folders = {Path(".")}
    for source in sample.own_sources():
        folders.add(source.path.relative_to(sample.root).parent)
        if source.path.is_dir():
            folders.add(source.path.relative_to(sample.root))
    for folder in sorted(folders):
        for decoy in _decoys(mirror / folder):
            claimants = _claimants(decoy)
            assert not claimants, (
                f"{claimants} claim {decoy.relative_to(mirror)} (placed where the {sample.layout!r} sample "
                "keeps its sources), which is no session; a sniffer must not claim README files, "
                "arbitrary JSON, empty files or foreign SQLite databases"
            )


# -- records -----------------------------------------------------------------------------------------


def _documented_layouts(name: str) -> tuple[tuple[str, ...], str]:
    """The importer module's LAYOUTS when it has one, else its docstring (which must name each layout)."""
    module = importlib.import_module(registry._REGISTRY[name])
    layouts = getattr(module, "LAYOUTS", None)
    if isinstance(layouts, tuple | list):
        return tuple(layouts), ""
    return (), module.__doc__ or ""


def _check_estimate(sample: Sample, source: Source, est: AgentEstimate) -> None:
    where = sample.where(source.path)
    assert est.source_path == str(source.path), (
        f"{where}: AgentEstimate.source_path is {est.source_path!r}; it must be the source parsed"
    )
    assert isinstance(est.line, int) and est.line >= 1, f"{where}: AgentEstimate.line must be a 1-based line"
    assert isinstance(est.estimated, int) and isinstance(est.actual, int), (
        f"{where}: AgentEstimate.estimated/actual must be ints, got {est.estimated!r}/{est.actual!r}"
    )
    assert est.session_uid is None or est.session_uid.startswith(f"{sample.name}:"), (
        f"{where}: AgentEstimate.session_uid {est.session_uid!r} must be None or a '{sample.name}:...' uid"
    )


def _line_count(path: Path) -> int:
    data = path.read_bytes()
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def _check_warning(where: str, source_path: Path, warning: InputWarning) -> None:
    """A warning about part of a source left out names the file (the source, or a file in a folder
    source) and a line of that file."""
    assert warning.path is not None, f"{where}: InputWarning {warning} names no path; it must name the source"
    named = Path(warning.path)
    assert named == source_path or source_path in named.parents, (
        f"{where}: InputWarning.path is {warning.path!r}; it must be the source parsed ({source_path}) or a "
        "file inside it"
    )
    if warning.line is None or not named.is_file():
        return
    lines = _line_count(named)
    assert isinstance(warning.line, int) and 1 <= warning.line <= lines, (
        f"{where}: InputWarning.line is {warning.line!r}; it must be a 1-based line of {named.name}, which "
        f"has {lines} lines"
    )


def _check_usage(where: str, call: Any) -> None:
    assert call.usage_status in STATUSES, f"{where}: usage_status {call.usage_status!r} not in {STATUSES}"
    assert call.usage_style in STYLES, f"{where}: usage_style {call.usage_style!r} not in {STYLES}"
    if call.usage_status != "ok":
        return
    if call.output_placeholder:
        assert call.carry is None, f"{where}: a placeholder output must not be carried (carry must be None)"
        return
    style = call.usage_style
    ctx = context_tokens(style, call.input, call.cache_read, call.cache_write)
    assert call.ctx == ctx, (
        f"{where}: ctx is {call.ctx} but calib.core.usage.context_tokens({style!r}, input={call.input}, "
        f"cache_read={call.cache_read}, cache_write={call.cache_write}) gives {ctx}; importers must derive "
        "ctx with context_tokens so the rule lives once"
    )
    allowed = {carried_tokens(style, call.output, call.reasoning)}
    if style in ("anthropic", "openai"):  # OpenCode and Codex re-send reasoning (Codex within a turn)
        allowed.add(carried_tokens(style, call.output, call.reasoning, reasoning_resent=True))
    assert call.carry in allowed, (
        f"{where}: carry is {call.carry} but calib.core.usage.carried_tokens({style!r}, output={call.output}, "
        f"reasoning={call.reasoning}) allows only {sorted(x for x in allowed if x is not None)}"
    )


def _check_session(sample: Sample, source: Source, parsed: ParsedSession, documented: Any) -> None:
    s = parsed.session
    where = f"{sample.where(source.path)}, session {s.uid!r}"
    assert s.tool == sample.name, f"{where}: session.tool is {s.tool!r}; it must be the registry name"
    assert s.uid.startswith(f"{sample.name}:{s.native_id}"), (
        f"{where}: session uid must be the natural key '<tool>:<native id>[:<discriminator>]' "
        f"(native_id {s.native_id!r})"
    )
    assert s.source_path == str(source.path), (
        f"{where}: source_path is {s.source_path!r}; it must be the source parsed ({source.path})"
    )
    layouts, doc = documented
    if layouts:
        assert s.layout in layouts, f"{where}: layout {s.layout!r} is not in the module's LAYOUTS {layouts}"
    else:
        assert s.layout and f"`{s.layout}`" in doc, (
            f"{where}: layout {s.layout!r} is not documented: define a LAYOUTS tuple in the importer "
            "module (or name each layout in `backquotes` in its docstring)"
        )

    parts, calls = parsed.parts, parsed.calls
    call_uids = [c.uid for c in calls]
    dupes = [u for u, n in Counter(call_uids).items() if n > 1]
    assert not dupes, f"{where}: call uids must be unique within a session; repeated: {dupes[:3]}"
    part_dupes = [u for u, n in Counter(p.uid for p in parts).items() if n > 1]
    assert not part_dupes, f"{where}: part uids must be unique within a session; repeated: {part_dupes[:3]}"
    assert [p.seq for p in parts] == list(range(len(parts))), (
        f"{where}: part seqs must be exactly 0..{len(parts) - 1} in list order; got "
        f"{[p.seq for p in parts][:12]}..."
    )
    assert [c.seq for c in calls] == list(range(len(calls))), (
        f"{where}: call seqs must be exactly 0..{len(calls) - 1} in list order; got {[c.seq for c in calls]}"
    )
    known = set(call_uids)
    for p in parts:
        pw = f"{where}, part {p.seq}"
        assert p.session_uid == s.uid, f"{pw}: part.session_uid {p.session_uid!r} is not its session's uid"
        assert p.kind in PART_KINDS, f"{pw}: kind {p.kind!r} is not one of calib.core.records.PART_KINDS"
        assert p.role in ROLES, f"{pw}: role {p.role!r} is not one of calib.core.records.ROLES"
        assert isinstance(p.text, str), f"{pw}: text must be a str, got {type(p.text).__name__}"
        assert p.call_uid is None or p.call_uid in known, (
            f"{pw}: call_uid {p.call_uid!r} names no call of this session; it must be None or the uid of "
            "the call that produced the part"
        )
    for c in calls:
        cw = f"{where}, call {c.seq}"
        assert c.session_uid == s.uid, f"{cw}: call.session_uid {c.session_uid!r} is not its session's uid"
        assert 0 <= c.prompt_start <= c.prompt_end <= len(parts), (
            f"{cw}: must have 0 <= prompt_start ({c.prompt_start}) <= prompt_end ({c.prompt_end}) <= "
            f"number of parts ({len(parts)})"
        )
        _check_usage(cw, c)


def test_parse_yields_records_that_keep_the_record_contract(sample: Sample) -> None:
    documented = _documented_layouts(sample.name)
    uids: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for source, record in sample.all_records():
        kinds[type(record).__name__] += 1
        if isinstance(record, ParsedSession):
            uids[record.session.uid] += 1
            _check_session(sample, source, record, documented)
        elif isinstance(record, AgentEstimate):
            _check_estimate(sample, source, record)
        elif isinstance(record, InputWarning):
            _check_warning(sample.where(source.path), source.path, record)
        else:
            pytest.fail(
                f"{sample.where(source.path)}: parse yielded a {type(record).__name__}; it may only yield "
                "calib.core.records.ParsedSession, AgentEstimate or InputWarning"
            )
    assert kinds, f"{sample.where()}: parse yielded no records from a sample of {SESSIONS} sessions"
    dupes = [u for u, n in uids.items() if n > 1]
    assert not dupes, f"{sample.where()}: session uids must be unique across the sample; repeated: {dupes}"


def test_parse_is_deterministic(sample: Sample) -> None:
    for source in sample.own_sources():
        first = sample.records(source)
        again = parse_or_fail(sample, source.importer, source.path)
        assert first == again, (
            f"{sample.where(source.path)}: parsing the same source twice gave different records; parse must "
            "be deterministic (no dict/set order, clock or random ids in records)"
        )


def test_sniffing_and_parsing_never_write_to_the_sources(sample: Sample) -> None:
    find_sources([sample.root])
    for source in sample.own_sources():
        list(source.importer.parse(source.path))
        inc = incremental(source.importer)
        if inc is not None:
            inc.parse_from(source.path, 0, None)
    after = _snapshot(sample.root)
    created = sorted(set(after) - set(sample.snapshot))
    assert not created, (
        f"{sample.where()}: sniffing and parsing created {created}; sources are only ever read (SQLite: "
        "open with calib.importers.sqlite.connect_readonly, which never makes -wal/-shm files)"
    )
    removed = sorted(set(sample.snapshot) - set(after))
    assert not removed, f"{sample.where()}: sniffing and parsing removed {removed}"
    changed = sorted(k for k in after if after[k] != sample.snapshot[k])
    assert not changed, (
        f"{sample.where()}: sniffing and parsing changed {changed} (bytes, size or mtime; for a folder, a "
        "file was created or removed in it); sources are only ever read"
    )


# -- truth -------------------------------------------------------------------------------------------


def test_calls_agree_with_the_sample_truth(sample: Sample) -> None:
    truth = sample.truth
    sessions = {p.session.native_id: p for _, p in sample.sessions()}
    estimates = [r for _, r in sample.all_records() if isinstance(r, AgentEstimate)]
    assert len(sessions) == truth["sessions"], (
        f"{sample.where()}: parsed {len(sessions)} sessions, truth.json has {truth['sessions']}"
    )
    true_ctx: Counter[int] = Counter()
    for st in truth["session_truth"]:
        parsed = sessions.get(st["id"])
        assert parsed is not None, f"{sample.where()}: truth session {st['id']} was not parsed (native_id)"
        where = f"{sample.where()}, session {parsed.session.uid!r}"
        assert len(parsed.calls) == len(st["calls"]), (
            f"{where}: {len(parsed.calls)} calls, truth.json has {len(st['calls'])} (one call per request)"
        )
        pairs = {(c.provider, c.model) for c in parsed.calls}
        assert pairs == {(st["provider"], st["model"])}, (
            f"{where}: calls name (provider, model) {sorted(pairs, key=str)}; truth.json has "
            f"{(st['provider'], st['model'])}"
        )
        for call, rec in zip(parsed.calls, st["calls"], strict=True):
            if rec["reported"]:
                true_ctx[rec["ctx"]] += 1
            if call.usage_status == "ok":
                assert rec["reported"] and call.ctx == rec["ctx"], (
                    f"{where}, call {call.seq}: ctx {call.ctx} with usage 'ok', truth.json has ctx "
                    f"{rec['ctx']} (reported: {rec['reported']})"
                )
            elif not rec["reported"]:
                assert call.usage_status == "missing", (
                    f"{where}, call {call.seq}: no usage was recorded, so usage_status must be 'missing', "
                    f"not {call.usage_status!r}"
                )
    stray = [e.actual for e in estimates if e.actual not in true_ctx]
    assert not stray, f"{sample.where()}: estimate pairs with an actual that is no true ctx: {stray[:5]}"


# -- incremental -------------------------------------------------------------------------------------


def test_parse_from_the_start_equals_parse(sample: Sample) -> None:
    importer = get_importer(sample.name)
    inc = incremental(importer)
    if inc is None:
        pytest.skip(f"importer {sample.name!r} has no parse_from (optional)")
    for source in sample.own_sources():
        where = sample.where(source.path)
        try:
            got = inc.parse_from(source.path, 0, None)
        except Exception as exc:
            pytest.fail(f"{where}: parse_from(path, 0, None) raised {type(exc).__name__}: {exc}")
        if got is None:
            continue
        assert isinstance(got, registry.Increment), (
            f"{where}: parse_from must return None or a calib.importers.Increment, got {type(got).__name__}"
        )
        assert got.appended is False, (
            f"{where}: a read from offset 0 with no state is a whole read: Increment.appended must be False"
        )
        assert got.records == sample.records(source), (
            f"{where}: parse_from(path, 0, None).records differ from list(parse(path)); a whole read by "
            "parse_from must give exactly the records parse gives"
        )


# -- bad input ---------------------------------------------------------------------------------------


def _json_lines(path: Path) -> bool:
    """A JSON-lines file (`.jsonl`, or a `.log[.N]` log), whose torn last line a reader may skip."""
    return path.suffix == ".jsonl" or re.search(r"\.log(\.\d+)?$", path.name) is not None


def _is_json(path: Path) -> bool:
    return path.suffix == ".json" or _json_lines(path)


def _json_victims(source: Source) -> list[Path]:
    """JSON/JSONL files of a source to damage: the file itself, or a few files of a folder source."""
    if source.path.is_file():
        return [source.path] if _is_json(source.path) else []
    found = sorted(p for p in source.path.rglob("*") if p.is_file() and _is_json(p))
    by_folder: dict[Path, Path] = {}
    for p in found:  # one file of each kind of folder (session, message, part, ...)
        by_folder.setdefault(p.parent.parent, p)
    return list(by_folder.values())[:4]


def _moved(records: list[Record], old: Path, new: Path) -> list[Record]:
    """`records` as if parsed from `new` instead of `old` (source paths rewritten)."""
    out: list[Record] = []
    for r in records:
        if isinstance(r, ParsedSession) and r.session.source_path == str(old):
            r = ParsedSession(replace(r.session, source_path=str(new)), r.calls, r.parts)
        elif isinstance(r, AgentEstimate) and r.source_path == str(old):
            r = replace(r, source_path=str(new))
        out.append(r)
    return out


def _expect_input_error(sample: Sample, owner: str, damaged: Path, how: str, call: Any) -> Any:
    """`call()`'s result, unless it raised: then it must be an InputError that names `damaged`."""
    where = f"importer {owner!r}, {how} on a truncated copy of {damaged.name} ({sample.layout!r} sample)"
    try:
        return call()
    except InputError as exc:
        assert exc.path is not None and Path(exc.path) == damaged, (
            f"{where}: InputError.path is {exc.path!r}; it must name the damaged file {damaged}"
        )
        return None
    except Exception as exc:
        pytest.fail(
            f"{where}: raised {type(exc).__name__}: {exc}; bad input must raise "
            "calib.core.errors.InputError (with path and line) so the other files are still imported"
        )


def test_truncated_json_sources_raise_input_error(
    sample: Sample, tmp_path_factory: pytest.TempPathFactory
) -> None:
    victims = [(s, v) for s in sample.own_sources() for v in _json_victims(s)][:4]
    if not victims:
        pytest.skip(f"the {sample.layout!r} sample has no JSON or JSONL source")
    base = tmp_path_factory.mktemp("truncated")
    for n, (source, victim) in enumerate(victims):
        data = victim.read_bytes()
        for cut in (len(data) // 2, len(data.rstrip()) - 1):
            copy = base / f"{n}-{cut}" / source.path.relative_to(sample.root)
            if source.path.is_dir():
                shutil.copytree(source.path, copy)
                damaged = copy / victim.relative_to(source.path)
            else:
                copy.parent.mkdir(parents=True)
                damaged = copy
            damaged.write_bytes(data[:cut])
            owner = registry.sniff_dir(copy) if copy.is_dir() else registry.sniff_file(copy)
            if owner is None:
                continue  # skipped by sniffing: allowed
            got = _expect_input_error(
                sample, owner.name, damaged, "parse", lambda o=owner, c=copy: list(o.parse(c))
            )
            # No error is allowed only where nothing was lost: a JSON-lines reader may skip a torn last
            # line, a folder source may hold files its importer does not read, and a folder source of
            # one file per session, message or part may leave out what the damaged file held, with a
            # warning naming that file.
            same = got is not None and _moved(got, copy, source.path) == sample.records(source)
            warned = any(isinstance(r, InputWarning) and r.path == str(damaged) for r in got or [])
            assert got is None or _json_lines(damaged) or same or (copy.is_dir() and warned), (
                f"importer {owner.name!r} parsed a copy of {sample.rel(source.path)} whose "
                f"{victim.name} was truncated without raising, yet its records changed: data was silently "
                "lost; a truncated JSON file must raise calib.core.errors.InputError naming the file (or, "
                "in a folder source, yield an InputWarning naming it for what is left out)"
            )
            # A line left out is warned about: the warning names the truncated file and one of its lines.
            where = f"importer {owner.name!r} on a truncated copy of {sample.rel(source.path)}"
            if got is not None and not same and not data[:cut].endswith(b"\n"):
                assert any(isinstance(r, InputWarning) for r in got), (
                    f"{where}: the cut-off last line of {victim.name} was left out without a warning; yield "
                    "calib.importers.common.unfinished_line(...) so the user learns it was left out"
                )
            for record in got or []:
                if isinstance(record, InputWarning):
                    _check_warning(where, copy, record)
            inc = incremental(owner)
            if inc is not None:
                increment = _expect_input_error(
                    sample, owner.name, damaged, "parse_from", lambda i=inc, c=copy: i.parse_from(c, 0, None)
                )
                for record in increment.records if increment is not None else []:
                    if isinstance(record, InputWarning):
                        _check_warning(f"{where}, parse_from", copy, record)


def test_truncated_sqlite_sources_raise_input_error(
    sample: Sample, tmp_path_factory: pytest.TempPathFactory
) -> None:
    databases = [
        s for s in sample.own_sources() if s.path.is_file() and _head(s.path).startswith(SQLITE_MAGIC)
    ]
    if not databases:
        pytest.skip(f"the {sample.layout!r} sample has no SQLite source")
    base = tmp_path_factory.mktemp("truncated-db")
    for n, source in enumerate(databases):
        data = source.path.read_bytes()
        for cut in (len(data) // 2, len(data) - 512):
            copy = base / f"{n}-{cut}" / source.path.relative_to(sample.root)
            copy.parent.mkdir(parents=True)
            copy.write_bytes(data[:cut])
            owner = registry.sniff_file(copy)
            if owner is not None:  # else skipped by sniffing: allowed
                _expect_input_error(
                    sample, owner.name, copy, "parse", lambda o=owner, c=copy: list(o.parse(c))
                )

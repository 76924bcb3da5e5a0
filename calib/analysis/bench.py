"""`calib bench`: throughput of every estimator on a mixed corpus that calib builds offline.

The corpus is deterministic for a given Python version and needs nothing beyond the standard
library: English from the stdlib's documentation (`pydoc_data.topics`, then docstrings), code from
the stdlib's own `.py` files, JSON from seeded generated API-like records (half pretty, half
compact), and CJK from a seeded generator of UI-message-like sentences in Simplified and
Traditional Chinese, Japanese and Korean mixed with the ASCII such messages carry (`%s`, paths,
numbers) and a little other non-ASCII (accented words, Cyrillic, arrows, emoji). Each type is cut into ~4 KB documents at line ends.

The report is a list of sections, each a titled table; `SECTIONS` maps a name to the function
that builds one: `estimators` (every estimator through calib), `counting` (the first count of a
store's texts, estimator by estimator and all together, against the counters alone), `runtime` (the runtime agents vendor:
`calib.runtime` in Python, and `calib-runtime.mjs` in a fresh Node process). Ingest speed against other log readers is a developer's benchmark, kept out of the
package: `tests/benchmarks/bench_ingest.py` (`make bench-ingest`).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import random
import shutil
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

from calib import runtime
from calib.core.errors import CalibError, UsageError
from calib.core.progress import Progress
from calib.estimators import get_estimator, list_estimators

CONTENT_TYPES = ("english", "code", "json", "cjk")
DOC_CHARS = 4000
FULL_BYTES = 1_000_000  # per content type
QUICK_BYTES = 125_000


@dataclass(frozen=True)
class Corpus:
    """Documents per content type, in a fixed order."""

    docs: dict[str, list[str]]

    def all(self) -> list[str]:
        """Every document, type after type."""
        return [d for kind in CONTENT_TYPES for d in self.docs[kind]]

    def utf8_bytes(self, kind: str | None = None) -> int:
        """UTF-8 size of one type, or of everything."""
        docs = self.docs[kind] if kind else self.all()
        return sum(len(d.encode("utf-8")) for d in docs)

    def sha256(self) -> str:
        """Fingerprint of the whole corpus, so two bench runs can be told apart."""
        digest = hashlib.sha256()
        for doc in self.all():
            digest.update(doc.encode("utf-8"))
            digest.update(b"\x00")
        return digest.hexdigest()

    def summary(self) -> dict[str, Any]:
        """Sizes per type, for the report."""
        return {
            "sha256": self.sha256(),
            "types": {
                kind: {"docs": len(self.docs[kind]), "bytes": self.utf8_bytes(kind)} for kind in CONTENT_TYPES
            },
            "bytes": self.utf8_bytes(),
        }


def build_corpus(quick: bool = False, per_type_bytes: int | None = None) -> Corpus:
    """The mixed benchmark corpus (~1 MB per type, ~125 KB with `quick`), built offline."""
    budget = per_type_bytes or (QUICK_BYTES if quick else FULL_BYTES)
    return Corpus(
        {
            "english": _cut(_english_text(budget), budget),
            "code": _cut(_code_text(budget), budget),
            "json": _cut(_json_text(budget), budget),
            "cjk": _cut(_cjk_text(budget), budget),
        }
    )


def _cut(text: str, budget: int) -> list[str]:
    """~DOC_CHARS-character documents, cut after a newline, until `budget` UTF-8 bytes."""
    docs: list[str] = []
    used = 0
    start = 0
    while start < len(text) and used < budget:
        end = min(len(text), start + DOC_CHARS)
        if end < len(text):
            newline = text.rfind("\n", start + DOC_CHARS // 2, end)
            end = newline + 1 if newline >= 0 else end
        doc = text[start:end]
        docs.append(doc)
        used += len(doc.encode("utf-8"))
        start = end
    return docs


def _stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.glob("*.py") if p.is_file())


def _english_text(budget: int) -> str:
    parts: list[str] = []
    size = 0
    try:
        from pydoc_data.topics import topics  # the stdlib's reference-manual topics

        for key in sorted(topics):
            parts.append(topics[key])
            size += len(topics[key])
            if size > budget * 1.2:
                return "\n".join(parts)
    except ImportError:  # some distributions split pydoc_data out
        pass
    for path in _stdlib_files():
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 80:
                    parts.append(doc + "\n")
                    size += len(doc)
        if size > budget * 1.2:
            break
    return "\n".join(parts)


def _code_text(budget: int) -> str:
    parts: list[str] = []
    size = 0
    for path in _stdlib_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(text)
        size += len(text)
        if size > budget * 1.2:
            break
    return "\n".join(parts)


def _split(words: str) -> list[str]:
    return words.split()


_WORDS = _split(
    "alpha beta gamma delta request response cache token session model provider stream error "
    "retry timeout user admin project build deploy review merge branch commit release config "
    "value default enabled disabled pending active archived queued running failed succeeded"
)


def _json_text(budget: int) -> str:
    rng = random.Random(20240611)
    out: list[str] = []
    size = 0
    n = 0
    while size < budget * 1.2:
        record = {
            "id": f"{rng.getrandbits(64):016x}",
            "type": rng.choice(["order", "event", "user", "invoice", "message"]),
            "created_at": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
            "status": rng.choice(_WORDS[-8:]),
            "score": round(rng.uniform(0, 100), 3),
            "count": rng.randint(0, 100_000),
            "tags": rng.sample(_WORDS, rng.randint(0, 5)),
            "owner": {"name": " ".join(rng.sample(_WORDS, 2)).title(), "email": f"u{n}@example.com"},
            "items": [
                {
                    "sku": f"SKU-{rng.randint(1000, 99999)}",
                    "qty": rng.randint(1, 9),
                    "price": rng.randint(99, 99999) / 100,
                }
                for _ in range(rng.randint(0, 4))
            ],
            "description": " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 20))),
            "active": rng.random() < 0.5,
            "parent": None if rng.random() < 0.5 else f"{rng.getrandbits(32):08x}",
        }
        text = json.dumps(record, indent=2) if n % 2 == 0 else json.dumps(record, separators=(",", ":"))
        out.append(text)
        size += len(text)
        n += 1
    return "\n".join(out)


# Vocabulary for the CJK generator: everyday software-message words, written for this corpus.
_ZH_HANS = _split(
    "文件 目录 不存在 无法 打开 错误 配置 用户 密码 连接 服务器 网络 数据 程序 选项 设置 保存 删除 创建 更新 版本 "
    "安装 下载 上传 权限 命令 参数 输入 输出 格式 系统 进程 内存 磁盘 空间 时间 请 稍后 重试 成功 失败 已经 正在 "
    "完成 警告 信息 帮助 显示 隐藏 窗口 按钮 界面 语言 编码 字符 文本 图像 打印 搜索 替换 复制 粘贴 撤销 我们 "
    "这个 可以 需要 应该 如果 因为 所以 但是 或者 一个 没有 所有 当前 默认 新的 旧的 的 了 是 在 和 文档 项目 "
    "请求 响应 缓存 会话 模型 工具 结果 任务 日志 记录 检查 修改 提交 分支 合并 测试 运行 停止 开始 继续"
)
_ZH_HANT = _split(
    "檔案 目錄 無法 開啟 錯誤 設定 使用者 密碼 連線 伺服器 網路 資料 程式 選項 儲存 刪除 建立 更新 版本 安裝 下載 "
    "權限 指令 參數 輸入 輸出 格式 系統 記憶體 磁碟 時間 請 稍後 重試 成功 失敗 已經 正在 完成 警告 訊息 說明 "
    "顯示 視窗 按鈕 語言 編碼 字元 文字 圖片 搜尋 取代 複製 貼上 這個 可以 需要 如果 因為 所以 但是 沒有 所有 "
    "目前 預設 的 了 是 在 和 專案 請求 回應 快取 工作階段 模型 工具 結果 任務 記錄 檢查 修改 提交 測試 執行 停止"
)
_JA = _split(
    "ファイル ディレクトリ が を に は の で と も 見つかりません 開けません エラー 設定 ユーザー パスワード 接続 "
    "サーバー ネットワーク データ プログラム オプション 保存 削除 作成 更新 バージョン インストール ダウンロード "
    "権限 コマンド 引数 入力 出力 形式 システム メモリ ディスク 時間 してください しました できません "
    "失敗しました 完了しました 警告 情報 ヘルプ 表示 ウィンドウ ボタン 言語 文字 テキスト 画像 検索 置換 "
    "コピー 貼り付け この その 必要 場合 現在 既定 新しい 古い プロジェクト リクエスト キャッシュ セッション "
    "モデル ツール 結果 タスク ログ 確認 変更 テスト 実行 停止 開始 続行 されています ありません"
)
_KO = _split(
    "파일 디렉터리 을 를 이 가 은 는 에 의 찾을 수 없습니다 열 오류 설정 사용자 비밀번호 연결 서버 네트워크 데이터 "
    "프로그램 옵션 저장 삭제 생성 업데이트 버전 설치 다운로드 권한 명령 인수 입력 출력 형식 시스템 메모리 디스크 "
    "시간 하십시오 했습니다 실패했습니다 완료되었습니다 경고 정보 도움말 표시 창 단추 언어 문자 텍스트 이미지 "
    "검색 바꾸기 복사 붙여넣기 이 그 필요 경우 현재 기본값 새 이전 프로젝트 요청 응답 캐시 세션 모델 도구 결과 "
    "작업 로그 확인 변경 테스트 실행 중지 시작 계속"
)
_ASCII_BITS = (
    "%s",
    "'%s'",
    "%d",
    "{0}",
    "/usr/lib/x86_64-linux-gnu",
    "~/.config/app/settings.json",
    "HTTP 404",
    "UTF-8",
    "GitHub",
    "Python 3.11",
    "--force",
    "git push",
    "v1.2.3",
    "0x7f",
    "README.md",
    "API key",
    "SSH",
    "JSON",
    "localhost:8080",
)


# Non-ASCII that is not CJK, as agent output and localised messages carry it.
_OTHER_BITS = (
    "—",
    "…",
    " → ",
    "✓",
    "✅",
    "🚀",
    "👍",
    " café ",
    " Größe ",
    " naïve ",
    " Привет ",
    " ошибка ",
    "“%s”",
    "20 °C",
    "±",
    "×",
    "€",
    "©",
    " señal ",
    " Ελληνικά ",
)


def _cjk_text(budget: int) -> str:
    rng = random.Random(19890604)
    languages = [
        (_ZH_HANS, "", "，", "。"),
        (_ZH_HANT, "", "，", "。"),
        (_JA, "", "、", "。"),
        (_KO, " ", ", ", "."),
    ]
    lines: list[str] = []
    size = 0
    while size < budget:
        words, sep, comma, stop = languages[len(lines) % len(languages)]
        pieces: list[str] = []
        for _ in range(rng.randint(4, 16)):
            roll = rng.random()
            if roll < 0.04:
                pieces.append(rng.choice(_OTHER_BITS))
            elif roll < 0.09:
                pieces.append(f" {rng.choice(_ASCII_BITS)} ")
            elif roll < 0.11:
                pieces.append(str(rng.randint(0, 999)))
            elif roll < 0.18:
                pieces.append(comma)
            else:
                pieces.append(rng.choice(words))
        line = sep.join(pieces).replace("  ", " ").strip() + stop
        if rng.random() < 0.05:
            line = f'msgid "{rng.choice(_WORDS)} %s"\nmsgstr "{line}"'
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# The report


@dataclass
class BenchSection:
    """One table of the report: `columns` are row keys, `labels` their short display names."""

    name: str
    title: str
    columns: list[str]
    labels: dict[str, str] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The section as JSON-ready data."""
        return {"title": self.title, "columns": self.columns, "rows": self.rows, "notes": self.notes}


@dataclass
class BenchReport:
    """What `calib bench` measured: the corpus and one section per measurement."""

    corpus: dict[str, Any]
    sections: list[BenchSection]
    quick: bool

    def to_dict(self) -> dict[str, Any]:
        """The report as one JSON document."""
        return {
            "corpus": self.corpus,
            "quick": self.quick,
            "sections": {s.name: s.to_dict() for s in self.sections},
        }


@dataclass
class BenchContext:
    """What every section gets: the corpus, the options and a progress callback."""

    corpus: Corpus
    quick: bool
    estimators: list[str] | None = None
    progress: Progress | None = None
    options: dict[str, Any] = field(default_factory=dict)  # per-section options (e.g. the ingest corpus)


def best_seconds(*runs: Callable[[], object], repeats: int) -> list[float]:
    """Best wall time of each run over `repeats` rounds, the runs interleaved within a round.

    Interleaving makes a ratio between two runs fair when other work shares the machine, and the
    best of several rounds filters scheduler noise.
    """
    best = [float("inf")] * len(runs)
    for _ in range(repeats):
        for i, run in enumerate(runs):
            start = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def _estimator_section(ctx: BenchContext) -> BenchSection:
    section = BenchSection(
        "estimators",
        "Estimators: MB/s of UTF-8 input through count_many; tokens per character by content type",
        ["estimator", "mb_s", "raw_mb_s", "load_s", *(f"tok_per_char_{k}" for k in CONTENT_TYPES), "note"],
        {
            "estimator": "estimator",
            "mb_s": "MB/s",
            "raw_mb_s": "raw MB/s",
            "load_s": "load s",
            "tok_per_char_english": "EN",
            "tok_per_char_code": "code",
            "tok_per_char_json": "JSON",
            "tok_per_char_cjk": "CJK",
            "note": "note",
        },
    )
    if ctx.estimators:
        names = list(ctx.estimators)
    else:
        names = [e.name for e in list_estimators() if e.available and not e.name.endswith(":")]
    corpus = ctx.corpus
    docs = corpus.all()
    total_mb = corpus.utf8_bytes() / 1e6
    chars = {kind: sum(map(len, corpus.docs[kind])) for kind in CONTENT_TYPES}
    repeats = 3 if ctx.quick else 5
    for i, name in enumerate(names):
        if ctx.progress:
            ctx.progress(i, len(names), name)
        row: dict[str, Any] = dict.fromkeys(section.columns)
        row["estimator"] = name
        start = time.perf_counter()
        try:
            est = get_estimator(name)
        except CalibError as exc:
            if ctx.estimators:  # asked for by name: a typo or a missing package is the user's to fix
                raise
            row["note"] = f"unavailable: {exc}"
            section.rows.append(row)
            continue
        row["load_s"] = time.perf_counter() - start
        for kind in CONTENT_TYPES:  # also the warm-up pass
            row[f"tok_per_char_{kind}"] = sum(est.count_many(corpus.docs[kind])) / max(1, chars[kind])
        encoding = getattr(est, "encoding", None)
        if encoding is not None and hasattr(encoding, "encode_ordinary_batch"):
            # tiktoken's own batch API on the same documents: what calib's wrapper must keep up with
            calib_s, raw_s = best_seconds(
                partial(est.count_many, docs),
                partial(encoding.encode_ordinary_batch, docs),
                repeats=repeats,
            )
            row["raw_mb_s"] = total_mb / raw_s
            row["note"] = f"calib/raw {raw_s / calib_s:.0%}"
        else:
            (calib_s,) = best_seconds(partial(est.count_many, docs), repeats=repeats)
        row["mb_s"] = total_mb / calib_s
        section.rows.append(row)
    if ctx.progress:
        ctx.progress(len(names), len(names), "")
    section.notes.append(
        f"best of {repeats} passes over the whole corpus; raw = tiktoken's encode_ordinary_batch "
        "(its default 8 threads), interleaved with calib's passes; load s = first get_estimator call"
    )
    return section


# The JavaScript side of the runtime section: a fresh Node process times the package's
# calib-runtime.mjs on the same documents. argv: the runtime's file URL, the input JSON.
_NODE_BENCH = """
const [runtimeUrl, inputPath] = process.argv.slice(2);
const { load, classCounts } = await import(runtimeUrl);
const { readFileSync } = await import("node:fs");
const input = JSON.parse(readFileSync(inputPath, "utf8"));
const cal = load(input.config);
const [provider, model] = input.group;
let sink = 0;
const functions = {
  count: (docs) => { for (const d of docs) sink += cal.count(d, provider, model); },
  classCounts: (docs) => { for (const d of docs) sink += classCounts(d)[0]; },
};
const sets = { ...input.docs, mix: Object.values(input.docs).flat() };
for (let i = 0; i < input.warmups; i++) for (const f of Object.values(functions)) f(sets.mix);
const seconds = {};
for (const [name, f] of Object.entries(functions)) {
  seconds[name] = {};
  for (const [kind, docs] of Object.entries(sets)) {
    let best = Infinity;
    for (let r = 0; r < input.repeats; r++) {
      const start = performance.now();
      f(docs);
      best = Math.min(best, (performance.now() - start) / 1000);
    }
    seconds[name][kind] = best;
  }
}
// the counts themselves, to check that both runtimes counted the same
const totals = { count: 0, classCounts: new Array(6).fill(0) };
for (const d of sets.mix) {
  totals.count += cal.count(d, provider, model);
  classCounts(d).forEach((n, i) => { totals.classCounts[i] += n; });
}
process.stdout.write(JSON.stringify({ node: process.version, seconds, totals, sink }));
"""
_NODE_TIMEOUT_S = 600
_RUNTIME_GROUP = ("google", "gemini-2.5-pro")


def _runtime_config() -> dict[str, Any]:
    """A minimal valid charclass config: counting speed does not depend on its values."""
    params = {
        "ratios": {"user": 1.0},
        "message_overhead": 0.0,
        "class_weights": dict.fromkeys(runtime.CHAR_CLASSES, 0.25),
    }
    return {
        "schema_version": runtime.SCHEMA_VERSION,
        "base": "charclass",
        "classes": list(runtime.CHAR_CLASSES),
        "kind_groups": {"user_text": "user"},
        "ratio_groups": ["user"],
        "default_group": "user",
        "default": params,
        "providers": {_RUNTIME_GROUP[0]: {"params": params, "models": {_RUNTIME_GROUP[1]: params}}},
    }


def _each(count: Callable[[str], object], docs: list[str]) -> None:
    for doc in docs:
        count(doc)


def _node_runtime(docs: dict[str, list[str]], config: dict[str, Any], repeats: int) -> dict[str, Any]:
    """Time the package's calib-runtime.mjs in a fresh `node --single-threaded`; raise CalibError
    saying why when it cannot run."""
    node = shutil.which("node")
    if node is None:
        raise CalibError("node was not found on PATH")
    with (
        resources.as_file(resources.files("calib").joinpath("calib-runtime.mjs")) as module,
        tempfile.TemporaryDirectory(prefix="calib-bench-") as tmp,
    ):
        if not module.is_file():
            raise CalibError("the calib package has no calib-runtime.mjs")
        script = Path(tmp) / "bench.mjs"
        script.write_text(_NODE_BENCH, encoding="utf-8")
        data = Path(tmp) / "input.json"
        document = {"docs": docs, "config": config, "group": _RUNTIME_GROUP, "repeats": repeats, "warmups": 3}
        # ASCII JSON: every text reaches Node as the same UTF-16 string, whatever it holds
        data.write_text(json.dumps(document), encoding="ascii")
        # --single-threaded: V8 compiles and collects garbage on the main thread too, so the figures
        # are those of one core, like Python's
        command = [node, "--single-threaded", str(script), module.resolve().as_uri(), str(data)]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=_NODE_TIMEOUT_S, check=False, cwd=tmp
            )
        except subprocess.TimeoutExpired:
            raise CalibError(f"node took more than {_NODE_TIMEOUT_S} s") from None
        except OSError as exc:
            raise CalibError(f"node could not start: {exc.strerror or exc}") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise CalibError(f"node failed (exit {done.returncode}): {lines[-1] if lines else 'no message'}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _runtime_section(ctx: BenchContext) -> BenchSection:
    kinds = [*CONTENT_TYPES, "mix"]
    section = BenchSection(
        "runtime",
        "Runtime: MB/s of UTF-8 input through the charclass count, one core "
        "(Python: calib/runtime.py; Node: calib-runtime.mjs)",
        ["runtime", "function", *(f"mb_s_{k}" for k in kinds), "note"],
        {
            "runtime": "runtime",
            "function": "function",
            "mb_s_english": "EN",
            "mb_s_code": "code",
            "mb_s_json": "JSON",
            "mb_s_cjk": "CJK",
            "mb_s_mix": "mix",
            "note": "note",
        },
    )
    corpus = ctx.corpus
    docs = {kind: corpus.docs[kind] for kind in CONTENT_TYPES}
    sets = {**docs, "mix": corpus.all()}
    megabytes = {kind: corpus.utf8_bytes(kind) / 1e6 for kind in CONTENT_TYPES}
    megabytes["mix"] = corpus.utf8_bytes() / 1e6
    repeats = 3 if ctx.quick else 5
    config = _runtime_config()
    cal = runtime.Calibration(config)
    python: dict[str, Callable[[str], object]] = {
        "count": partial(cal.count, provider=_RUNTIME_GROUP[0], model=_RUNTIME_GROUP[1]),
        "class_counts": runtime.class_counts,
    }
    steps = len(python) + 1
    for i, (name, count) in enumerate(python.items()):
        if ctx.progress:
            ctx.progress(i, steps, f"python {name}")
        row: dict[str, Any] = dict.fromkeys(section.columns)
        row.update(runtime="python", function=name)
        _each(count, sets["mix"])  # warm-up
        for kind in kinds:
            (seconds,) = best_seconds(partial(_each, count, sets[kind]), repeats=repeats)
            row[f"mb_s_{kind}"] = megabytes[kind] / seconds
        section.rows.append(row)
    if ctx.progress:
        ctx.progress(len(python), steps, "node")
    expected = {
        "count": sum(cal.count(d, *_RUNTIME_GROUP) for d in sets["mix"]),
        "classCounts": [sum(c) for c in zip(*map(runtime.class_counts, sets["mix"]), strict=True)],
    }
    node_version = None
    try:
        measured = _node_runtime(docs, config, repeats)
    except CalibError as exc:
        row = dict.fromkeys(section.columns)
        row.update(runtime="node", note=str(exc))
        section.rows.append(row)
    else:
        node_version = measured["node"]
        for name in ("count", "classCounts"):
            row = dict.fromkeys(section.columns)
            row.update(runtime="node", function=name)
            for kind in kinds:
                row[f"mb_s_{kind}"] = megabytes[kind] / max(measured["seconds"][name][kind], 1e-9)
            same = measured["totals"][name] == expected[name]
            row["note"] = "same counts" if same else "COUNTS DIFFER"
            section.rows.append(row)
    if ctx.progress:
        ctx.progress(steps, steps, "")
    section.notes.append(
        f"best of {repeats} passes per content type after warming up; count = Calibration.count / cal.count "
        f"as {_RUNTIME_GROUP[0]}/{_RUNTIME_GROUP[1]} on a minimal charclass config; "
        + (
            f"Node {node_version} as `node --single-threaded` (V8 compiles and collects garbage on the "
            "same core); same counts: Node's totals over the corpus equal Python's"
            if node_version
            else "Node: not measured"
        )
    )
    return section


# A section is its function, or "module:function" for one whose module is imported only to run it
# (the counting section needs the store: `calib --help` lists the sections without loading DuckDB).
SECTIONS: dict[str, Callable[[BenchContext], BenchSection] | str] = {
    "estimators": _estimator_section,
    "counting": "calib.analysis.bench_counting:counting_section",
    "runtime": _runtime_section,
}


def _section(name: str) -> Callable[[BenchContext], BenchSection]:
    entry = SECTIONS[name]
    if isinstance(entry, str):
        module, _, function = entry.partition(":")
        found: Callable[[BenchContext], BenchSection] = getattr(importlib.import_module(module), function)
        return found
    return entry


def run_bench(
    estimators: Sequence[str] | None = None,
    quick: bool = False,
    sections: Sequence[str] | None = None,
    progress: Progress | None = None,
    options: dict[str, Any] | None = None,
) -> BenchReport:
    """Build the corpus and run every section (or the named ones); `estimators` limits that section."""
    wanted = list(sections) if sections else list(SECTIONS)
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown:
        raise UsageError(
            f"unknown bench section {unknown[0]!r}", hint=f"valid sections: {', '.join(SECTIONS)}"
        )
    corpus = build_corpus(quick=quick)
    ctx = BenchContext(corpus, quick, list(estimators) if estimators else None, progress, dict(options or {}))
    return BenchReport(corpus.summary(), [_section(name)(ctx) for name in wanted], quick)

"""What the model says: remarks before tool calls and closing answers, in the session's language."""

from __future__ import annotations

import random

from calib.synth.content.project import Project, main_file
from calib.synth.content.words import fill, pick_text

# Short remarks before a tool call, by what the call does.
REMARKS: dict[str, dict[str, list[str]]] = {
    "explore": {
        "en": [
            "Let me look at how the project is laid out first.",
            "I'll search for where `@num@` is used.",
            "Let me find the relevant code.",
        ],
        "zh": ["我先看一下项目结构。", "搜索一下 `@num@` 在哪里用到。"],
        "ja": ["まずプロジェクトの構成を確認します。", "`@num@` を使っている箇所を検索します。"],
    },
    "read": {
        "en": [
            "Reading the relevant files.",
            "Let me read the file first.",
            "I'll check what the code currently does.",
        ],
        "zh": ["先读一下相关的文件。", "看一下现在的代码。"],
        "ja": ["関連するファイルを読みます。", "現在のコードを確認します。"],
    },
    "test": {
        "en": ["Running the test suite.", "Let me run the tests.", "Checking with the tests."],
        "zh": ["运行一下测试。", "跑一遍测试确认。"],
        "ja": ["テストを実行します。", "テストで確認します。"],
    },
    "edit": {
        "en": ["Making the change now.", "I'll make the edit.", "Applying the change."],
        "zh": ["找到原因了，现在修改。", "修改这一处。"],
        "ja": ["原因が分かりました。修正します。", "ここを修正します。"],
    },
    "write": {
        "en": ["Adding the new file.", "I'll write the test now."],
        "zh": ["新建文件。", "现在写测试。"],
        "ja": ["新しいファイルを追加します。", "テストを書きます。"],
    },
    "shell": {
        "en": ["Let me check.", "Running it now."],
        "zh": ["我看一下。", "运行一下。"],
        "ja": ["確認します。", "実行します。"],
    },
    "plan": {
        "en": ["I'll track the steps in a todo list."],
        "zh": ["先列一个待办清单。"],
        "ja": ["やることをリストにまとめます。"],
    },
}


def remark(rng: random.Random, lang: str, action: str, words: dict[str, str]) -> str:
    """A short remark the model makes before a tool call of the given kind."""
    pools = REMARKS.get(action, REMARKS["shell"])
    return fill(pick_text(pools, lang if lang != "mixed" else "en", rng), words)


CAUSES = {
    "bug": (
        "`totals_by_@group@` added `@num@` before checking the status, so archived @ents@ were still counted.",
        "汇总时先累加了 `@num@`，之后才判断状态，所以已归档的 @ents@ 也被算进去了。",
        "`@num@` を集計した後でステータスを確認していたため、アーカイブ済みの @ents@ も数えられていました。",
    ),
    "retry": (
        "`@verb@` caught only the first timeout and gave up; it now retries with exponential backoff.",
        "`@verb@` 第一次超时就放弃了，现在改成了指数退避重试。",
        "`@verb@` は最初のタイムアウトで諦めていました。指数バックオフでリトライするようにしました。",
    ),
    "ci": (
        "The last merge flipped a status check, which broke the grouping test.",
        "上次合并把状态判断写反了，导致分组测试失败。",
        "前回のマージでステータスの判定が逆になり、グループ化のテストが失敗していました。",
    ),
    "feature": (
        "Added the new behaviour behind the existing function, so callers don't change.",
        "在原有函数里加上了新逻辑，调用方不需要改动。",
        "既存の関数に新しい処理を追加したので、呼び出し側の変更は不要です。",
    ),
    "review": (
        "The TTL comparison used the wrong clock value, so entries never expired; fixed and tidied the edge cases.",
        "TTL 的比较用错了时间，缓存永远不会过期；已修复并处理了边界情况。",
        "TTL の比較に誤った時刻を使っていたため期限切れになりませんでした。修正し、エッジケースも整理しました。",
    ),
}


def final_answer(
    rng: random.Random, lang: str, kind: str, words: dict[str, str], changed: list[str], tests: str
) -> str:
    """The model's closing message of a task turn: what it found and changed, in markdown."""
    files = "\n".join(f"- `{p}`" for p in changed) or "- (no files changed)"
    en, zh, ja = (fill(x, words) for x in CAUSES.get(kind, CAUSES["feature"]))
    if lang == "zh":
        return f"已完成修改。\n\n**原因**：{zh}\n\n**修改的文件**：\n{files}\n\n**验证**：{tests}\n\n如果需要，我可以再补充边界情况的测试。"
    if lang == "ja":
        return f"修正が完了しました。\n\n**原因**：{ja}\n\n**変更したファイル**：\n{files}\n\n**確認**：{tests}\n\n必要であればエッジケースのテストも追加します。"
    intro = rng.choice(
        (
            "Done. Here's a summary of the change.",
            "Fixed. The root cause and the change are below.",
            "I made the change; details below.",
        )
    )
    snippet = ""
    if kind == "bug" and rng.random() < 0.6:
        snippet = fill(
            '\n\nThe key part now reads:\n\n```\nfor item in @ents@:\n    if item.status == "archived":\n        continue\n    totals[item.@group@] += item.@num@\n```',
            words,
        )
    tail = " 需要的话我也可以补充中文注释。" if lang == "mixed" and rng.random() < 0.5 else ""
    return f"{intro}\n\n### What was wrong\n{en}{snippet}\n\n### Files changed\n{files}\n\n### Verification\n{tests}{tail}"


def followup_answer(
    rng: random.Random, lang: str, kind: str, words: dict[str, str], changed: list[str], tests: str
) -> str:
    """The closing message of a follow-up turn."""
    files = ", ".join(f"`{p}`" for p in changed[-2:]) or "nothing"
    if lang in ("zh", "ja"):
        done = {
            "test": ("已添加测试，", "テストを追加しました。"),
            "lint": ("已修复 lint 报告的问题，", "リンターの指摘を修正しました。"),
            "git": ("改动如上所示，涉及 ", "差分は上記のとおりです。対象："),
            "readme": ("README 已更新，", "README を更新しました。"),
            "api": ("API 返回的数据看起来是正确的，", "API のレスポンスは正しいようです。"),
            "migration": ("已添加迁移脚本，", "マイグレーションを追加しました。"),
        }.get(kind, ("已处理，", "対応しました。"))
        if lang == "zh":
            return f"{done[0]}相关文件：{files}。{tests}"
        return f"{done[1]}対象ファイル：{files}。{tests}"
    lines = {
        "test": f"Added the test in {files}. {tests}",
        "lint": f"The linter findings are fixed ({files}). {tests}",
        "git": f"The working tree has the changes shown above ({files}); nothing unexpected is staged.",
        "readme": f"Updated the README to describe the new behaviour ({files}).",
        "api": "The payload looks right: every record has an id, a status and the new field, and `next_cursor` is set when there are more pages.",
        "migration": f"Added the migration ({files}); it only creates an index, so it is safe to run online.",
    }
    return lines.get(kind, f"Done ({files}). {tests}")


def explain_answer(rng: random.Random, lang: str, project: Project) -> str:
    """A no-tool (or read-only) answer explaining part of the project."""
    w = project.words
    if lang == "zh":
        return fill(
            f"这个项目（`{project.name}`）主要分三层：\n\n1. `{main_file(project)}`：定义 @Ent@ 数据结构和校验逻辑；\n"
            "2. @collab@ 模块：负责批量处理和重试，失败时使用指数退避；\n3. 测试在 `tests/` 下，覆盖了汇总和校验。\n\n"
            "这样写的好处是每一层都可以单独测试。",
            w,
        )
    if lang == "ja":
        return fill(
            f"`{project.name}` は大きく三つの部分に分かれています。\n\n1. `{main_file(project)}`：@Ent@ のデータ構造と検証\n"
            "2. @collab@：バッチ処理とリトライ（指数バックオフ）\n3. テスト：集計と検証のケース\n\n各層を独立してテストできる構成です。",
            w,
        )
    tail = "\n\n要点是：每一层都可以单独测试。" if lang == "mixed" else ""
    return fill(
        f"Short version: `{main_file(project)}` owns the @Ent@ model and its validation, the @collab@ module batches "
        "work and retries upstream calls with exponential backoff, and the tests pin the grouping by @group@.\n\n"
        "Filtering before the sum avoids touching archived records at all, which also makes "
        f"the {rng.choice(('cache', 'retry', 'batch'))} path cheaper.{tail}",
        w,
    )

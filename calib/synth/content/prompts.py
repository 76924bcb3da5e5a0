"""What the user asks: opening requests by task kind and follow-ups, in English, Chinese, Japanese and mixed."""

from __future__ import annotations

import random

from calib.synth.content.words import fill, pick_text

# What the opening request asks for; each kind has its own prompts, tool flow and closing answer.
TASK_KINDS = ("bug", "retry", "ci", "feature", "explain", "review")
TASK_WEIGHTS = (5, 3, 3, 3, 2, 2)

TASKS: dict[str, dict[str, list[str]]] = {
    "bug": {
        "en": [
            "The totals in `@file@` look wrong when a @ent@ is archived: archived ones still get counted. Can you find out why and fix it?",
            "Users report that the @group@ summary double counts @num@ after an archive. Please track it down in `@file@` and fix it.",
            "Something is off with `totals_by_@group@`: archived @ents@ show up in the dashboard numbers. Fix it without changing the API.",
        ],
        "zh": [
            "帮我看一下 `@file@` 里的汇总逻辑，为什么已归档的 @ent@ 还会被算进去？找到原因并修复。",
            "按 @group@ 汇总的 @num@ 不对，归档之后的数据还在统计里。请查一下 `@file@` 并修复。",
        ],
        "ja": [
            "`@file@` の集計がおかしいです。アーカイブ済みの @ent@ も数えられているようなので、原因を調べて直してください。",
            "@group@ ごとの @num@ の合計が合いません。アーカイブしたデータが含まれているようです。修正をお願いします。",
        ],
        "mixed": [
            "The @group@ totals are wrong again — 归档的 @ents@ 也被算进去了。Can you fix `@file@`?",
            "`@file@` の集計で archived な @ents@ が数えられています。Please fix it and add a regression test.",
        ],
    },
    "retry": {
        "en": [
            "Add retry with exponential backoff to `@verb@` in `@file@`. Max @n3@ attempts, and log each failure.",
            "`@verb@` gives up on the first timeout. Make it retry with backoff (start at 500ms, double each time, @n3@ attempts max).",
        ],
        "zh": ["请给 `@verb@` 加上指数退避重试，最多重试 @n3@ 次，每次失败都要打日志。"],
        "ja": [
            "`@verb@` がタイムアウトすることがあります。指数バックオフで最大 @n3@ 回リトライするようにしてください。"
        ],
        "mixed": ["The @verb@ retry is broken again. 日志里一直是 timeout，帮我看看 backoff 是不是没生效。"],
    },
    "ci": {
        "en": [
            "Tests are failing on CI after the last merge. Run them, figure out what broke and fix it without changing the test expectations.",
            "CI is red on main. Can you run the suite locally and fix whatever is failing?",
        ],
        "zh": ["测试在 CI 上一直失败，请先跑一下测试，找出问题并修复，不要改测试的期望值。"],
        "ja": ["CI でテストが落ちています。テストを実行して原因を特定し、修正してください。"],
        "mixed": [
            "`@file@` のテストが flaky です — please make it deterministic and explain the root cause."
        ],
    },
    "feature": {
        "en": [
            "I need a `validate_@ent@` check that rejects negative @num@ values. Please add it with tests.",
            "Can you add pagination to the @ents@ listing? The API returns `next_cursor`; we currently only read the first page.",
            "Can you make the @verb@ step idempotent? Running it twice should not double-count @num@.",
        ],
        "zh": ["请给 @ents@ 列表接口加上分页，API 会返回 `next_cursor`，现在只读了第一页。"],
        "ja": [
            "@ents@ の一覧 API にページネーションを追加してほしいです。既存のテストは壊さないようにお願いします。"
        ],
        "mixed": ["Please add a `validate_@ent@` check; エラーメッセージは英語のままで大丈夫です。"],
    },
    "explain": {
        "en": [
            "Explain how the @collab@ module talks to the @ents@ code. I'm new to this repo and want the big picture before I touch anything.",
            "Give me a quick tour of this project: where do @ents@ come from and where are they validated?",
        ],
        "zh": ["解释一下这个项目的目录结构，以及 @collab@ 模块是怎么和 @ents@ 交互的。"],
        "ja": ["このリポジトリの構成と、@collab@ モジュールの役割を説明してもらえますか？"],
        "mixed": ["Can you explain the layout of this repo? 特别是 @collab@ 模块是做什么的。"],
    },
    "review": {
        "en": [
            "Please review `@file@` for obvious bugs and edge cases (empty input, unicode, huge numbers) and fix what you find.",
            "The @ent@ cache never expires entries in production. Check the TTL handling in `@file@`.",
        ],
        "zh": ["`@file@` 里的缓存好像永远不会过期，帮我检查一下 TTL 的处理。"],
        "ja": ["`@file@` をレビューして、空入力や巨大な数値などのエッジケースの問題があれば直してください。"],
        "mixed": ["Can you refactor `@file@`? 现在的实现太长了，拆成几个小函数，每个都要有测试。"],
    },
}

FOLLOWUP_KINDS = ("test", "lint", "git", "answer", "readme", "api", "migration")
FOLLOWUP_WEIGHTS = (4, 3, 3, 2, 2, 2, 1)

FOLLOWUPS: dict[str, dict[str, list[str]]] = {
    "test": {
        "en": [
            "Thanks. Can you also add a test for the empty case?",
            "Please add a regression test for this so it doesn't come back.",
        ],
        "zh": ["没问题。再加一个空输入的测试用例吧。", "好的，再帮我补一个回归测试。"],
        "ja": ["ありがとうございます。空の入力に対するテストも追加してください。"],
        "mixed": ["Thanks! 再加一个空输入的 test case。"],
    },
    "lint": {
        "en": [
            "Looks good. Run the linter too and fix anything it reports.",
            "Can you make the linter happy before I push?",
        ],
        "zh": ["可以，再跑一下 lint，有问题顺便修一下。"],
        "ja": ["いいですね。ついでにリンターも実行して、警告があれば直してください。"],
        "mixed": ["OK 了，再跑一下 lint。"],
    },
    "git": {
        "en": [
            "Hmm, the CI still fails on the other job. Can you check `git status` and the diff before I push?",
            "What exactly did we change? Show me the diff.",
        ],
        "zh": ["提交之前帮我看一下 `git status` 和 diff。"],
        "ja": ["コミットする前に `git status` と差分を確認してもらえますか？"],
        "mixed": ["Before I commit — git diff 看一下改了哪些地方？"],
    },
    "answer": {
        "en": [
            "Why did you pick that approach over just filtering earlier? Keep it short.",
            "Perfect. Summarize what changed so I can paste it into the PR description.",
        ],
        "zh": [
            "这里为什么要这样写？有没有更简单的写法？简单说明一下就行。",
            "帮我总结一下这次改了什么，我要写到 PR 描述里。",
        ],
        "ja": ["変更内容を箇条書きでまとめてください。PR の説明に使います。"],
        "mixed": ["Why this approach? 简单解释一下就行。"],
    },
    "readme": {
        "en": ["Great, now update the README section about @ents@ to match."],
        "zh": ["可以，顺便把 README 里关于 @ents@ 的部分也更新一下。"],
        "ja": ["README の @ents@ の説明も今回の変更に合わせて更新してもらえますか？"],
        "mixed": ["Thanks! 顺便把 README 更新一下。"],
    },
    "api": {
        "en": [
            "Can you hit the local API and check the @ents@ payload looks right now?",
            "ok, one more thing: check what the API returns for @ents@ with the new field.",
        ],
        "zh": ["帮我调用一下本地 API，看看 @ents@ 返回的数据对不对。"],
        "ja": ["ローカルの API を叩いて、@ents@ のレスポンスが正しいか確認してください。"],
        "mixed": ["Can you curl the local API? 看看返回的 @ents@ 数据。"],
    },
    "migration": {
        "en": [
            "Can you double-check the SQL migration matches the new field?",
            "We also need an index on `@group@`. Add a migration.",
        ],
        "zh": ["再加一个迁移脚本，给 `@group@` 建索引。"],
        "ja": ["`@group@` にインデックスを追加するマイグレーションも作ってください。"],
        "mixed": ["Also add a migration — `@group@` 上面需要索引。"],
    },
}


def task_prompt(rng: random.Random, lang: str, kind: str, words: dict[str, str]) -> str:
    """The opening request of a session, for a task kind."""
    text = fill(pick_text(TASKS[kind], lang, rng), words)
    if lang == "en" and rng.random() < 0.3:
        text += "\n\n" + rng.choice(
            (
                "Context: this started after we bumped the client library last week.",
                "Don't touch the public API if you can avoid it.",
                "Keep the change small, we want to backport it.",
                "Here's what I see in the logs:\n```\n"
                + fill(
                    "2026-02-27T08:14:02Z WARN @collab@: @verb@ @ent@_8f2c failed (attempt 3/3): TimeoutError\n"
                    "2026-02-27T08:14:02Z ERROR @collab@: giving up on @ent@_8f2c\n",
                    words,
                )
                + "```",
            )
        )
    return text


def followup_prompt(rng: random.Random, lang: str, kind: str, words: dict[str, str]) -> str:
    """A later user message asking for a follow-up of the given kind."""
    return fill(pick_text(FOLLOWUPS[kind], lang, rng), words)

"""The model's reasoning: gemini-cli thoughts or prose, by what the step is about to do."""

from __future__ import annotations

import random

from calib.synth.content.words import fill

# Thought subjects and descriptions, by what the step is about to do.
REASONING: dict[str, list[tuple[str, str]]] = {
    "explore": [
        (
            "Mapping the Project Layout",
            "I'll list the source folder to understand how the @collab@ module and the @ent@ model relate.",
        ),
        (
            "Locating the Aggregation",
            "I'm looking for where @num@ gets summed. The grouping by @group@ is the likely culprit, so I'll search for it before reading whole files.",
        ),
    ],
    "read": [
        (
            "Reading the Implementation",
            "The search points at one file. I'll read it whole, together with its tests, before deciding anything.",
        ),
        (
            "Reading the Test Expectations",
            "The failing assertion expects archived @ents@ to be skipped. I need to confirm the test is right before changing the implementation.",
        ),
    ],
    "test": [
        (
            "Running the Suite",
            "I want the exact failure first, so I'll run the tests and read the assertion message.",
        ),
        (
            "Verifying the Change",
            "The edit is in. Running the suite again tells me whether anything else depended on the old behaviour.",
        ),
    ],
    "edit": [
        (
            "Planning the Fix",
            "Moving the status check ahead of the accumulation is the smallest change. I'll make that edit and re-run the suite.",
        ),
        (
            "Checking the Retry Path",
            "The @verb@ call retries on TimeoutError only; other errors bubble up. The backoff should double each time, starting at half a second.",
        ),
        (
            "Considering Edge Cases",
            "Empty input should give an empty mapping, and very large @num@ values must not overflow; the SQL column is BIGINT, so that is fine.",
        ),
    ],
    "write": [
        (
            "Writing the Test",
            "A small test that pins the empty case and the archived case is enough; it should fail on the old code.",
        ),
    ],
    "shell": [
        (
            "Checking the Output",
            "I'll run the command and compare what it prints with what the user expects.",
        ),
        (
            "Reviewing the Diff",
            "The change touches one line in the aggregation and one test. Nothing else in the @collab@ module depends on the old behaviour.",
        ),
    ],
    "plan": [
        (
            "Breaking Down the Task",
            "Reproduce, find the cause, fix, verify. I'll keep a todo list so nothing gets skipped.",
        ),
    ],
    "answer": [
        (
            "Summarizing the Work",
            "Everything passes. I'll explain the cause in one sentence and list the files that changed.",
        ),
        (
            "Answering the Question",
            "The user wants the reasoning behind the approach, briefly. No tools needed.",
        ),
    ],
}


def reasoning_text(rng: random.Random, style: str, words: dict[str, str], action: str = "answer") -> str:
    """Reasoning in the provider's style: a gemini-cli thought (`**Subject**\\n\\ndescription`) or prose."""
    subject, description = rng.choice(REASONING.get(action, REASONING["shell"]))
    description = fill(description, words)
    if style == "thought":
        return f"**{subject}**\n\n{description}"
    extra = rng.choice(
        (
            " Let me be careful not to change the public signature.",
            " There might also be a second caller in the @collab@ module.",
            " If the tests encode the old behaviour I'll ask before changing them.",
            "",
        )
    )
    return description + fill(extra, words)

"""JSON API payloads: records of the project's main entity, some with CJK names."""

from __future__ import annotations

import random
from typing import Any

from calib.synth.content.project import Project
from calib.synth.content.words import CJK_PRODUCTS, PEOPLE, STATUSES, hexid


def api_records(rng: random.Random, project: Project, n: int) -> list[dict[str, Any]]:
    """API-like records of the project's main entity (JSON payloads, some with CJK names)."""
    w = project.words
    out = []
    for _ in range(n):
        rid = f"{w['ent'][:3]}_{hexid(rng, 10)}"
        text_value: str
        if w["text"].endswith(("email",)):
            text_value = f"{rng.choice(PEOPLE)}@example.com"
        elif w["text"].endswith(("url",)):
            text_value = f"https://hooks.example.com/{hexid(rng, 8)}"
        elif rng.random() < 0.3:
            text_value = rng.choice(CJK_PRODUCTS)
        else:
            text_value = f"{w['domain']}-{rng.randint(100, 999)}"
        out.append(
            {
                "id": rid,
                w["text"]: text_value,
                w["num"]: rng.randint(0, 50000),
                w["group"]: rng.choice(("eu-west-1", "us-east-1", "ap-northeast-1", "default", "JPY", "EUR")),
                "status": rng.choice(STATUSES),
                "created_at": f"2026-0{rng.randint(1, 2)}-{rng.randint(10, 28)}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
                "tags": rng.sample(
                    ["priority", "beta", "legacy", "bulk", "manual", "retry"], k=rng.randint(0, 3)
                ),
                "meta": {"source": rng.choice(("api", "import", "backfill")), "version": rng.randint(1, 4)},
            }
        )
    return out

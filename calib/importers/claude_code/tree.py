"""The conversation tree of a transcript, and the paths through it that become sessions.

Lines link to their parent by `uuid` / `parentUuid`; `progress`, `attachment` and most `system` lines
are links of the chain too, but only user and assistant lines and the two compaction boundaries
(`compact_boundary`, `microcompact_boundary`) are *messages*: each message's parent is its nearest
message ancestor. A boundary has `parentUuid: null` and names the line before it in
`logicalParentUuid`; when that line is missing from the file, the boundary follows the last message
written before it. A parent that is not in the file is treated the same way.

- Parallel tool use is not a fork: the tool_result line of tool A is a child of the assistant line with
  tool_use A, while the assistant line with tool_use B is a child of it too. A result line (a user line
  holding `tool_result` blocks) hanging off a path belongs to that path (one result per tool_use id).
- A message with no parent after the first one (plan mode's "clear context and implement", a new
  conversation started in the same file) continues the last message written before it but restarts
  the context (`restarts`): the calls from there on are sent only what follows.
- The main path ends at the last-written message that is not a tool result; every call on it belongs to
  the main session. Every other leaf, latest first, is the end of a path; a path holding calls that no
  path before it holds is an abandoned branch (a rewind, or a resume from an earlier message) and
  becomes its own session, holding the whole path's parts but only those new calls. So no call is ever
  counted twice, and a branch with no call of its own (an `/exit` that was resumed from before it) adds
  no session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

BOUNDARIES = frozenset(("compact_boundary", "microcompact_boundary"))


def is_message(record: dict[str, Any]) -> bool:
    """True for a user or assistant line, or a compaction boundary."""
    kind = record.get("type")
    if kind == "user" or kind == "assistant":
        return True
    return kind == "system" and record.get("subtype") in BOUNDARIES


def result_ids(record: dict[str, Any]) -> list[str] | None:
    """The tool_use ids a user line answers (None when it holds no tool_result block)."""
    if record.get("type") != "user":
        return None
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return None
    ids = [
        b.get("tool_use_id", "") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    return ids or None


@dataclass(slots=True)
class Tree:
    """The message tree of one partition of a transcript (indexes into its records)."""

    messages: list[int] = field(default_factory=list)  # in file order
    parent: dict[int, int | None] = field(default_factory=dict)
    children: dict[int, list[int]] = field(default_factory=dict)
    results: dict[int, list[str]] = field(default_factory=dict)  # result line -> tool_use ids
    restarts: set[int] = field(default_factory=set)
    main_leaf: int | None = None
    unlinked: int = 0  # parents (or logical parents) not found in the file


@dataclass(slots=True)
class Branch:
    """A path through the tree: its messages root-first, and where it left the earlier paths."""

    nodes: list[int]
    fork: int | None  # the first message of the path on no earlier path (None for the main path)


_MISSING = -1


def build_tree(records: list[tuple[int, dict[str, Any]]]) -> Tree:
    """The message tree of records in file order (a parent is always written before its children)."""
    tree = Tree()
    resolve: dict[str, int | None] = {}  # uuid -> its nearest message (itself when it is one)
    last_chain: int | None = None  # the last message written that is not a tool result
    last_message: int | None = None
    for index, (_, record) in enumerate(records):
        uid = record.get("uuid")
        if not isinstance(uid, str):
            continue
        parent_uuid = record.get("parentUuid")
        link = parent_uuid if isinstance(parent_uuid, str) else record.get("logicalParentUuid")
        anchor: int | None
        if isinstance(link, str):
            anchor = resolve.get(link, _MISSING)
            if anchor == _MISSING:
                tree.unlinked += 1
                anchor = last_chain if last_chain is not None else last_message
        else:
            anchor = None
        if not is_message(record):
            resolve[uid] = anchor
            continue
        if anchor is None and last_message is not None:
            anchor = last_chain if last_chain is not None else last_message
            tree.restarts.add(index)
        resolve[uid] = index
        tree.messages.append(index)
        tree.parent[index] = anchor
        tree.children[index] = []
        if anchor is not None:
            tree.children[anchor].append(index)
        ids = result_ids(record)
        if ids is None:
            last_chain = index
        else:
            tree.results[index] = ids
        last_message = index
    tree.main_leaf = last_chain if last_chain is not None else last_message
    return tree


def _walk(tree: Tree, leaf: int, stop: set[int] | None = None) -> list[int]:
    """The messages from `leaf` up to the root (or to the first one in `stop`, excluded), leaf first."""
    out = []
    node: int | None = leaf
    parent = tree.parent
    while node is not None and (stop is None or node not in stop):
        out.append(node)
        node = parent[node]
    return out


def branches(tree: Tree, call_of: Callable[[int], Any]) -> list[Branch]:
    """The main path, then each abandoned branch holding calls of its own (latest leaf first).

    `call_of(index)` names the call an assistant message belongs to (None for a message that is none).
    """
    if tree.main_leaf is None:
        return []
    main = list(reversed(_walk(tree, tree.main_leaf)))
    seen = set(main)
    covered = {c for c in map(call_of, main) if c is not None}
    out = [Branch(main, None)]
    leaves = [i for i in tree.messages if not tree.children[i]]
    for leaf in reversed(leaves):
        if leaf in seen:
            continue
        segment = _walk(tree, leaf, seen)
        seen.update(segment)
        own = {c for c in map(call_of, segment) if c is not None} - covered
        if not own:
            continue
        covered |= own
        nodes = list(reversed(_walk(tree, leaf)))
        out.append(Branch(nodes, segment[-1]))
    return out


def with_results(tree: Tree, nodes: list[int]) -> list[int]:
    """A path's messages with the tool results hanging off it, in file order (one per tool_use id)."""
    on_path = set(nodes)
    answered = {tid for n in nodes for tid in tree.results.get(n, ())}
    extra = []
    for node in nodes:
        for child in tree.children[node]:
            ids = tree.results.get(child)
            if ids is None or child in on_path:
                continue
            if all(tid in answered for tid in ids):
                continue  # a second answer to the same tool_use belongs to another branch
            answered.update(ids)
            extra.append(child)
    return sorted(on_path.union(extra))

"""Replay: what each agent's `/context` would have shown on every recorded call, and when its
compaction rule would have fired, judged against the context the provider actually counted.

Public data API (polars frames; the report and plots are built from these):

- `replay(store, estimators, rules=None, policies=None, windows=None, *, window="real") -> pl.DataFrame`:
  one row per call × rule × estimator × policy, columns `REPLAY_COLUMNS`.
- `summarise_replay(frame) -> pl.DataFrame`: one row per agent × rule × estimator × policy (and window
  kind), columns `SUMMARY_COLUMNS`.
- `timeline(frame, session_uid, *, rule="own", policy="raw") -> pl.DataFrame`: one row per
  call × estimator of one session, columns `TIMELINE_COLUMNS` (what `calib.analysis.plots.replay_timeline` draws).
- `pick_session(frame, *, rule="own", policy="raw") -> str | None`: the session worth plotting.
- `run_replay(db, estimators, *, rules, policies, windows, window) -> ReplayReport`: `calib replay`, whose
  `lines()` are the per-rule sentences it prints.

`replay` holds the whole frame; `calib replay` and the report never do: `ReplayRun` scores and replays
a batch of whole sessions at a time (`replay_batch`), a session longer than a batch in pieces of
consecutive calls, each going on from where the last one ended (`ReplayCarry`), and `ReplayTally` adds
up each batch's rows, keeping on disk only the values a percentile needs, so their memory stays flat
however large the store and however long a session.

Rules. A rule named `own` (`calib.analysis.rules.OWN_RULE`, the default of `calib replay` and of the
report) replays each session under the rule of the agent that wrote it, for the version that wrote it
(`calib.analysis.rules.own_rule`): gemini-cli sessions under `gemini-cli`, OpenCode 1.x under `opencode`
and 2.x under `opencode-2`, Claude Code under the band of its version, Codex and Dexto under theirs.
Other rules can be named beside it to compare them on the same sessions; `all` names every rule. The
column `own` says whether a row's rule is its session's own.

Windows (`window`, `calib replay --window`; `plan_windows` makes the `WindowPlan`): a rule's threshold
is a share of the model's context window (`calib.analysis.windows`), and sessions that never come near
it teach nothing: nothing fires, nothing is early or late. So:

- `real`: each model's own window (the built-in table, or `--windows FILE`).
- `auto` (`calib replay`'s and the report's default): an agent keeps the real windows if any of its
  sessions reaches half of its real threshold (`NEAR_SHARE`; the largest prompt of its calls to a model
  over the threshold of its own rule on that model's window). Otherwise (every session of that agent
  stays under half of it: small or sample sessions) the agent gets a *what-if window*: one size N for
  every model it used, each model's window scaled to N tokens with its output limit and input cap in
  proportion (`calib.analysis.windows.Window.scaled`), N the smallest size at which the agent's own rule,
  on the window of the model most of its calls went to, puts its threshold at the median prompt of the
  agent's calls (halfway between the two middle prompts, so no call sits exactly on it;
  `calib.analysis.rules.what_if_window`). About half of its calls are then over the threshold and the
  sessions that cross it do so wherever they happen to, as under a real window, so the rule's timing
  (early, late) shows. The rules' own constants (reserves, buffers) are kept, and every rule replayed on
  an agent's calls uses the same windows, so rules compare on them. Folders whose sessions fill their
  windows keep the real ones; `WindowPlan.describe` says in one line which agents got which, and why.
- `what-if`: a what-if window for every agent, whatever its sessions' size.
- a number N: every model's window scaled to N tokens (`calib.analysis.windows.fixed_windows`).

The column `window_kind` says which applied to a row: `real`, `what-if`, or `fixed` (a number).

Every decision is made per call and independently: the replay asks, before each recorded call k,
what the rule would have shown and decided given the calls before it; it does not rebuild the history
a compaction would have left (the recorded session goes on as it was recorded).

Quantities of a recorded call m (the usage normalised by the importers, `calib.core.usage`):

- `vis[m]`: visible output that re-enters the next prompt, `min(carry, output)`, where for
  OpenAI-style usage `output` first loses `reasoning` (completion tokens include it);
- `resent[m] = carry[m] - vis[m]`: reasoning that re-entered the next prompt in the recording
  (OpenCode re-sends reasoning parts to the same model; Gemini and OpenAI-style usage never do);
- a *segment* is a run of calls from a chain start (a baseline or a break of `calib.scoring.score`) to the
  next one; reasoning kept in context does not survive a segment start (compaction, model change);
- `content[m] = ctx[m] - sum(resent[j], j < m in the segment)`: the prompt without reasoning;
- `kept_P(m)`, the reasoning a policy keeps in the prompt of call m: `include` (strip none)
  `sum(reasoning[j], j < m in the segment)`; `strip-all-but-last` `reasoning[m-1]`; `strip-all` 0;
- `U[m] = input + output + reasoning + cache_read + cache_write` as recorded (what agents' UIs add
  up; it counts Gemini- and OpenAI-style cached tokens twice, since their `input` already holds them).

Each rule (`calib.analysis.rules`, with the table of the count `L_P[m]` it reads off a finished call m
under policy P) gives, before call k, the context the agent would display (`displayed`, with its `basis`)
and its threshold; `compact` is the rule's own comparison of the two, and `guard` gemini-cli's pre-send
estimate of the request, which refuses it (`refuse`) when over the window.

Truth (`truth`) is the provider's count for call k itself, whatever the policy (it is what was sent):
`ctx[k]` for `gemini-cli` and `dexto`, which compare a prompt; `ctx[k] + carry[k]` for the OpenCode,
Claude Code and Codex rules, whose count includes the step's output (the context once call k has
finished), with the output as recorded where the log lost the count of what re-entered (`carry`
unknown: Claude Code's streaming placeholders, a few tokens short of the real output). A call without
usage has no truth. `should` applies the rule's own comparison to the truth; `over_window` is
`ctx[k] > W.max_prompt` (the input cap, else the window): a request that would fail.

`outcome` of each call (exactly one): `no_window` (model not in the window table), `unknown` (no
truth), and otherwise, where `compact` is the rule's decision and `refuse` the guard's:

- `early`: `compact` and not `should` (compacted while under the threshold in truth);
- `missed`: not `compact`, not `refuse` and `over_window` (sent, and would fail);
- `late`: not `compact` and `should`, the request fitting or refused (over the threshold in truth);
- `refused`: not `compact`, `refuse` and not `over_window` (the guard stopped a request that fits);
- `ok`: otherwise (compacted when it should, or neither).

`fires` marks the call at which compaction would really run: `compact` at call k but not at the call
before in the session. `margin = truth - threshold`; `error = displayed - truth`.

`event` counts compactions rather than calls (the earlier call of the session and estimator decides):
`early` where compaction fires early (`fires` and `early`: it runs `-margin` tokens under the
threshold); `on-time` where it fires with the truth over the threshold and the call before was not
late; `late` at the first call of a run of late calls (the first request sent `margin` tokens over the
threshold without compacting); `missed` and `refused` at the first call of such a run. The summary
counts events (`early_fires`, `on_time`, `late_events`, `missed_events`, `refused_events`) and gives
how far they were from the threshold (`early_by_*`, `late_by_*`: min, median, max of |margin| at the
event), beside the counts of calls per outcome. Its error figures cover calls with chain status `ok`
only (breaks never enter error figures), and `wasted_tokens` adds `threshold - truth` over early
firing calls: the room left under the threshold when an early compaction would have run.

One module per job: `frame` (the per-call frame and each rule's decisions on it, with what a long
session's next piece goes on from), `plan` (the windows), `reads` (the store reads), `engine` (scoring
and replaying batches, and `replay`), `summary` (`summarise_replay`), `tally` (`ReplayTally`),
`session` (the timeline of one session and which to draw), `text` (what `calib replay` prints) and
`run` (`ReplayRun`, `run_replay`, `replay_store`).
"""

from __future__ import annotations

from calib.analysis.replay.engine import REPLAYED_COLUMNS, replay, replay_batch, replay_calls
from calib.analysis.replay.frame import REPLAY_COLUMNS, ReplayCarry
from calib.analysis.replay.plan import NEAR_SHARE, WINDOW_MODES, AgentWindows, WindowPlan, plan_windows
from calib.analysis.replay.reads import batch_sessions, batch_usage
from calib.analysis.replay.run import DEFAULT_ESTIMATORS, ReplayRun, replay_store, run_replay
from calib.analysis.replay.session import TIMELINE_COLUMNS, pick_session, timeline, timeline_caption
from calib.analysis.replay.summary import SUMMARY_COLUMNS, summarise_replay, unknown_models
from calib.analysis.replay.tally import ReplayTally
from calib.analysis.replay.text import ReplayReport, replay_lines

__all__ = [
    "DEFAULT_ESTIMATORS",
    "NEAR_SHARE",
    "REPLAYED_COLUMNS",
    "REPLAY_COLUMNS",
    "SUMMARY_COLUMNS",
    "TIMELINE_COLUMNS",
    "WINDOW_MODES",
    "AgentWindows",
    "ReplayCarry",
    "ReplayReport",
    "ReplayRun",
    "ReplayTally",
    "WindowPlan",
    "batch_sessions",
    "batch_usage",
    "pick_session",
    "plan_windows",
    "replay",
    "replay_batch",
    "replay_calls",
    "replay_lines",
    "replay_store",
    "run_replay",
    "summarise_replay",
    "timeline",
    "timeline_caption",
    "unknown_models",
]

// Type-checked only (npm run check): what an agent written in TypeScript writes against calib-runtime.mjs.
import {
  type CalibrationConfig,
  type Part,
  type TrackerOptions,
  type TrackerUsage,
  type UsageCheck,
  type UsageCounts,
  Calibration,
  RULES,
  Tracker,
  UnknownGroupError,
  load,
  readUsage,
  ruleLimit,
} from "../../calib/calib-runtime.mjs";

declare const config: CalibrationConfig;
const cal: Calibration = load(config, { strict: false });
const parts: Part[] = ["a text", ["tool_result", "output"], { text: "prompt", kind: "user_text" }, { text: "no kind" }];
const shown: number = cal.predictContext(12_000, 300, parts, "anthropic", "claude-sonnet-4-5", {
  removed: [["tool_result", "old output"]],
  placeholders: ["[pruned]"],
  removedTokens: 120,
});
const whole: number = cal.estimateContext(parts, "google", "gemini-2.5-pro", { tool: "gemini-cli" });
const one: number = cal.count("text", "openai", "gpt-5", "user_text") + cal.countParts(parts, "openai", "gpt-5", 2);
const level: string = cal.params("openai", "gpt-5").level;
// preferred bases (schema version 2): a tokenizer's counter passed in by name, which base answered
declare const encoder: { encode(text: string): number[] };
const counted: Calibration = load(config, { counters: { "tiktoken:o200k_base": (text) => encoder.encode(text).length } });
const byMap: Calibration = load(config, { counters: new Map([["hf:gemma3", (text: string) => text.length]]) });
const base: string = counted.params("openai", "gpt-5").base;
const missing: string[] = byMap.missingCounters();
const preferredBase: string | undefined = config.providers?.openai?.preferred?.base;
const isStrictError: boolean = new UnknownGroupError("x") instanceof Error;

// the context accountant: a typed usage object (an interface, as SDKs declare theirs) goes in as it is
interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number | null;
}
declare const reported: AnthropicUsage;
const options: TrackerOptions = {
  provider: "anthropic",
  model: "claude-sonnet-4-5",
  window: 200_000,
  outputReserve: 32_000,
  rule: { name: "claude-code", buffer: 10_000 },
  reasoning: "strip-all-but-last",
  tool: "claude-code",
  correction: true,
};
const tracker: Tracker = cal.tracker(options);
tracker.setStatic({ system: "You are an agent.", tools: JSON.stringify([{ name: "read" }]) });
const added: number = tracker.append(parts) + tracker.append([["tool_result", "output"]], 1);
const change: number = tracker.remove([["tool_result", "output"]], ["[pruned]"], 120);
const check: UsageCheck = tracker.observe(reported);
const again: number | null = tracker.observe({ promptTokenCount: 9000 }, "gemini").errorPct;
tracker.compacted([["summary", "what happened so far"]]);
const view: TrackerUsage = tracker.usage();
const compact: boolean = view.shouldCompact && view.breakdown.system + view.breakdown.messages >= 0;
const last: number | null = view.lastCheck === null ? null : view.lastCheck.errorPct;
const read: UsageCounts = readUsage(reported);
const limit: number = ruleLimit("codex", RULES.codex, 400_000, 128_000, 272_000);
export const results = [shown, whole, one, level, base, missing, preferredBase, isStrictError, added, change, check, again, compact, last, read.cacheRead, limit];

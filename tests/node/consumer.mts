// Type-checked only (npm run check): what an agent written in TypeScript writes against calib-runtime.mjs.
import { type CalibrationConfig, type Part, Calibration, UnknownGroupError, load } from "../../calib/calib-runtime.mjs";

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
const isStrictError: boolean = new UnknownGroupError("x") instanceof Error;
export const results = [shown, whole, one, level, isStrictError];

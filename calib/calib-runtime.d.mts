/**
 * Calibrated token counts from a calib calibration config: the part an agent embeds.
 *
 * One file, no dependencies, no platform API (ES2020, strict): copy it into your agent (or the
 * JavaScript build, `calib-runtime.mjs` with `calib-runtime.d.mts`, that `calib export --runtime js`
 * writes) and ship the `calibration.json` that `calib fit` wrote. It runs under Node 18+, Bun, Deno
 * and browsers, and gives the same integers as calib's Python runtime (`calib/runtime.py`) on every
 * input: the two are held to one vector file of expected counts.
 *
 *     import { load } from "./calib-runtime.mjs";
 *     const cal = load(JSON.parse(readFileSync("calibration.json", "utf8")));
 *     cal.count("some text", "google", "gemini-2.5-pro");
 *     cal.countParts([["tool_result", output], ["user_text", prompt]], "google", "gemini-2.5-pro");
 *     // what /context should show before the next call, from the last call's reported usage:
 *     cal.predictContext(lastCtx, lastCarry, newParts, "google", "gemini-2.5-pro");
 *     // ... after pruning an old tool output to a placeholder and dropping reported reasoning tokens:
 *     cal.predictContext(lastCtx, lastCarry, newParts, "google", "gemini-2.5-pro", {
 *       removed: [["tool_result", oldOutput]], placeholders: ["[output pruned]"],
 *       removedTokens: reasoningTokens });
 *     // a whole prompt with no usage yet: the agent's system prompt and tool schemas, plus the parts
 *     cal.estimateContext(parts, "google", "gemini-2.5-pro", { tool: "gemini-cli" });
 *
 * A part counts `ratio[kind group] * base(text)`, and each message adds `message_overhead`; the sum
 * is rounded half up. Bases computed here: `chars4` (UTF-16 code units, as the agents count
 * `text.length`), `cjk` and `charclass` (by code point); a `tiktoken:NAME` base, or any other,
 * needs a counter passed in (js-tiktoken, say).
 *
 * Each provider's best base (schema version 2): the config's own `base` needs no tokenizer, and every
 * provider has parameters for it; a provider may also name a `preferred` base that counts closer (a
 * tokenizer: `tiktoken:o200k_base` for OpenAI, `hf:gemma3` for Google), with parameters of its own.
 * The preferred base answers when this runtime can count it: it computes no tokenizer itself, so a
 * tokenizer's counter is passed in by name,
 *
 *     const cal = load(config, { counters: { "tiktoken:o200k_base": (text) => encoder.encode(text).length } });
 *
 * (a preferred `chars4` or `cjk` counts here as it is). Without one the provider's tokenizer-free
 * parameters answer, fitted for it all the same: `cal.params(provider, model).base` says which base
 * answered, `cal.missingCounters()` which preferred bases found no counter. Configs of version 1 (one
 * base for every provider) still load.
 *
 * A model may count with a base of its own (schema version 3): the parameters of a model under its
 * provider's `preferred` that name a `base` apply to that base (Claude Opus 4.7's new tokenizer while
 * the other Claude models keep the older one). That model answers with its own base when it counts,
 * else with its tokenizer-free parameters: the provider's preferred base was fitted worse for it.
 *
 * Which parameters answer (the fallback chain), after normalising the names (`models/gemini-2.5-pro`,
 * `anthropic.claude-sonnet-4-20250514-v1:0` and `claude-sonnet-4@20250514` all find
 * `gemini-2.5-pro` / `claude-sonnet-4`):
 *
 * 1. the model under its provider (`level` "provider/model");
 * 2. a provider the config does not know, with a model it knows under some provider: that model
 *    (the first such provider by name);
 * 3. the provider's own parameters (`level` "provider");
 * 4. the config's `default` (`level` "default"), for a provider it does not know.
 *
 * When the provider whose parameters answer has a preferred base that counts here, that base's own
 * parameters answer instead, at the same level: its model's when the answer was a model and the
 * preferred base has parameters of it, else its provider's (a model with a base of its own: above).
 *
 * `cal.params(provider, model).level` says which one answered. An unknown name is not an error by
 * default; `load(config, { strict: true })` (or `params(p, m, { strict: true })`) throws
 * `UnknownGroupError` whenever the answer is less specific than what was asked.
 *
 * Every failure throws a `CalibrationError` naming the field or the argument: JSON text that does not
 * parse, a config of the wrong shape, and these bounds (the Python runtime's, with its messages),
 * which make sure that no estimate on a config `validate` accepted can overflow:
 *
 * - every ratio and class weight is a number from 0 to 1e100 (`MAX_PARAMETER`), every overhead one
 *   from -1e100 to 1e100. A base counts at most 1.5 per UTF-16 code unit (cjk) or its largest class
 *   weight per code point (charclass), so for texts of up to 2**53 code units in all and up to 2**53
 *   messages no sum an estimate makes exceeds 4 * 1e100 * 1e100 * 2**53 (about 4e216), far inside a
 *   double (1.8e308): every estimate is finite and rounds to an integer. A number that JSON reads as
 *   infinite (1e309) is beyond the bound like any other;
 * - the counts passed in (`messages`, `lastCtx`, `lastCarry`, `removedTokens`) are numbers from
 *   -(2**53 - 1) to 2**53 - 1 (`MAX_COUNT`, Number.MAX_SAFE_INTEGER);
 * - JSON text nests at most 64 levels (`MAX_DEPTH`; a calibration config nests 7), checked before it
 *   is parsed;
 * - a counter (`counters`, `baseCounter`) or `classCounter` passed in must return counts within the
 *   same +-MAX_COUNT (far more tokens than any text has); a count beyond, NaN or no number is refused.
 */
export declare const SCHEMA_VERSION = 3;
/**
 * The versions this runtime reads: 1 had one base for every provider, 2 adds a preferred base per
 * provider, 3 a base of its own for a model under its provider's preferred one.
 */
export declare const SCHEMA_VERSIONS: readonly number[];
export declare const RUNTIME_BASES: readonly string[];
/** The largest magnitude of a ratio, class weight or overhead (see the bounds above). */
export declare const MAX_PARAMETER = 1e+100;
/** The largest magnitude of a count passed in: the integers a double holds exactly. */
export declare const MAX_COUNT: number;
/** How deep the JSON text of a config may nest; a calibration config nests CONFIG_DEPTH. */
export declare const MAX_DEPTH = 64;
export declare const CONFIG_DEPTH = 7;
/**
 * The character classes of the charclass base, in the order of `classCounts`. They partition the
 * code points: ASCII letters, ASCII digits, ASCII whitespace (space, \t \n \r \v \f), the rest of
 * ASCII, U+3000..U+DFFF (CJK punctuation, kana, ideographs, Hangul; lone surrogates too), the rest.
 */
export declare const CHAR_CLASSES: readonly string[];
/** Which reported reasoning tokens an agent keeps in its prompt: all, only the last call's, none. */
export type ReasoningPolicy = "include" | "strip-all-but-last" | "strip-all";
/** A tracker's reasoning policies, and its default (see `Tracker`). */
export declare const REASONING_POLICIES: readonly ReasoningPolicy[];
export declare const DEFAULT_REASONING: ReasoningPolicy;
/** The parameters of one level: the default, a provider or a model. */
export interface ParamsConfig {
    ratios: Record<string, number>;
    message_overhead: number;
    class_weights?: Record<string, number>;
    static_overhead?: number | null;
    static_overhead_by_tool?: Record<string, number> | null;
    calls?: number;
}
/** A provider's preferred base (schema version 2): a tokenizer, with parameters of its own. */
export interface PreferredConfig {
    /** The base estimator's registry name (never charclass nor the config's own base). */
    base: string;
    params: ParamsConfig;
    models?: Record<string, PreferredModelConfig>;
}
/** A model's parameters under its provider's preferred base; version 3: of a base of its own. */
export interface PreferredModelConfig extends ParamsConfig {
    /** The model's own base (never charclass nor the config's own base); default: the provider's. */
    base?: string;
}
export interface ProviderConfig {
    params: ParamsConfig;
    models?: Record<string, ParamsConfig>;
    /** Version 2: the provider's best base, used when this runtime can count it, else `params`. */
    preferred?: PreferredConfig;
}
/** A calibration config as `calib fit` writes it (`schema_version` 1 or 2). */
export interface CalibrationConfig {
    schema_version: number;
    /** The config's own base (in version 2, one without a tokenizer: chars4, cjk or charclass). */
    base: string;
    classes?: string[];
    kind_groups: Record<string, string>;
    ratio_groups: string[];
    default_group: string;
    default: ParamsConfig;
    providers?: Record<string, ProviderConfig>;
    fit?: Record<string, unknown>;
    created_at?: string;
}
/** A part of a prompt: a text, a `[kind, text]` pair, or an object with `text` and an optional `kind`. */
export type Part = string | readonly [string | null | undefined, string] | {
    text: string;
    kind?: string | null;
};
export interface LoadOptions {
    /**
     * A base's counter by its name: the preferred bases this runtime cannot count (`tiktoken:*`,
     * `hf:*`), or a version 1 config's own base; a plain object (or a Map) of name -> count(text).
     */
    counters?: Readonly<Record<string, (text: string) => number>> | ReadonlyMap<string, (text: string) => number>;
    /** Counts a text with the config's own base (a version 1 config's tokenizer): `counters: { [base]: ... }`. */
    baseCounter?: (text: string) => number;
    /** Replaces `classCounts` for the charclass base. */
    classCounter?: (text: string) => ArrayLike<number>;
    /** Throw `UnknownGroupError` rather than fall back to a less specific level. */
    strict?: boolean;
}
export interface PredictOptions {
    /** How many messages the new parts make (default: one per part). */
    messages?: number | null;
    /** Parts the agent took out of the history since the last call (an old tool output it pruned). */
    removed?: Iterable<Part>;
    /** The texts that replaced them (the messages stay, so no framing changes). */
    placeholders?: Iterable<Part>;
    /** Tokens known exactly that left the context (reported reasoning the agent drops). */
    removedTokens?: number;
}
export interface EstimateOptions {
    /** How many messages the parts make (default: one per part). */
    messages?: number | null;
    /** The agent whose system prompt and tool schemas the prompt carries (`TOOL/subagent` falls back to `TOOL`). */
    tool?: string | null;
}
export declare class CalibrationError extends Error {
    constructor(message: string);
}
/** Strict lookup: the config has no parameters of their own for this provider or model. */
export declare class UnknownGroupError extends CalibrationError {
    constructor(message: string);
}
/** Provider names compare lowercased and trimmed ("" when unknown). */
export declare function normaliseProvider(provider: string | null | undefined): string;
/** A model name without routing prefixes and date or version suffixes, lowercased. */
export declare function normaliseModel(model: string | null | undefined): string;
/** OpenCode's and Dexto's estimate: round(UTF-16 length / 4), halves up. */
export declare function chars4(text: string): number;
/** gemini-cli's estimate: 0.25 per ASCII UTF-16 unit, 1.5 per other unit, floored (length/4 past 100k). */
export declare function cjk(text: string): number;
/** Code points of `text` in each of CHAR_CLASSES (a lone surrogate counts as one, in cjk). */
export declare function classCounts(text: string): number[];
/** Check a config's structure and bounds; throw CalibrationError naming the first bad field. */
export declare function validate(doc: unknown): asserts doc is CalibrationConfig;
/** The parameters that apply to one (provider, model), and the level they came from. */
export declare class Params {
    /** "provider/model", "provider" or "default". */
    readonly level: string;
    /** The base estimator these parameters apply to. */
    readonly base: string;
    readonly ratios: ReadonlyMap<string, number>;
    readonly messageOverhead: number;
    readonly staticOverhead: number | null;
    /** The same overhead for one agent (its own system prompt and tool schemas), by tool name. */
    readonly staticOverheadByTool: ReadonlyMap<string, number>;
    /** The class weights in the config's `classes` order (charclass base). */
    readonly classWeights: readonly number[] | null;
    constructor(raw: ParamsConfig, level: string, classes: readonly string[] | null, base?: string);
    /**
     * The static overhead (system prompt and tool schemas) of `tool`'s prompts: the one fitted for that
     * agent, else the one fitted over all agents, else 0. A sub-agent's prompts are asked for as
     * `TOOL/subagent` (its own system prompt), which falls back to `TOOL`'s; an agent's version as
     * `TOOL@VERSION` (its system prompt changes with versions), which falls back to the version's minor
     * release, then to no version.
     */
    staticFor(tool?: string | null): number;
}
/** A loaded calibration config: calibrated counts per (provider, model). */
export declare class Calibration {
    readonly doc: CalibrationConfig;
    readonly strict: boolean;
    /** The config's own base (in version 2, one without a tokenizer). */
    readonly base: string;
    readonly defaultGroup: string;
    readonly classes: readonly string[] | null;
    private readonly kindGroups;
    private readonly classIndex;
    private readonly classCounter;
    private readonly counters;
    private readonly defaultParams;
    private readonly providers;
    private readonly models;
    private readonly preferred;
    private readonly cache;
    constructor(doc: CalibrationConfig, options?: LoadOptions);
    /**
     * The preferred bases of this config that no counter counts here (their providers answer with the
     * config's own base), sorted.
     */
    missingCounters(): string[];
    /**
     * The counter of a base: passed in, else computed here (chars4, cjk; no tokenizer), else null.
     * Looked for once per base.
     */
    private counterOf;
    /**
     * The model's parameters, else its provider's, else the default; an unknown provider with a
     * known model name finds the model under any provider. `.level` says which answered.
     *
     * Strict (`{ strict: true }`, or the calibration's own `strict`): throw `UnknownGroupError` when
     * the provider, or the model, asked for has no parameters of its own.
     */
    params(provider?: string | null, model?: string | null, options?: {
        strict?: boolean;
    }): Params;
    private lookup;
    /**
     * The base count of one text by the base `params` apply to (default: the config's own), with the
     * charclass base weighted by `params`' class weights.
     */
    baseTokens(text: string, params?: Params): number;
    /** The ratio group of a part kind. */
    group(kind?: string | null): string;
    /** A part's calibrated count before rounding (no message overhead). */
    partTokens(text: string, kind: string | null | undefined, params: Params): number;
    /** Calibrated tokens of one text (no message overhead). */
    count(text: string, provider?: string | null, model?: string | null, kind?: string | null): number;
    /**
     * Calibrated tokens of parts plus the framing of `messages` messages. Without `messages`, every
     * part is one message: calib counts each input part the agent sends (user text, tool result,
     * summary) as a message, and new parts between two calls are inputs.
     */
    countParts(parts: Iterable<Part>, provider?: string | null, model?: string | null, messages?: number | null): number;
    /**
     * The static overhead (system prompt and tool schemas) of `tool`'s prompts to the model: the value
     * fitted for that agent, else for all agents pooled, else 0 (see `Params.staticFor`).
     */
    staticOverhead(provider?: string | null, model?: string | null, tool?: string | null): number;
    /**
     * The next prompt's size: the last call's whole prompt and re-sent output, plus the new parts,
     * minus what left the context in between. `lastCtx` and `lastCarry` are exact (the provider
     * reported them), so only the change is estimated; removals are estimated the same way (see
     * `PredictOptions`). The estimated change is rounded once, half up, and may be negative; the
     * result never is. With nothing removed this is `lastCtx + lastCarry + countParts(newParts, ...)`.
     */
    predictContext(lastCtx: number, lastCarry: number, newParts: Iterable<Part>, provider?: string | null, model?: string | null, options?: PredictOptions): number;
    /**
     * A prompt's size with no usage to start from: the static overhead fitted for the model (system
     * prompt and tool schemas; the value of the agent `tool` when the config has one) plus the
     * calibrated count of every part.
     */
    estimateContext(parts: Iterable<Part>, provider?: string | null, model?: string | null, options?: EstimateOptions): number;
    /** A context accountant for one conversation with `options.model` (see `Tracker`). */
    tracker(options: TrackerOptions): Tracker;
}
/**
 * Check a config (an object, or its JSON text) and make a Calibration of it (`LoadOptions`: `counters`,
 * a base's counter by its name, for the preferred bases this runtime cannot count; `strict`: unknown
 * providers and models throw).
 */
export declare function load(config: CalibrationConfig | string, options?: LoadOptions): Calibration;
/** A compaction rule's parameters by name (null: unset, the rule's fallback applies). */
export type RuleParams = Readonly<Record<string, number | null>>;
/**
 * The agents' compaction rules: the parameters of each, with their defaults. `ruleLimit` gives the
 * count at which each compacts; calib replay judges the same rules.
 */
export declare const RULES: Readonly<Record<string, RuleParams>>;
/** Rules that compact only above their limit (`>`); the others compact at it (`>=`). */
export declare const STRICT_RULES: ReadonlySet<string>;
/** cline-legacy: the margin below the window at which Cline 3.x truncates, for the windows it names. */
export declare const CLINE_LEGACY_MARGINS: ReadonlyMap<number, number>;
/** The room a tracker keeps for the reply by default: min(DEFAULT_OUTPUT_RESERVE, window / 2). */
export declare const DEFAULT_OUTPUT_RESERVE = 20000;
/**
 * The online correction of the part estimated since the last report (gemini-cli's adaptive weight):
 * an exponential moving average of actual / estimated at this rate, kept within these bounds.
 */
export declare const CORRECTION_RATE = 0.2;
export declare const CORRECTION_BOUNDS: readonly [number, number];
/**
 * The count at which rule `name` compacts on a window of `context` tokens, with the model's output
 * limit (or the agent's output reserve) `maxOutput` and its prompt cap `inputLimit` (null: none).
 *
 * - `gemini-cli`, `gemini-cli-0.16`, `gemini-cli-0.11`: `threshold` × context (0.5 from gemini-cli 0.17.0,
 *   0.2 from 0.12.0 to 0.16, 0.7 before: the default each release shipped);
 * - `dexto`: floor(min(context, max_context_tokens) × threshold);
 * - `opencode`: inputLimit - (reserved, else min(buffer, maxOutput)), else context - maxOutput;
 * - `opencode-2025`: context - min(maxOutput, output_token_max);
 * - `opencode-2`: context - max(min(maxOutput, output_token_max), buffer), and at most
 *   inputLimit - buffer;
 * - `claude-code`, `claude-code-early`: context - min(maxOutput, output_reserve) - buffer;
 * - `codex`: auto_compact_token_limit, else floor(fraction × (inputLimit, else context));
 * - `qwen-code`: min(threshold × context, context - summary_reserve - buffer), or threshold × context
 *   when that ceiling is not positive;
 * - `llxprt`: threshold × (context - maxOutput) (the completion budget);
 * - `cline`: fraction × (min(inputLimit, context), else input_share × context);
 * - `cline-legacy`: context - 27k, 30k or 40k for windows of 64k, 128k or 200k
 *   (`CLINE_LEGACY_MARGINS`), else max(context - 40k, 0.8 × context);
 * - `roo-code`: min(percent / 100 × context, (1 - buffer_fraction) × context - maxOutput);
 * - `custom`: share × (context - reserve), the reserve `maxOutput` unless given.
 */
export declare function ruleLimit(name: string, params: Readonly<Record<string, number | null | undefined>>, context: number, maxOutput: number, inputLimit?: number | null): number;
/** A rule as a tracker takes it: a preset's name, or an object of its parameters with `name` (default `custom`). */
export interface RuleSpec {
    name?: string;
    [parameter: string]: string | number | null | undefined;
}
/** Where one provider's usage object holds each count, and the style calib's importers read it in. */
export interface UsageConvention {
    style: "anthropic" | "openai" | "gemini";
    prompt: readonly string[];
    cacheRead: readonly string[];
    cacheWrite: readonly string[];
    output: readonly string[];
    reasoning: readonly string[];
}
export declare const USAGE_CONVENTIONS: Readonly<Record<string, UsageConvention>>;
/** A call's usage as calib's importers normalise it (see `readUsage`). */
export interface UsageCounts {
    /** The convention read, and the style of calib's importers it is normalised in. */
    convention: string;
    style: "anthropic" | "openai" | "gemini";
    /** The whole prompt, cached and uncached. */
    prompt: number;
    /** The visible output, which re-enters the next prompt. */
    output: number;
    reasoning: number;
    cacheRead: number;
    cacheWrite: number;
}
/**
 * The convention of a usage object, told by its keys (`USAGE_CONVENTIONS`).
 *
 * Anthropic and the OpenAI Responses API both say `input_tokens`; Anthropic's cache fields, or
 * OpenAI's `*_details`, tell them apart. Without either, both conventions give the same counts.
 */
export declare function usageConvention(usage: object): string;
/**
 * A call's usage as calib's importers normalise it: `prompt` (the whole prompt, cached and uncached:
 * ctx), `output` (the visible output, which re-enters the next prompt), `reasoning`, `cacheRead`,
 * `cacheWrite`, and the `convention` and `style` read.
 *
 * A count that is absent or null is 0, but the prompt's, which is required; a count that is not a
 * whole number from 0 to MAX_COUNT is a CalibrationError naming its field.
 */
export declare function readUsage(usage: object, convention?: string | null): UsageCounts;
/** What `Calibration.tracker` takes: the model, its window, and how the agent keeps its context. */
export interface TrackerOptions {
    provider?: string | null;
    model?: string | null;
    /** The model's context window, tokens. */
    window: number;
    /** Room kept for the reply; default min(20,000, window / 2). */
    outputReserve?: number | null;
    /** A prompt cap below the window (GPT-5's 272k). */
    inputLimit?: number | null;
    /**
     * A preset of `RULES` by name, an object of its parameters with `name`, or a custom
     * `{ share, reserve }`: compact at share × (window - reserve). Default: the preset of `tool`, else
     * custom at 0.9.
     */
    rule?: string | RuleSpec | null;
    /** Which reported reasoning tokens the agent keeps in its prompt (`REASONING_POLICIES`). */
    reasoning?: ReasoningPolicy;
    /** The agent's name: its fitted static overhead and preset. */
    tool?: string | null;
    /** Scale the part estimated since the last report by the running ratio actual / estimated. */
    correction?: boolean;
}
/** How a tracker's total breaks down: system, tools, messages and reasoning add up to the total. */
export interface ContextBreakdown {
    system: number;
    tools: number;
    messages: number;
    reasoning: number;
    /** The messages were below zero and were set to 0 (the estimated parts shrunk until they fit). */
    clamped: boolean;
    /** The parts that are the fitted static overhead (which `system` then holds whole). */
    fitted: string[];
}
/** A call's estimate against its reported prompt. */
export interface UsageCheck {
    estimated: number;
    actual: number;
    /** estimated - actual. */
    error: number;
    /** error × 100 / actual (null when actual is 0). */
    errorPct: number | null;
}
/** The context before the next call (see `Tracker.usage`). */
export interface TrackerUsage {
    /** The count to show and to compact on. */
    total: number;
    window: number;
    outputReserve: number;
    /** Of the window. */
    percent: number;
    /** window - total - outputReserve (negative when over). */
    free: number;
    basis: "reported" | "estimated";
    breakdown: ContextBreakdown;
    /** The estimated change since the last report. */
    sinceReport: number;
    threshold: number;
    shouldCompact: boolean;
    lastCheck: UsageCheck | null;
    reasoning: ReasoningPolicy;
    rule: string;
    /** The weight applied to sinceReport (null when the correction is off). */
    correction: number | null;
}
/**
 * The context of one conversation: what `/context` shows, how it breaks down, and when to compact.
 *
 *     const tracker = cal.tracker({
 *       provider: "anthropic", model: "claude-sonnet-4-5", window: 200_000, tool: "claude-code" });
 *     tracker.setStatic({ system: systemPrompt, tools: JSON.stringify(toolSchemas) });
 *     tracker.append([["user_text", prompt]]);
 *     const response = await client.messages.create(...);
 *     tracker.observe(response.usage);   // returns the check of the estimate made for this call
 *     tracker.append([["assistant_text", reply], ["tool_result", output]]);
 *     const view = tracker.usage();      // total, breakdown, free, shouldCompact, lastCheck, ...
 *     if (view.shouldCompact) { const summary = ...; tracker.compacted([["summary", summary]]); }
 *
 * Its options are `TrackerOptions`. Every number it gives is the Python runtime's `Tracker`'s, to the
 * bit (the same operations in the same order): the two are held to one vector file of scripted
 * conversations. Its error messages are Python's too, naming an option by its Python name
 * (`output_reserve`, `input_limit`).
 */
export declare class Tracker {
    readonly calibration: Calibration;
    readonly provider: string | null;
    readonly model: string | null;
    readonly tool: string | null;
    readonly window: number;
    readonly outputReserve: number;
    readonly inputLimit: number | null;
    readonly reasoning: ReasoningPolicy;
    readonly rule: string;
    readonly ruleParams: RuleParams;
    readonly threshold: number;
    readonly correction: boolean;
    private readonly params;
    private system;
    private tools;
    private readonly fitted;
    private known;
    private since;
    private messages;
    private kept;
    private weight;
    private check;
    constructor(calibration: Calibration, options: TrackerOptions);
    /**
     * The agent's system prompt and tool schemas (JSON text), counted instead of the fitted static
     * overhead. One left out (undefined or null) stays as it was.
     */
    setStatic(texts?: {
        system?: string | null;
        tools?: string | null;
    }): void;
    /**
     * Parts added to the conversation (one message each, unless `messages` says how many); returns
     * their calibrated estimate.
     */
    append(parts: Iterable<Part>, messages?: number | null): number;
    /**
     * Parts taken out of the conversation (pruned), each maybe replaced by a placeholder text (the
     * messages stay), and `tokens` known exactly (reported reasoning the agent drops). Returns the
     * estimated change (negative when the context shrinks).
     */
    remove(parts?: Iterable<Part>, placeholders?: Iterable<Part>, tokens?: number): number;
    /**
     * The history was replaced by `summaryParts` (and whatever is appended next): the count is an
     * estimate again until the next report, and no reasoning is kept.
     */
    compacted(summaryParts?: Iterable<Part>): void;
    /**
     * A call's reported usage (any of `USAGE_CONVENTIONS`, told by its keys unless named). Returns the
     * check of the estimate made for this call: estimated, actual, error, errorPct.
     */
    observe(usage: object, convention?: string | null): UsageCheck;
    /**
     * The context before the next call: `total` (the count to show and to compact on), `window`,
     * `outputReserve`, `percent` of the window, `free` (window - total - output reserve; negative when
     * over), `basis` ("reported" or "estimated"), `breakdown` (system, tools, messages and reasoning
     * adding up to total; `clamped` when messages were below zero and were set to 0, `fitted` naming
     * the parts that are the fitted static overhead, which system then holds whole), `sinceReport`,
     * `threshold`, `shouldCompact`, `lastCheck`, `reasoning`, `rule`, and `correction` (the weight
     * applied to sinceReport, null when off).
     */
    usage(): TrackerUsage;
    private changed;
    private staticParts;
    private total;
    private breakdown;
    /**
     * A report: `prompt` the whole prompt of the call, `output` its visible output, `reasoning` its
     * reasoning tokens. The prompt holds the reasoning the policy kept; the next one holds the visible
     * output and the reasoning the policy keeps after this call.
     */
    private observed;
}

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
 * needs a `baseCounter` passed in (js-tiktoken, say).
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
 * - JSON text nests at most 64 levels (`MAX_DEPTH`; a calibration config nests 6), checked before it
 *   is parsed;
 * - a `baseCounter` or `classCounter` passed in must return counts within the same +-MAX_COUNT (far
 *   more tokens than any text has); a count beyond, NaN or no number is refused.
 */
export declare const SCHEMA_VERSION = 1;
export declare const RUNTIME_BASES: readonly string[];
/** The largest magnitude of a ratio, class weight or overhead (see the bounds above). */
export declare const MAX_PARAMETER = 1e+100;
/** The largest magnitude of a count passed in: the integers a double holds exactly. */
export declare const MAX_COUNT: number;
/** How deep the JSON text of a config may nest; a calibration config nests CONFIG_DEPTH. */
export declare const MAX_DEPTH = 64;
export declare const CONFIG_DEPTH = 6;
/**
 * The character classes of the charclass base, in the order of `classCounts`. They partition the
 * code points: ASCII letters, ASCII digits, ASCII whitespace (space, \t \n \r \v \f), the rest of
 * ASCII, U+3000..U+DFFF (CJK punctuation, kana, ideographs, Hangul; lone surrogates too), the rest.
 */
export declare const CHAR_CLASSES: readonly string[];
/** The parameters of one level: the default, a provider or a model. */
export interface ParamsConfig {
    ratios: Record<string, number>;
    message_overhead: number;
    class_weights?: Record<string, number>;
    static_overhead?: number | null;
    static_overhead_by_tool?: Record<string, number> | null;
    calls?: number;
}
export interface ProviderConfig {
    params: ParamsConfig;
    models?: Record<string, ParamsConfig>;
}
/** A calibration config as `calib fit` writes it (`schema_version` 1). */
export interface CalibrationConfig {
    schema_version: number;
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
    /** Counts a text with the config's base (needed for `tiktoken:*` and other bases). */
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
    readonly ratios: ReadonlyMap<string, number>;
    readonly messageOverhead: number;
    readonly staticOverhead: number | null;
    /** The same overhead for one agent (its own system prompt and tool schemas), by tool name. */
    readonly staticOverheadByTool: ReadonlyMap<string, number>;
    /** The class weights in the config's `classes` order (charclass base). */
    readonly classWeights: readonly number[] | null;
    constructor(raw: ParamsConfig, level: string, classes: readonly string[] | null);
    /**
     * The static overhead (system prompt and tool schemas) of `tool`'s prompts: the one fitted for that
     * agent, else the one fitted over all agents, else 0. A sub-agent's prompts are asked for as
     * `TOOL/subagent` (its own system prompt), which falls back to `TOOL`'s.
     */
    staticFor(tool?: string | null): number;
}
/** A loaded calibration config: calibrated counts per (provider, model). */
export declare class Calibration {
    readonly doc: CalibrationConfig;
    readonly strict: boolean;
    readonly base: string;
    readonly defaultGroup: string;
    readonly classes: readonly string[] | null;
    private readonly kindGroups;
    private readonly classIndex;
    private readonly classCounter;
    private readonly baseCounter;
    private readonly defaultParams;
    private readonly providers;
    private readonly models;
    private readonly cache;
    constructor(doc: CalibrationConfig, options?: LoadOptions);
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
    /** The base count of one text (with the charclass base, weighted by `params`' class weights). */
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
    private sumParts;
}
/** Check a config (an object, or its JSON text) and make a Calibration of it. */
export declare function load(config: CalibrationConfig | string, options?: LoadOptions): Calibration;

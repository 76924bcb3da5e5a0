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
export const SCHEMA_VERSION = 3;
/**
 * The versions this runtime reads: 1 had one base for every provider, 2 adds a preferred base per
 * provider, 3 a base of its own for a model under its provider's preferred one.
 */
export const SCHEMA_VERSIONS = [1, 2, 3];
export const RUNTIME_BASES = ["chars4", "cjk", "charclass"];
/** The largest magnitude of a ratio, class weight or overhead (see the bounds above). */
export const MAX_PARAMETER = 1e100;
/** The largest magnitude of a count passed in: the integers a double holds exactly. */
export const MAX_COUNT = Number.MAX_SAFE_INTEGER;
/** How deep the JSON text of a config may nest; a calibration config nests CONFIG_DEPTH. */
export const MAX_DEPTH = 64;
export const CONFIG_DEPTH = 7;
/**
 * The character classes of the charclass base, in the order of `classCounts`. They partition the
 * code points: ASCII letters, ASCII digits, ASCII whitespace (space, \t \n \r \v \f), the rest of
 * ASCII, U+3000..U+DFFF (CJK punctuation, kana, ideographs, Hangul; lone surrogates too), the rest.
 */
export const CHAR_CLASSES = ["letters", "digits", "whitespace", "punctuation", "cjk", "other"];
/** A tracker's reasoning policies, and its default (see `Tracker`). */
export const REASONING_POLICIES = ["include", "strip-all-but-last", "strip-all"];
export const DEFAULT_REASONING = "strip-all";
export class CalibrationError extends Error {
    constructor(message) {
        super(message);
        this.name = "CalibrationError";
    }
}
/** Strict lookup: the config has no parameters of their own for this provider or model. */
export class UnknownGroupError extends CalibrationError {
    constructor(message) {
        super(message);
        this.name = "UnknownGroupError";
    }
}
// -- helpers that behave as Python's do ----------------------------------------------------------------
function has(object, key) {
    return Object.prototype.hasOwnProperty.call(object, key);
}
// Python's str.strip(): the code points str.isspace() accepts (not quite JavaScript's trim()).
const PY_SPACE = /^[\t\n\v\f\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;
function pyStrip(text) {
    return text.replace(PY_SPACE, "");
}
// Strings compare by code point, as Python sorts them (JavaScript's < compares UTF-16 units).
function compareCodePoints(a, b) {
    const left = Array.from(a);
    const right = Array.from(b);
    const n = Math.min(left.length, right.length);
    for (let i = 0; i < n; i++) {
        const x = left[i].codePointAt(0);
        const y = right[i].codePointAt(0);
        if (x !== y)
            return x < y ? -1 : 1;
    }
    return left.length - right.length;
}
// A number as String(number) writes it; the Python runtime writes its numbers the same way.
function showNumber(value) {
    if (Number.isNaN(value))
        return "NaN";
    if (!Number.isFinite(value))
        return value > 0 ? "Infinity" : "-Infinity";
    return String(value);
}
const SHOWN = 60; // characters of a value an error message shows
// A value for an error message: JSON as Python's json.dumps prints it (ASCII only, ", " and ": "
// between items), nested containers elided, cut at 60 characters; never recursing without end,
// whatever the value's depth or size.
function show(value) {
    const text = shown(value, 0);
    return text.length <= SHOWN ? text : text.slice(0, SHOWN - 3) + "...";
}
function shown(value, depth) {
    if (value === undefined || value === null)
        return "null";
    if (typeof value === "boolean")
        return value ? "true" : "false";
    if (typeof value === "number")
        return showNumber(value);
    if (typeof value === "string") {
        // a longer text is cut in show(); escaping only its start keeps a huge one cheap
        const start = value.slice(0, SHOWN);
        return JSON.stringify(start).replace(/[\u0080-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
    }
    if (Array.isArray(value)) {
        if (depth >= 2)
            return "[...]";
        return `[${value.slice(0, SHOWN).map((item) => shown(item, depth + 1)).join(", ")}]`;
    }
    if (typeof value === "object") {
        if (depth >= 2)
            return "{...}";
        const object = value;
        const items = [];
        for (const key in object) {
            if (!has(object, key))
                continue;
            items.push(`${shown(key, depth + 1)}: ${shown(object[key], depth + 1)}`);
            if (items.length >= SHOWN)
                break;
        }
        return `{${items.join(", ")}}`;
    }
    return typeof value;
}
// Python's name for a JSON value's type, for error messages.
function pyType(value) {
    if (value === null || value === undefined)
        return "NoneType";
    if (Array.isArray(value))
        return "list";
    switch (typeof value) {
        case "string":
            return "str";
        case "boolean":
            return "bool";
        case "number":
            return Number.isInteger(value) ? "int" : "float";
        default:
            return typeof value;
    }
}
// -- names ----------------------------------------------------------------------------------------------
const PREFIXES = /^(?:[a-z]{2}\.)?(?:anthropic|amazon|meta|cohere|mistral|ai21|deepseek|qwen)\./;
const SUFFIXES = [
    /-v\d+(?::\d+)?$/, // Bedrock model versions: -v1:0
    /@(?:\d{8}|latest)$/, // Vertex: claude-sonnet-4@20250514
    /-(?:\d{8}|\d{4}-\d{2}-\d{2})$/, // claude-...-20250514, gpt-4o-2024-08-06
    /-latest$/,
];
/** Provider names compare lowercased and trimmed ("" when unknown). */
export function normaliseProvider(provider) {
    return pyStrip(provider || "").toLowerCase();
}
/** A model name without routing prefixes and date or version suffixes, lowercased. */
export function normaliseModel(model) {
    let name = pyStrip(model || "").toLowerCase();
    name = name.slice(name.lastIndexOf("/") + 1); // models/..., google/..., openrouter/anthropic/...
    name = name.replace(PREFIXES, "");
    let changed = true;
    while (changed) {
        changed = false;
        for (const suffix of SUFFIXES) {
            const stripped = name.replace(suffix, "");
            if (stripped !== name && stripped) {
                name = stripped;
                changed = true;
            }
        }
    }
    return name;
}
// -- the base counts (identical to calib's estimators of the same names) ---------------------------------
/** OpenCode's and Dexto's estimate: round(UTF-16 length / 4), halves up. */
export function chars4(text) {
    return Math.floor((text.length + 2) / 4);
}
/** gemini-cli's estimate: 0.25 per ASCII UTF-16 unit, 1.5 per other unit, floored (length/4 past 100k). */
export function cjk(text) {
    const units = text.length;
    if (units > 100000)
        return Math.floor(units / 4);
    let ascii = 0;
    for (let i = 0; i < units; i++) {
        if (text.charCodeAt(i) < 128)
            ascii++;
    }
    return Math.floor((ascii + 6 * (units - ascii)) / 4);
}
// The class of each ASCII code unit (indices into CHAR_CLASSES).
const ASCII_CLASS = (() => {
    const table = new Uint8Array(128).fill(3);
    for (let c = 65; c <= 90; c++)
        table[c] = 0;
    for (let c = 97; c <= 122; c++)
        table[c] = 0;
    for (let c = 48; c <= 57; c++)
        table[c] = 1;
    for (const c of [32, 9, 10, 13, 11, 12])
        table[c] = 2;
    return table;
})();
/** Code points of `text` in each of CHAR_CLASSES (a lone surrogate counts as one, in cjk). */
export function classCounts(text) {
    const counts = [0, 0, 0, 0, 0, 0];
    const n = text.length;
    let i = 0;
    while (i < n) {
        const unit = text.charCodeAt(i++);
        if (unit < 128) {
            counts[ASCII_CLASS[unit]]++;
        }
        else if (unit >= 0x3000 && unit <= 0xdfff) {
            // a high surrogate followed by a low one is one astral code point: "other"
            if (unit <= 0xdbff && unit >= 0xd800 && i < n) {
                const next = text.charCodeAt(i);
                if (next >= 0xdc00 && next <= 0xdfff) {
                    i++;
                    counts[5]++;
                    continue;
                }
            }
            counts[4]++;
        }
        else {
            counts[5]++;
        }
    }
    return counts;
}
// -- validation --------------------------------------------------------------------------------------
function fail(where, what) {
    return new CalibrationError(where ? `${where}: ${what}` : what);
}
/** A ratio or weight (0 to MAX_PARAMETER), or with `signed` an overhead (either sign). */
function checkNumber(value, where, signed = false) {
    if (typeof value !== "number")
        throw fail(where, `expected a number, got ${show(value)}`);
    if (Number.isNaN(value))
        throw fail(where, "expected a number, got NaN");
    const low = signed ? -MAX_PARAMETER : 0;
    if (value < low)
        throw fail(where, `expected a number >= ${showNumber(low)}, got ${showNumber(value)}`);
    if (value > MAX_PARAMETER) {
        throw fail(where, `expected a number <= ${showNumber(MAX_PARAMETER)}, got ${showNumber(value)}`);
    }
    return value;
}
/** A count passed in (messages, tokens); beyond MAX_COUNT an estimate could overflow or lose digits. */
function checkCount(value, name) {
    if (typeof value === "number" && value >= -MAX_COUNT && value <= MAX_COUNT)
        return value;
    throw new CalibrationError(`${name}: expected a number from -${MAX_COUNT} to ${MAX_COUNT}, got ${show(value)}`);
}
function checkObject(value, where) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
        throw fail(where, `expected an object, got ${pyType(value)}`);
    }
    return value;
}
function given(object, key) {
    return has(object, key) ? object[key] : undefined;
}
function checkParams(value, where, groups, classes) {
    const params = checkObject(value, where);
    for (const key of ["ratios", "message_overhead"]) {
        if (!has(params, key))
            throw fail(where, `missing '${key}'`);
    }
    const ratios = checkObject(params.ratios, `${where}.ratios`);
    for (const group of groups) {
        if (!has(ratios, group))
            throw fail(`${where}.ratios`, `missing the ratio of '${group}'`);
    }
    // a group not listed too: Params reads every ratio
    for (const group of Object.keys(ratios))
        checkNumber(ratios[group], `${where}.ratios.${group}`);
    checkNumber(params.message_overhead, `${where}.message_overhead`, true);
    const staticOverhead = given(params, "static_overhead");
    if (staticOverhead !== undefined && staticOverhead !== null) {
        checkNumber(staticOverhead, `${where}.static_overhead`, true);
    }
    const byTool = given(params, "static_overhead_by_tool");
    if (byTool !== undefined && byTool !== null) {
        const entries = checkObject(byTool, `${where}.static_overhead_by_tool`);
        for (const tool of Object.keys(entries)) {
            checkNumber(entries[tool], `${where}.static_overhead_by_tool.${tool}`, true);
        }
    }
    if (classes !== null) {
        const weights = checkObject(given(params, "class_weights"), `${where}.class_weights`);
        for (const name of classes) {
            if (!has(weights, name))
                throw fail(`${where}.class_weights`, `missing the weight of '${name}'`);
        }
        for (const name of Object.keys(weights))
            checkNumber(weights[name], `${where}.class_weights.${name}`);
    }
}
/** Check a config's structure and bounds; throw CalibrationError naming the first bad field. */
export function validate(doc) {
    const top = checkObject(doc, "");
    const version = given(top, "schema_version");
    if (typeof version !== "number" || !SCHEMA_VERSIONS.includes(version)) {
        const [first, last] = [SCHEMA_VERSIONS[0], SCHEMA_VERSIONS[SCHEMA_VERSIONS.length - 1]];
        throw fail("schema_version", `this runtime reads versions ${first} to ${last}, the config has ${show(version)}`);
    }
    const base = given(top, "base");
    if (typeof base !== "string" || !base) {
        throw fail("base", `expected the base estimator's name, got ${show(base)}`);
    }
    if (version >= 2 && !RUNTIME_BASES.includes(base)) {
        throw fail("base", `a version ${show(version)} config's own base needs no tokenizer (${RUNTIME_BASES.join(", ")}), ` +
            `got ${show(base)}; a tokenizer is a provider's preferred base`);
    }
    const kinds = checkObject(given(top, "kind_groups"), "kind_groups");
    const groups = given(top, "ratio_groups");
    if (!Array.isArray(groups) || groups.length === 0 || !groups.every((g) => typeof g === "string")) {
        throw fail("ratio_groups", "expected a non-empty list of names");
    }
    const names = groups;
    for (const kind of Object.keys(kinds)) {
        if (!names.includes(kinds[kind])) {
            throw fail(`kind_groups.${kind}`, `${show(kinds[kind])} is not one of ratio_groups`);
        }
    }
    if (!names.includes(given(top, "default_group")))
        throw fail("default_group", "expected one of ratio_groups");
    let classes = null;
    if (base === "charclass") {
        const listed = given(top, "classes");
        if (!Array.isArray(listed) || listed.length === 0) {
            throw fail("classes", "a charclass config needs its list of character classes");
        }
        const unknown = listed.filter((c) => !CHAR_CLASSES.includes(c));
        if (unknown.length > 0) {
            throw fail("classes", `unknown class ${show(unknown[0])}; this runtime knows ${CHAR_CLASSES.join(", ")}`);
        }
        classes = listed;
    }
    checkParams(given(top, "default"), "default", groups, classes);
    const providers = checkObject(has(top, "providers") ? top.providers : {}, "providers");
    for (const provider of Object.keys(providers)) {
        const where = `providers.${provider}`;
        const entry = checkObject(providers[provider], where);
        checkParams(given(entry, "params"), `${where}.params`, groups, classes);
        const models = checkObject(has(entry, "models") ? entry.models : {}, `${where}.models`);
        for (const model of Object.keys(models)) {
            checkParams(models[model], `${where}.models.${model}`, groups, classes);
        }
        if (has(entry, "preferred")) {
            if (version < 2)
                throw fail(`${where}.preferred`, "a preferred base needs schema version 2");
            checkPreferred(entry.preferred, `${where}.preferred`, base, groups, version);
        }
    }
}
/**
 * A provider's preferred base: its name (not the config's own base, nor charclass, whose class weights
 * only the config's own base carries) and its parameters, by provider and by model; from version 3 a
 * model's parameters may name a base of their own, under the same rule.
 */
function checkPreferred(value, where, base, groups, version) {
    const preferred = checkObject(value, where);
    checkPreferredName(given(preferred, "base"), `${where}.base`, base);
    checkParams(given(preferred, "params"), `${where}.params`, groups, null);
    const models = checkObject(has(preferred, "models") ? preferred.models : {}, `${where}.models`);
    for (const model of Object.keys(models)) {
        checkParams(models[model], `${where}.models.${model}`, groups, null);
        const params = models[model];
        if (has(params, "base")) {
            if (version < 3)
                throw fail(`${where}.models.${model}.base`, "a model's own base needs schema version 3");
            checkPreferredName(params.base, `${where}.models.${model}.base`, base);
        }
    }
}
function checkPreferredName(name, where, base) {
    if (typeof name !== "string" || !name) {
        throw fail(where, `expected the base estimator's name, got ${show(name)}`);
    }
    if (name === base || name === "charclass") {
        throw fail(where, `${show(name)} cannot be a preferred base here`);
    }
}
// -- the calibration -----------------------------------------------------------------------------------
/** The keys a tool's static overhead is looked up under, most specific first. */
/**
 * The keys a tool's static overhead is looked up under, most specific first:
 * `codex/subagent@0.140.2` -> `codex/subagent@0.140.2`, `codex/subagent@0.140`, `codex/subagent`,
 * `codex`. A version is what follows the last `@`; its minor release is its first two dot-separated fields.
 */
function toolKeys(tool) {
    if (!tool)
        return [];
    const at = tool.lastIndexOf("@");
    let name = tool;
    let version = "";
    if (at > 0) {
        name = tool.slice(0, at);
        version = tool.slice(at + 1);
    }
    const keys = [];
    if (version) {
        keys.push(`${name}@${version}`);
        const minor = version.split(".").slice(0, 2).join(".");
        if (minor !== version)
            keys.push(`${name}@${minor}`);
    }
    keys.push(name);
    const slash = name.indexOf("/");
    if (slash >= 0)
        keys.push(name.slice(0, slash));
    return keys;
}
/** Half up, never negative (the agents' Math.round). */
function roundCount(value) {
    return Math.max(0, Math.floor(value + 0.5));
}
/** Half up, and negative when the value is: a change of size may shrink the prompt. */
function roundSigned(value) {
    return Math.floor(value + 0.5);
}
/** A count a counter passed in returned, refused beyond MAX_COUNT like a count passed in. */
function counted(count, name) {
    const value = typeof count === "bigint" ? Number(count) : count;
    if (typeof value === "number" && value >= -MAX_COUNT && value <= MAX_COUNT)
        return value;
    throw new CalibrationError(`${name} returned ${show(count)}; expected a number from -${MAX_COUNT} to ${MAX_COUNT}`);
}
function checkedBaseCounter(base, counter) {
    if (typeof counter !== "function") {
        throw new CalibrationError(`the counter of '${base}' is not a function: ${show(counter)}`);
    }
    const count = counter;
    const name = `the counter of '${base}'`;
    return (text) => counted(count(text), name);
}
function checkedClassCounter(counter) {
    return (text) => {
        const counts = counter(text);
        for (let i = 0; i < counts.length; i++)
            counted(counts[i], "classCounter");
        return counts;
    };
}
/** Python's int() of a count passed in (checked): towards zero. */
function toInt(value, name) {
    return Math.trunc(checkCount(value, name));
}
/** The line on which JSON text nests deeper than MAX_DEPTH, or null; found without recursion. */
function nestedTooDeep(text) {
    let depth = 0;
    let inString = false;
    for (let i = 0; i < text.length; i++) {
        const unit = text.charCodeAt(i);
        if (inString) {
            if (unit === 92)
                i++; // a backslash escapes the next unit
            else if (unit === 34)
                inString = false;
        }
        else if (unit === 34) {
            inString = true;
        }
        else if (unit === 91 || unit === 123) {
            if (++depth > MAX_DEPTH) {
                let line = 1;
                for (let j = 0; j < i; j++)
                    if (text.charCodeAt(j) === 10)
                        line++;
                return line;
            }
        }
        else if (unit === 93 || unit === 125) {
            depth--;
        }
    }
    return null;
}
/** The parameters that apply to one (provider, model), and the level they came from. */
export class Params {
    constructor(raw, level, classes, base = "") {
        this.level = level;
        this.base = base;
        this.ratios = new Map(Object.keys(raw.ratios).map((k) => [k, Number(raw.ratios[k])]));
        this.messageOverhead = Number(raw.message_overhead);
        const staticOverhead = has(raw, "static_overhead") ? raw.static_overhead : null;
        this.staticOverhead = staticOverhead === null || staticOverhead === undefined ? null : Number(staticOverhead);
        const byTool = (has(raw, "static_overhead_by_tool") && raw.static_overhead_by_tool) || {};
        this.staticOverheadByTool = new Map(Object.keys(byTool).map((k) => [k, Number(byTool[k])]));
        const weights = has(raw, "class_weights") ? raw.class_weights : undefined;
        this.classWeights =
            classes !== null && weights !== undefined && weights !== null ? classes.map((c) => Number(weights[c])) : null;
    }
    /**
     * The static overhead (system prompt and tool schemas) of `tool`'s prompts: the one fitted for that
     * agent, else the one fitted over all agents, else 0. A sub-agent's prompts are asked for as
     * `TOOL/subagent` (its own system prompt), which falls back to `TOOL`'s; an agent's version as
     * `TOOL@VERSION` (its system prompt changes with versions), which falls back to the version's minor
     * release, then to no version.
     */
    staticFor(tool) {
        for (const key of toolKeys(tool)) {
            const found = this.staticOverheadByTool.get(key);
            if (found !== undefined)
                return found;
        }
        return this.staticOverhead !== null ? this.staticOverhead : 0;
    }
}
function unpack(part) {
    if (typeof part === "string")
        return [null, part];
    if (Array.isArray(part))
        return [part[0], part[1]];
    const object = part;
    return [object.kind, object.text];
}
function builtinCounter(base) {
    if (base === "chars4")
        return chars4;
    if (base === "cjk")
        return cjk;
    if (base.startsWith("tiktoken:")) {
        throw new CalibrationError(`the config's base is ${base}, which this runtime cannot count by itself; pass ` +
            `counters: { ${JSON.stringify(base)}: count } (count from js-tiktoken, say), or refit with ` +
            "`calib fit --base charclass`");
    }
    throw new CalibrationError(`the config's base estimator '${base}' cannot be computed by this runtime ` +
        `(it computes ${RUNTIME_BASES.join(", ")}); pass counters: { ${JSON.stringify(base)}: count } ` +
        "to count it yourself");
}
/** A loaded calibration config: calibrated counts per (provider, model). */
export class Calibration {
    constructor(doc, options = {}) {
        // a base's counter by name: passed in, built in, or null (looked for once, see counterOf)
        this.counters = new Map();
        this.providers = new Map();
        this.models = new Map(); // provider -> model -> params
        // per provider, its preferred base, used when it counts
        this.preferred = new Map();
        this.cache = new Map();
        validate(doc);
        this.doc = doc;
        this.strict = options.strict === true;
        this.base = doc.base;
        this.kindGroups = new Map(Object.keys(doc.kind_groups).map((k) => [k, doc.kind_groups[k]]));
        this.defaultGroup = doc.default_group;
        this.classes = this.base === "charclass" ? doc.classes.slice() : null;
        this.classIndex = this.classes !== null ? this.classes.map((c) => CHAR_CLASSES.indexOf(c)) : [];
        // counters passed in are held to the bounds the built-in ones keep by construction
        this.classCounter = options.classCounter ? checkedClassCounter(options.classCounter) : null;
        const given = new Map();
        const counters = options.counters;
        if (counters instanceof Map) {
            counters.forEach((counter, name) => given.set(name, counter));
        }
        else if (counters !== undefined && counters !== null) {
            const byName = counters;
            for (const name of Object.keys(byName))
                given.set(name, byName[name]);
        }
        if (options.baseCounter !== undefined && options.baseCounter !== null)
            given.set(this.base, options.baseCounter);
        given.forEach((counter, name) => this.counters.set(name, checkedBaseCounter(name, counter)));
        if (this.base !== "charclass" && !this.counters.has(this.base)) {
            this.counters.set(this.base, builtinCounter(this.base)); // the config's own base must count
        }
        this.defaultParams = new Params(doc.default, "default", this.classes, this.base);
        const providers = has(doc, "providers") && doc.providers ? doc.providers : {};
        for (const provider of Object.keys(providers)) {
            const entry = providers[provider];
            const key = normaliseProvider(provider);
            this.providers.set(key, new Params(entry.params, key, this.classes, this.base));
            const models = has(entry, "models") && entry.models ? entry.models : {};
            let known = this.models.get(key);
            if (known === undefined) {
                known = new Map();
                this.models.set(key, known);
            }
            for (const model of Object.keys(models)) {
                known.set(normaliseModel(model), new Params(models[model], `${key}/${model}`, this.classes, this.base));
            }
            const preferred = has(entry, "preferred") ? entry.preferred : undefined;
            if (preferred !== undefined && preferred !== null) {
                const name = preferred.base;
                const preferredModels = has(preferred, "models") && preferred.models ? preferred.models : {};
                const byModel = new Map();
                for (const model of Object.keys(preferredModels)) {
                    const raw = preferredModels[model];
                    const own = has(raw, "base") && typeof raw.base === "string" ? raw.base : name;
                    byModel.set(normaliseModel(model), new Params(raw, `${key}/${model}`, null, own));
                }
                this.preferred.set(key, { base: name, params: new Params(preferred.params, key, null, name), models: byModel });
            }
        }
    }
    /**
     * The preferred bases of this config that no counter counts here (their providers answer with the
     * config's own base), sorted.
     */
    missingCounters() {
        const names = new Set();
        this.preferred.forEach((preferred) => {
            names.add(preferred.base);
            preferred.models.forEach((params) => names.add(params.base));
        });
        return Array.from(names)
            .filter((name) => this.counterOf(name) === null)
            .sort(compareCodePoints);
    }
    /**
     * The counter of a base: passed in, else computed here (chars4, cjk; no tokenizer), else null.
     * Looked for once per base.
     */
    counterOf(base) {
        let found = this.counters.get(base);
        if (found === undefined) {
            found = base === "chars4" ? chars4 : base === "cjk" ? cjk : null;
            this.counters.set(base, found);
        }
        return found;
    }
    /**
     * The model's parameters, else its provider's, else the default; an unknown provider with a
     * known model name finds the model under any provider. `.level` says which answered.
     *
     * Strict (`{ strict: true }`, or the calibration's own `strict`): throw `UnknownGroupError` when
     * the provider, or the model, asked for has no parameters of its own.
     */
    params(provider, model, options = {}) {
        const key = JSON.stringify([provider === undefined ? null : provider, model === undefined ? null : model]);
        let found = this.cache.get(key);
        if (found === undefined) {
            found = this.lookup(provider, model);
            this.cache.set(key, found);
        }
        if (options.strict !== undefined ? options.strict : this.strict) {
            const p = normaliseProvider(provider);
            const m = normaliseModel(model);
            if ((p && !this.providers.has(p)) || (m && !found.level.includes("/"))) {
                const asked = m ? `${provider || "?"}/${model}` : `provider '${provider}'`;
                const known = new Set(this.providers.keys());
                this.models.forEach((models, p) => models.forEach((_, m) => known.add(`${p}/${m}`)));
                const listed = Array.from(known).sort(compareCodePoints).join(", ");
                throw new UnknownGroupError(`the calibration has no parameters of ${asked} (it would fall back to the ` +
                    `${found.level} level); it has: ${listed || "only the default"}`);
            }
        }
        return found;
    }
    lookup(provider, model) {
        const p = normaliseProvider(provider);
        const m = normaliseModel(model);
        let found = this.models.get(p)?.get(m);
        let owner = p; // the provider whose parameters answer
        if (found === undefined && !this.providers.has(p) && m) {
            const matches = Array.from(this.models.keys())
                .filter((k) => this.models.get(k).has(m))
                .sort(compareCodePoints);
            if (matches.length > 0) {
                found = this.models.get(matches[0])?.get(m);
                owner = matches[0];
            }
        }
        if (found === undefined)
            found = this.providers.get(p) || this.defaultParams;
        const preferred = this.preferred.get(owner);
        if (preferred === undefined)
            return found;
        // the preferred base's own parameters at the same level, else its provider's; a model with a base
        // of its own answers with it, else with its tokenizer-free parameters
        const own = found.level.includes("/") ? preferred.models.get(m) : undefined;
        if (own !== undefined && own.base !== preferred.base) {
            return this.counterOf(own.base) !== null ? own : found;
        }
        if (this.counterOf(preferred.base) !== null)
            return own !== undefined ? own : preferred.params;
        return found;
    }
    /**
     * The base count of one text by the base `params` apply to (default: the config's own), with the
     * charclass base weighted by `params`' class weights.
     */
    baseTokens(text, params) {
        const given = params || this.defaultParams;
        if (given.base !== "charclass") {
            // a Params of a base is only handed out when it counts
            return Number(this.counters.get(given.base)(text));
        }
        const weights = given.classWeights || [];
        const counts = this.classCounter !== null ? this.classCounter(text) : classCounts(text);
        let total = 0;
        const n = Math.min(weights.length, this.classIndex.length);
        for (let i = 0; i < n; i++)
            total += weights[i] * counts[this.classIndex[i]];
        return total;
    }
    /** The ratio group of a part kind. */
    group(kind) {
        if (!kind)
            return this.defaultGroup;
        const found = this.kindGroups.get(kind);
        return found !== undefined ? found : this.defaultGroup;
    }
    /** A part's calibrated count before rounding (no message overhead). */
    partTokens(text, kind, params) {
        return params.ratios.get(this.group(kind)) * this.baseTokens(text, params);
    }
    /** Calibrated tokens of one text (no message overhead). */
    count(text, provider, model, kind) {
        return roundCount(this.partTokens(text, kind, this.params(provider, model)));
    }
    /**
     * Calibrated tokens of parts plus the framing of `messages` messages. Without `messages`, every
     * part is one message: calib counts each input part the agent sends (user text, tool result,
     * summary) as a message, and new parts between two calls are inputs.
     */
    countParts(parts, provider, model, messages) {
        const params = this.params(provider, model);
        const [total, nParts] = sumParts(this, parts, params);
        const nMessages = messages === undefined || messages === null ? nParts : checkCount(messages, "messages");
        return roundCount(total + params.messageOverhead * nMessages);
    }
    /**
     * The static overhead (system prompt and tool schemas) of `tool`'s prompts to the model: the value
     * fitted for that agent, else for all agents pooled, else 0 (see `Params.staticFor`).
     */
    staticOverhead(provider, model, tool) {
        return this.params(provider, model).staticFor(tool);
    }
    /**
     * The next prompt's size: the last call's whole prompt and re-sent output, plus the new parts,
     * minus what left the context in between. `lastCtx` and `lastCarry` are exact (the provider
     * reported them), so only the change is estimated; removals are estimated the same way (see
     * `PredictOptions`). The estimated change is rounded once, half up, and may be negative; the
     * result never is. With nothing removed this is `lastCtx + lastCarry + countParts(newParts, ...)`.
     */
    predictContext(lastCtx, lastCarry, newParts, provider, model, options = {}) {
        const removed = Array.from(options.removed || []);
        const placeholders = Array.from(options.placeholders || []);
        const removedTokens = toInt(options.removedTokens === undefined ? 0 : options.removedTokens, "removedTokens");
        const known = toInt(lastCtx, "lastCtx") + toInt(lastCarry, "lastCarry");
        if (removed.length === 0 && placeholders.length === 0 && !removedTokens) {
            return known + this.countParts(newParts, provider, model, options.messages);
        }
        const params = this.params(provider, model);
        const [added, nParts] = sumParts(this, newParts, params);
        const [taken] = sumParts(this, removed, params);
        const [putBack] = sumParts(this, placeholders, params);
        const nMessages = options.messages === undefined || options.messages === null ? nParts : checkCount(options.messages, "messages");
        const change = roundSigned(added + params.messageOverhead * nMessages - taken + putBack);
        return Math.max(0, known + change - removedTokens);
    }
    /**
     * A prompt's size with no usage to start from: the static overhead fitted for the model (system
     * prompt and tool schemas; the value of the agent `tool` when the config has one) plus the
     * calibrated count of every part.
     */
    estimateContext(parts, provider, model, options = {}) {
        const staticOverhead = this.params(provider, model).staticFor(options.tool);
        return roundCount(staticOverhead) + this.countParts(parts, provider, model, options.messages);
    }
    /** A context accountant for one conversation with `options.model` (see `Tracker`). */
    tracker(options) {
        return new Tracker(this, options);
    }
}
/** The unrounded calibrated tokens of parts (no message overhead), and how many there are. */
function sumParts(calibration, parts, params) {
    let total = 0;
    let nParts = 0;
    for (const part of parts) {
        const [kind, text] = unpack(part);
        total += calibration.partTokens(text, kind, params);
        nParts++;
    }
    return [total, nParts];
}
/**
 * Check a config (an object, or its JSON text) and make a Calibration of it (`LoadOptions`: `counters`,
 * a base's counter by its name, for the preferred bases this runtime cannot count; `strict`: unknown
 * providers and models throw).
 */
export function load(config, options = {}) {
    let doc = config;
    if (typeof config === "string") {
        const line = nestedTooDeep(config);
        if (line !== null) {
            throw new CalibrationError(`line ${line}: JSON nested deeper than ${MAX_DEPTH} levels (a calibration config nests ${CONFIG_DEPTH})`);
        }
        try {
            doc = JSON.parse(config);
        }
        catch (error) {
            throw new CalibrationError(`not valid JSON (${error.message})`);
        }
    }
    try {
        return new Calibration(doc, options);
    }
    catch (error) {
        if (error instanceof CalibrationError && !(error instanceof UnknownGroupError)) {
            throw new CalibrationError(`invalid calibration config: ${error.message}`);
        }
        throw error;
    }
}
/**
 * The agents' compaction rules: the parameters of each, with their defaults. `ruleLimit` gives the
 * count at which each compacts; calib replay judges the same rules.
 */
export const RULES = {
    "gemini-cli": { threshold: 0.5 }, // from 0.17.0
    "gemini-cli-0.16": { threshold: 0.2 }, // 0.12.0 to 0.16.x
    "gemini-cli-0.11": { threshold: 0.7 }, // up to 0.11.x
    dexto: { threshold: 0.9, max_context_tokens: null },
    opencode: { buffer: 20000, reserved: null },
    "opencode-2025": { output_token_max: 32000 },
    "opencode-2": { buffer: 20000, output_token_max: 32000 },
    "claude-code": { output_reserve: 20000, buffer: 13000 },
    "claude-code-early": { output_reserve: 20000, buffer: 25000 },
    codex: { fraction: 0.9, auto_compact_token_limit: null },
    "qwen-code": { threshold: 0.85, summary_reserve: 20000, buffer: 13000 },
    llxprt: { threshold: 0.85 },
    cline: { fraction: 0.9, input_share: 0.9 },
    "cline-legacy": {},
    "roo-code": { percent: 100, buffer_fraction: 0.1 },
    custom: { share: 0.9, reserve: null },
};
/** Rules that compact only above their limit (`>`); the others compact at it (`>=`). */
export const STRICT_RULES = new Set(["dexto", "opencode-2025", "roo-code"]);
/** cline-legacy: the margin below the window at which Cline 3.x truncates, for the windows it names. */
export const CLINE_LEGACY_MARGINS = new Map([
    [64000, 27000],
    [128000, 30000],
    [200000, 40000],
]);
// The agent a preset belongs to, for a tracker that names its tool but no rule.
const TOOL_RULES = new Map([
    ["gemini-cli", "gemini-cli"],
    ["dexto", "dexto"],
    ["opencode", "opencode-2"],
    ["claude-code", "claude-code"],
    ["codex", "codex"],
    ["qwen-code", "qwen-code"],
    ["llxprt", "llxprt"],
    ["cline", "cline"],
    ["roo-code", "roo-code"],
]);
/** The room a tracker keeps for the reply by default: min(DEFAULT_OUTPUT_RESERVE, window / 2). */
export const DEFAULT_OUTPUT_RESERVE = 20000;
/**
 * The online correction of the part estimated since the last report (gemini-cli's adaptive weight):
 * an exponential moving average of actual / estimated at this rate, kept within these bounds.
 */
export const CORRECTION_RATE = 0.2;
export const CORRECTION_BOUNDS = [0.5, 2.0];
function ruleNames() {
    return Object.keys(RULES).join(", ");
}
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
export function ruleLimit(name, params, context, maxOutput, inputLimit = null) {
    if (!has(RULES, name))
        throw new CalibrationError(`rule: unknown rule ${show(name)}; valid rules: ${ruleNames()}`);
    const p = { ...RULES[name], ...params };
    const value = (key) => p[key];
    const unset = (key) => p[key] === null || p[key] === undefined;
    const capped = inputLimit !== null && inputLimit !== undefined;
    if (name === "gemini-cli" || name === "gemini-cli-0.16" || name === "gemini-cli-0.11") {
        return value("threshold") * context;
    }
    if (name === "dexto") {
        const cap = unset("max_context_tokens") ? context : Math.min(context, value("max_context_tokens"));
        return Math.floor(cap * value("threshold"));
    }
    if (name === "opencode") {
        if (capped) {
            const reserved = unset("reserved") ? Math.min(value("buffer"), maxOutput) : value("reserved");
            return inputLimit - reserved;
        }
        return context - maxOutput;
    }
    if (name === "opencode-2025")
        return context - Math.min(maxOutput, value("output_token_max"));
    if (name === "opencode-2") {
        let usable = context - Math.max(Math.min(maxOutput, value("output_token_max")), value("buffer"));
        if (capped)
            usable = Math.min(usable, inputLimit - value("buffer"));
        return usable;
    }
    if (name === "claude-code" || name === "claude-code-early") {
        return context - Math.min(maxOutput, value("output_reserve")) - value("buffer");
    }
    if (name === "codex") {
        if (!unset("auto_compact_token_limit"))
            return value("auto_compact_token_limit");
        return Math.floor((capped ? inputLimit : context) * value("fraction"));
    }
    if (name === "qwen-code") {
        const ceiling = context - value("summary_reserve") - value("buffer");
        const proportional = value("threshold") * context;
        return ceiling > 0 ? Math.min(proportional, ceiling) : proportional;
    }
    if (name === "llxprt")
        return value("threshold") * (context - maxOutput);
    if (name === "cline") {
        const usable = capped ? Math.min(inputLimit, context) : value("input_share") * context;
        return value("fraction") * usable;
    }
    if (name === "cline-legacy") {
        const margin = CLINE_LEGACY_MARGINS.get(context);
        return margin !== undefined ? context - margin : Math.max(context - 40000, 0.8 * context);
    }
    if (name === "roo-code") {
        return Math.min((value("percent") / 100) * context, (1 - value("buffer_fraction")) * context - maxOutput);
    }
    const reserve = unset("reserve") ? maxOutput : value("reserve");
    return value("share") * (context - reserve);
}
// A rule's name and its parameters as given (`custom` when only parameters are). A key whose value is
// undefined is taken as absent; null is the unset value, allowed where the preset's default is null.
function ruleOf(rule, tool) {
    if (rule === null || rule === undefined) {
        const preset = TOOL_RULES.get(tool || "");
        return [preset !== undefined ? preset : "custom", {}];
    }
    if (typeof rule === "string") {
        if (!has(RULES, rule))
            throw new CalibrationError(`rule: unknown rule ${show(rule)}; valid rules: ${ruleNames()}`);
        return [rule, {}];
    }
    if (typeof rule !== "object" || Array.isArray(rule)) {
        throw new CalibrationError(`rule: expected a rule's name or an object, got ${show(rule)}`);
    }
    const given = rule;
    const name = has(given, "name") && given.name !== undefined ? given.name : "custom";
    if (typeof name !== "string" || !has(RULES, name)) {
        throw new CalibrationError(`rule.name: unknown rule ${show(name)}; valid rules: ${ruleNames()}`);
    }
    const preset = RULES[name];
    const params = {};
    for (const key of Object.keys(given)) {
        const value = given[key];
        if (key === "name" || value === undefined)
            continue;
        if (!has(preset, key)) {
            const known = Object.keys(preset).join(", ");
            throw new CalibrationError(`rule.${key}: the ${name} rule has no such parameter; it has ${known}`);
        }
        params[key] = value !== null || preset[key] !== null ? checkNumber(value, `rule.${key}`) : null;
    }
    return [name, params];
}
export const USAGE_CONVENTIONS = {
    anthropic: {
        style: "anthropic",
        prompt: ["input_tokens"],
        cacheRead: ["cache_read_input_tokens"],
        cacheWrite: ["cache_creation_input_tokens"],
        output: ["output_tokens"],
        reasoning: [],
    },
    openai: {
        style: "openai",
        prompt: ["prompt_tokens", "input_tokens"],
        cacheRead: ["prompt_tokens_details.cached_tokens", "input_tokens_details.cached_tokens"],
        cacheWrite: [],
        output: ["completion_tokens", "output_tokens"],
        reasoning: ["completion_tokens_details.reasoning_tokens", "output_tokens_details.reasoning_tokens"],
    },
    gemini: {
        style: "gemini",
        prompt: ["promptTokenCount"],
        cacheRead: ["cachedContentTokenCount"],
        cacheWrite: [],
        output: ["candidatesTokenCount"],
        reasoning: ["thoughtsTokenCount"],
    },
    "ai-sdk": {
        style: "openai",
        prompt: ["inputTokens"],
        cacheRead: ["cachedInputTokens"],
        cacheWrite: [],
        output: ["outputTokens"],
        reasoning: ["reasoningTokens"],
    },
};
const PROMPT_FIELDS = ["input_tokens", "prompt_tokens", "promptTokenCount", "inputTokens"];
/**
 * The convention of a usage object, told by its keys (`USAGE_CONVENTIONS`).
 *
 * Anthropic and the OpenAI Responses API both say `input_tokens`; Anthropic's cache fields, or
 * OpenAI's `*_details`, tell them apart. Without either, both conventions give the same counts.
 */
export function usageConvention(usage) {
    if (has(usage, "promptTokenCount"))
        return "gemini";
    if (has(usage, "inputTokens"))
        return "ai-sdk";
    if (has(usage, "prompt_tokens") || has(usage, "input_tokens_details") || has(usage, "output_tokens_details")) {
        return "openai";
    }
    if (has(usage, "input_tokens"))
        return "anthropic";
    throw new CalibrationError(`usage: no prompt count (expected one of ${PROMPT_FIELDS.join(", ")}), got ${show(usage)}`);
}
function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
}
// The first of `paths` that holds a value (not null), and the value.
function field(usage, paths) {
    for (const path of paths) {
        let value = usage;
        for (const key of path.split("."))
            value = isObject(value) && has(value, key) ? value[key] : undefined;
        if (value !== null && value !== undefined)
            return [path, value];
    }
    return [null, undefined];
}
function tokenCount(value, where) {
    if (typeof value !== "number" || Number.isNaN(value)) {
        throw new CalibrationError(`${where}: expected a token count, got ${show(value)}`);
    }
    if (value < 0 || value > MAX_COUNT || value !== Math.floor(value)) {
        throw new CalibrationError(`${where}: expected a whole number from 0 to ${MAX_COUNT}, got ${show(value)}`);
    }
    return value + 0; // -0 is 0, as Python's int(-0.0)
}
/**
 * A call's usage as calib's importers normalise it: `prompt` (the whole prompt, cached and uncached:
 * ctx), `output` (the visible output, which re-enters the next prompt), `reasoning`, `cacheRead`,
 * `cacheWrite`, and the `convention` and `style` read.
 *
 * A count that is absent or null is 0, but the prompt's, which is required; a count that is not a
 * whole number from 0 to MAX_COUNT is a CalibrationError naming its field.
 */
export function readUsage(usage, convention) {
    if (!isObject(usage))
        throw new CalibrationError(`usage: expected an object, got ${show(usage)}`);
    let name;
    if (convention === undefined || convention === null) {
        name = usageConvention(usage);
    }
    else if (typeof convention !== "string" || !has(USAGE_CONVENTIONS, convention)) {
        const valid = Object.keys(USAGE_CONVENTIONS).join(", ");
        throw new CalibrationError(`convention: unknown usage convention ${show(convention)}; valid: ${valid}`);
    }
    else {
        name = convention;
    }
    const table = USAGE_CONVENTIONS[name];
    const counts = { prompt: 0, cacheRead: 0, cacheWrite: 0, output: 0, reasoning: 0 };
    for (const key of ["prompt", "cacheRead", "cacheWrite", "output", "reasoning"]) {
        const [path, value] = field(usage, table[key]);
        if (path === null) {
            if (key === "prompt") {
                throw new CalibrationError(`usage.${table.prompt[0]}: missing (the prompt count of the ${name} convention)`);
            }
        }
        else {
            counts[key] = tokenCount(value, `usage.${path}`);
        }
    }
    let prompt = counts.prompt;
    let output = counts.output;
    if (table.style === "anthropic") {
        prompt += counts.cacheRead + counts.cacheWrite;
    }
    else if (table.style === "openai") {
        output = Math.max(0, output - counts.reasoning);
    }
    return {
        convention: name,
        style: table.style,
        prompt,
        output,
        reasoning: counts.reasoning,
        cacheRead: counts.cacheRead,
        cacheWrite: counts.cacheWrite,
    };
}
function size(value, name, low = 0) {
    if (typeof value !== "number" || Number.isNaN(value)) {
        throw new CalibrationError(`${name}: expected a number of tokens, got ${show(value)}`);
    }
    if (value < low || value > MAX_COUNT || value !== Math.floor(value)) {
        throw new CalibrationError(`${name}: expected a whole number from ${low} to ${MAX_COUNT}, got ${show(value)}`);
    }
    return value + 0; // -0 is 0, as Python's int(-0.0)
}
function checkText(value, name) {
    if (typeof value !== "string")
        throw new CalibrationError(`${name}: expected a text, got ${show(value)}`);
    return value;
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
export class Tracker {
    constructor(calibration, options) {
        this.system = null; // counted from the agent's texts (setStatic), else fitted
        this.tools = null;
        this.known = null; // reported: content + visible output + reasoning kept
        // unrounded estimates, rounded once where a total is made (as predictContext rounds its change):
        this.since = 0; // the change since the last report (appended minus pruned)
        this.messages = 0; // every message part in the context (what the estimated basis counts)
        this.kept = 0; // reported reasoning the policy keeps in the next prompt
        this.weight = 1;
        this.check = null;
        const given = options || {};
        this.calibration = calibration;
        this.provider = given.provider === undefined ? null : given.provider;
        this.model = given.model === undefined ? null : given.model;
        this.tool = given.tool === undefined ? null : given.tool;
        this.window = size(given.window, "window", 1);
        const reserve = given.outputReserve;
        this.outputReserve =
            reserve === undefined || reserve === null
                ? Math.min(DEFAULT_OUTPUT_RESERVE, Math.floor(this.window / 2))
                : size(reserve, "output_reserve");
        if (this.window <= this.outputReserve) {
            const reserved = this.outputReserve;
            throw new CalibrationError(`window: ${this.window} is not larger than the output reserve (${reserved})`);
        }
        const limit = given.inputLimit;
        this.inputLimit = limit === undefined || limit === null ? null : size(limit, "input_limit", 1);
        const reasoning = given.reasoning === undefined ? DEFAULT_REASONING : given.reasoning;
        if (!REASONING_POLICIES.includes(reasoning)) {
            throw new CalibrationError(`reasoning: unknown policy ${show(reasoning)}; valid policies: ${REASONING_POLICIES.join(", ")}`);
        }
        this.reasoning = reasoning;
        [this.rule, this.ruleParams] = ruleOf(given.rule, this.tool);
        this.threshold = ruleLimit(this.rule, this.ruleParams, this.window, this.outputReserve, this.inputLimit);
        this.correction = Boolean(given.correction);
        this.params = calibration.params(this.provider, this.model);
        this.fitted = roundCount(this.params.staticFor(this.tool));
    }
    // -- what the agent tells it --
    /**
     * The agent's system prompt and tool schemas (JSON text), counted instead of the fitted static
     * overhead. One left out (undefined or null) stays as it was.
     */
    setStatic(texts = {}) {
        const count = (kind, text) => this.calibration.countParts([[kind, text]], this.provider, this.model);
        const { system, tools } = texts;
        if (system !== undefined && system !== null)
            this.system = count("system", checkText(system, "system"));
        if (tools !== undefined && tools !== null)
            this.tools = count("tool_call", checkText(tools, "tools"));
    }
    /**
     * Parts added to the conversation (one message each, unless `messages` says how many); returns
     * their calibrated estimate.
     */
    append(parts, messages) {
        const [sum, nParts] = sumParts(this.calibration, parts, this.params);
        const nMessages = messages === undefined || messages === null ? nParts : checkCount(messages, "messages");
        const added = sum + this.params.messageOverhead * nMessages;
        this.changed(added);
        return roundSigned(added);
    }
    /**
     * Parts taken out of the conversation (pruned), each maybe replaced by a placeholder text (the
     * messages stay), and `tokens` known exactly (reported reasoning the agent drops). Returns the
     * estimated change (negative when the context shrinks).
     */
    remove(parts = [], placeholders = [], tokens = 0) {
        const [taken] = sumParts(this.calibration, parts, this.params);
        const [putBack] = sumParts(this.calibration, placeholders, this.params);
        const change = putBack - taken - checkCount(tokens, "tokens");
        this.changed(change);
        return roundSigned(change);
    }
    /**
     * The history was replaced by `summaryParts` (and whatever is appended next): the count is an
     * estimate again until the next report, and no reasoning is kept.
     */
    compacted(summaryParts = []) {
        this.known = null;
        this.since = 0;
        this.kept = 0;
        const [added, nParts] = sumParts(this.calibration, summaryParts, this.params);
        this.messages = added + this.params.messageOverhead * nParts;
    }
    /**
     * A call's reported usage (any of `USAGE_CONVENTIONS`, told by its keys unless named). Returns the
     * check of the estimate made for this call: estimated, actual, error, errorPct.
     */
    observe(usage, convention) {
        const counts = readUsage(usage, convention);
        return this.observed(counts.prompt, counts.output, counts.reasoning);
    }
    // -- what it tells the agent --
    /**
     * The context before the next call: `total` (the count to show and to compact on), `window`,
     * `outputReserve`, `percent` of the window, `free` (window - total - output reserve; negative when
     * over), `basis` ("reported" or "estimated"), `breakdown` (system, tools, messages and reasoning
     * adding up to total; `clamped` when messages were below zero and were set to 0, `fitted` naming
     * the parts that are the fitted static overhead, which system then holds whole), `sinceReport`,
     * `threshold`, `shouldCompact`, `lastCheck`, `reasoning`, `rule`, and `correction` (the weight
     * applied to sinceReport, null when off).
     */
    usage() {
        const total = this.total();
        return {
            total,
            window: this.window,
            outputReserve: this.outputReserve,
            percent: (total * 100) / this.window,
            free: this.window - total - this.outputReserve,
            basis: this.known === null ? "estimated" : "reported",
            breakdown: this.breakdown(total),
            sinceReport: roundSigned(this.since),
            threshold: this.threshold,
            shouldCompact: STRICT_RULES.has(this.rule) ? total > this.threshold : total >= this.threshold,
            lastCheck: this.check === null ? null : { ...this.check },
            reasoning: this.reasoning,
            rule: this.rule,
            correction: this.correction ? this.weight : null,
        };
    }
    // -- the arithmetic (in the order of the Python runtime's, operation by operation) --
    changed(tokens) {
        this.since += tokens;
        this.messages += tokens;
    }
    staticParts() {
        if (this.system === null && this.tools === null)
            return [this.fitted, 0, ["system", "tools"]];
        return [this.system || 0, this.tools || 0, []];
    }
    total() {
        if (this.known === null) {
            const [system, tools] = this.staticParts();
            return Math.max(0, system + tools + roundSigned(this.messages));
        }
        const since = this.correction ? this.since * this.weight : this.since;
        return Math.max(0, this.known + roundSigned(since));
    }
    breakdown(total) {
        const [systemCount, toolsCount, fitted] = this.staticParts();
        let system = systemCount;
        let tools = toolsCount;
        let reasoning = this.kept;
        let messages = total - system - tools - reasoning;
        const clamped = messages < 0;
        if (clamped) {
            // the estimated parts are larger than the total: shrink them until they fit
            let over = -messages;
            messages = 0;
            const cutTools = Math.min(tools, over);
            over -= cutTools;
            tools -= cutTools;
            const cutSystem = Math.min(system, over);
            over -= cutSystem;
            system -= cutSystem;
            reasoning -= Math.min(reasoning, over);
        }
        return { system, tools, messages, reasoning, clamped, fitted };
    }
    /**
     * A report: `prompt` the whole prompt of the call, `output` its visible output, `reasoning` its
     * reasoning tokens. The prompt holds the reasoning the policy kept; the next one holds the visible
     * output and the reasoning the policy keeps after this call.
     */
    observed(prompt, output, reasoning) {
        const estimated = this.total();
        if (this.correction && this.known !== null && roundSigned(this.since) > 0) { // not on float noise
            const ratio = (prompt - this.known) / this.since;
            const [low, high] = CORRECTION_BOUNDS;
            const weight = this.weight + CORRECTION_RATE * (ratio - this.weight);
            this.weight = Math.min(high, Math.max(low, weight));
        }
        let kept;
        if (this.reasoning === "include")
            kept = this.kept + reasoning;
        else if (this.reasoning === "strip-all-but-last")
            kept = reasoning;
        else
            kept = 0;
        const content = prompt - this.kept;
        this.known = content + output + kept;
        this.kept = kept;
        this.since = 0;
        const error = estimated - prompt;
        this.check = { estimated, actual: prompt, error, errorPct: prompt === 0 ? null : (error * 100) / prompt };
        return { ...this.check };
    }
}

// The shipped calib-runtime.mjs against the vectors calib.runtime wrote: every integer identical.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  CHAR_CLASSES,
  CalibrationError,
  DEFAULT_REASONING,
  MAX_COUNT,
  REASONING_POLICIES,
  RULES,
  SCHEMA_VERSION,
  SCHEMA_VERSIONS,
  STRICT_RULES,
  Tracker,
  USAGE_CONVENTIONS,
  UnknownGroupError,
  chars4,
  cjk,
  classCounts,
  load,
  normaliseModel,
  normaliseProvider,
  readUsage,
  ruleLimit,
  usageConvention,
  validate,
} from "../../calib/calib-runtime.mjs";
import { driver, snakeKeys } from "./vectors.mjs";

const vectors = JSON.parse(readFileSync(new URL("../conformance/runtime_vectors.json", import.meta.url), "utf8"));

const { texts, calibrations, asPart, trackerOf, runStep } = driver(vectors, load);

function where(vector) {
  return JSON.stringify({ ...vector, expect: undefined }).slice(0, 300);
}

test("the schema versions and the character classes are the Python runtime's", () => {
  assert.equal(vectors.schema_version, SCHEMA_VERSION);
  assert.deepEqual([...SCHEMA_VERSIONS], vectors.schema_versions);
  const versions = new Set(Object.values(vectors.configs).map((config) => config.schema_version));
  assert.deepEqual([...versions].sort(), [...SCHEMA_VERSIONS]);
  assert.deepEqual([...CHAR_CLASSES], ["letters", "digits", "whitespace", "punctuation", "cjk", "other"]);
});

test("base counts: chars4 by UTF-16 unit, cjk, and the character classes by code point", () => {
  assert.ok(vectors.bases.length > 50);
  for (const v of vectors.bases) {
    const text = texts[v.text];
    assert.equal(chars4(text), v.chars4, `chars4 of ${v.text}`);
    assert.equal(cjk(text), v.cjk, `cjk of ${v.text}`);
    assert.deepEqual(classCounts(text), v.class_counts, `class counts of ${v.text}`);
  }
});

test("names are normalised as in Python", () => {
  for (const v of vectors.names) {
    assert.equal(normaliseProvider(v.provider), v.provider_key, `provider ${JSON.stringify(v.provider)}`);
    assert.equal(normaliseModel(v.model), v.model_key, `model ${JSON.stringify(v.model)}`);
  }
});

test("the same level and base answer, and strict lookups fail with the same message", () => {
  for (const v of vectors.lookups) {
    const cal = calibrations[v.config];
    const params = cal.params(v.provider, v.model);
    assert.deepEqual([params.level, params.base], [v.level, v.base], where(v));
    if (v.strict_error === null) {
      assert.equal(cal.params(v.provider, v.model, { strict: true }).level, v.level, where(v));
    } else {
      assert.throws(
        () => cal.params(v.provider, v.model, { strict: true }),
        (error) => error instanceof UnknownGroupError && error.message === v.strict_error,
        where(v),
      );
    }
  }
});

test("missingCounters: the preferred bases no counter counts, as in Python", () => {
  assert.deepEqual(Object.keys(calibrations).sort(), vectors.missing_counters.map((v) => v.config).sort());
  for (const v of vectors.missing_counters) {
    assert.deepEqual(calibrations[v.config].missingCounters(), v.expect, v.config);
  }
});

test("count", () => {
  assert.ok(vectors.counts.length > 500);
  for (const v of vectors.counts) {
    assert.equal(calibrations[v.config].count(texts[v.text], v.provider, v.model, v.kind), v.expect, where(v));
  }
});

test("countParts, with parts as texts, pairs and objects", () => {
  for (const v of vectors.parts) {
    const got = calibrations[v.config].countParts(v.parts.map(asPart), v.provider, v.model, v.messages);
    assert.equal(got, v.expect, where(v));
  }
});

test("predictContext, with removals, placeholders and removed tokens", () => {
  for (const v of vectors.predictions) {
    const got = calibrations[v.config].predictContext(v.last_ctx, v.last_carry, v.new_parts.map(asPart), v.provider, v.model, {
      messages: v.messages,
      removed: v.removed.map(asPart),
      placeholders: v.placeholders.map(asPart),
      removedTokens: v.removed_tokens,
    });
    assert.equal(got, v.expect, where(v));
  }
});

test("estimateContext, with each agent's static overhead", () => {
  for (const v of vectors.estimates) {
    const got = calibrations[v.config].estimateContext(v.parts.map(asPart), v.provider, v.model, {
      messages: v.messages,
      tool: v.tool,
    });
    assert.equal(got, v.expect, where(v));
  }
});

test("broken configs are refused with the Python runtime's message", () => {
  assert.ok(vectors.errors.length > 20);
  for (const v of vectors.errors) {
    assert.throws(
      () => validate(v.config),
      (error) => error instanceof CalibrationError && error.message === v.message,
      `${v.case}: expected ${v.message}`,
    );
    assert.throws(
      () => load(v.config),
      (error) => error instanceof CalibrationError && error.message === `invalid calibration config: ${v.message}`,
      v.case,
    );
  }
});

test("config texts: nesting deeper than the runtimes read, and numbers only a text holds, as in Python", () => {
  assert.ok(vectors.documents.some((v) => v.message === null));
  for (const v of vectors.documents) {
    if (v.message === null) {
      assert.ok(load(v.text) instanceof Object, v.case);
    } else {
      assert.throws(
        () => load(v.text),
        (error) => error instanceof CalibrationError && error.message === v.message,
        `${v.case}: expected ${v.message}`,
      );
    }
  }
});

test("JSON text nested far deeper than the stack could parse is refused, not a RangeError", () => {
  const deep = "[".repeat(1_000_000) + "]".repeat(1_000_000);
  assert.throws(
    () => load(deep),
    (error) => error instanceof CalibrationError && error.message.startsWith("line 1: JSON nested deeper than 64"),
  );
  let value = 1;
  for (let i = 0; i < 100_000; i++) value = [value];
  const config = structuredClone(vectors.configs.chars4);
  config.default.ratios.tool = value;
  assert.throws(
    () => validate(config),
    (error) => error instanceof CalibrationError && error.message === "default.ratios.tool: expected a number, got [[[...]]]",
  );
});

test("counts passed in beyond 2**53 - 1 are refused, naming the argument", () => {
  const cal = load(vectors.configs.chars4);
  const range = `from -${MAX_COUNT} to ${MAX_COUNT}`;
  const cases = [
    [() => cal.countParts(["a"], null, null, 2 ** 53), `messages: expected a number ${range}, got 9007199254740992`],
    [() => cal.predictContext(Infinity, 0, ["a"]), `lastCtx: expected a number ${range}, got Infinity`],
    [() => cal.predictContext(0, NaN, ["a"]), `lastCarry: expected a number ${range}, got NaN`],
    [
      () => cal.predictContext(0, 0, ["a"], null, null, { removedTokens: 1e300 }),
      `removedTokens: expected a number ${range}, got 1e+300`,
    ],
    [
      () => cal.predictContext(0, 0, ["a"], null, null, { removed: ["a"], messages: -1e16 }),
      `messages: expected a number ${range}, got -10000000000000000`,
    ],
    [() => cal.estimateContext(["a"], null, null, { messages: "3" }), `messages: expected a number ${range}, got "3"`],
  ];
  for (const [call, message] of cases) {
    assert.throws(call, (error) => error instanceof CalibrationError && error.message === message, message);
  }
  assert.equal(cal.predictContext(MAX_COUNT, -MAX_COUNT, [], null, null, { removedTokens: -MAX_COUNT }), MAX_COUNT);
});

test("a counter passed in is held to the bounds of a count, never an Infinity returned", () => {
  const range = `from -${MAX_COUNT} to ${MAX_COUNT}`;
  const cases = [
    [Infinity, "Infinity"],
    [NaN, "NaN"],
    [1e300, "1e+300"],
    [2n ** 60n, "bigint"],
    ["3", '"3"'],
    [undefined, "null"],
  ];
  const calls = [
    (cal, provider) => cal.count("a", provider),
    (cal, provider) => cal.countParts(["a", "b"], provider),
    (cal, provider) => cal.predictContext(10, 0, [], provider, null, { removed: ["a"] }),
    (cal, provider) => cal.estimateContext(["a"], provider),
  ];
  for (const [count, shown] of cases) {
    // the counter of a version 1 config's own base, and a preferred base's counter passed in by name
    const words = load({ ...vectors.configs.chars4, base: "words" }, { baseCounter: () => count });
    const named = load({ ...vectors.configs.chars4, base: "words" }, { counters: { words: () => count } });
    const preferred = load(vectors.configs.v2_charclass, { counters: { "hf:vectors": () => count } });
    const weighted = load(vectors.configs.charclass, { classCounter: () => [1, 0, count, 0, 0, 0] });
    for (const [cal, name, provider] of [
      [words, "the counter of 'words'", "google"],
      [named, "the counter of 'words'", "google"],
      [preferred, "the counter of 'hf:vectors'", "anthropic"],
      [weighted, "classCounter", "google"],
    ]) {
      const message = `${name} returned ${shown}; expected a number ${range}`;
      for (const call of calls) {
        assert.throws(() => call(cal, provider), (error) => error instanceof CalibrationError && error.message === message, message);
      }
    }
    // the provider that prefers no base does not call it
    assert.ok(Number.isInteger(preferred.count("a", "zeta")));
  }
  // at the bound itself, with every parameter at its bound too, every estimate is a finite integer
  const largest = load({ ...vectors.configs.chars4_at_bounds, base: "words" }, { baseCounter: () => MAX_COUNT });
  for (const call of calls) assert.ok(Number.isInteger(call(largest, "google")));
  // a BigInt count within the bound counts as its number
  const [big, small] = [2n, 2].map((n) => load(vectors.configs.chars4, { baseCounter: () => n }));
  assert.equal(big.count("a", "zeta", "x"), small.count("a", "zeta", "x"));
});

test("a config given as JSON text loads, and text that is not JSON is refused", () => {
  const config = vectors.configs.chars4;
  assert.equal(load(JSON.stringify(config)).count("abcdefgh"), load(config).count("abcdefgh"));
  assert.throws(() => load("{not json"), (error) => error instanceof CalibrationError && error.message.startsWith("not valid JSON"));
});

test("a base this runtime cannot count needs a counter, and a counter passed in is used", () => {
  const config = { ...vectors.configs.chars4, base: "tiktoken:o200k_base" };
  assert.throws(
    () => load(config),
    (error) => error instanceof CalibrationError && error.message.includes('pass counters: { "tiktoken:o200k_base": count }'),
  );
  assert.throws(
    () => load({ ...config, base: "hf:gemma3" }),
    (error) => error instanceof CalibrationError && error.message.includes('pass counters: { "hf:gemma3": count }'),
  );
  const words = (text) => text.split(/\s+/).filter(Boolean).length;
  // a version 1 config's own base: baseCounter, or its counter by name (a Map too); baseCounter wins
  for (const options of [
    { baseCounter: words },
    { counters: { "tiktoken:o200k_base": words } },
    { counters: new Map([["tiktoken:o200k_base", words]]) },
    { counters: { "tiktoken:o200k_base": () => 1e6 }, baseCounter: words },
  ]) {
    const cal = load(config, options);
    const params = cal.params("zeta", "x");
    assert.equal(params.base, "tiktoken:o200k_base");
    const expected = Math.floor(params.ratios.get("user") * 3 + 0.5);
    assert.equal(cal.count("one two three", "zeta", "x"), expected);
    assert.deepEqual(cal.missingCounters(), []);
  }
});

test("preferred bases: a counter by name answers, none computed here but chars4 and cjk, the fallback else", () => {
  const config = vectors.configs.v2_chars4;
  const words = (text) => text.split(/\s+/).filter(Boolean).length;
  const alone = load(config);
  assert.deepEqual(alone.missingCounters(), ["hf:points", "hf:vectors"]);
  assert.equal(alone.params("anthropic", "claude-sonnet-4-5").base, "chars4");
  assert.equal(alone.params("openai", "gpt-5").base, "cjk"); // built in
  // a tokenizer named like tiktoken is not computed here: only a counter passed in counts it
  const tiktoken = load({
    ...config,
    providers: { ...config.providers, zeta: { ...config.providers.zeta, preferred: { ...config.providers.anthropic.preferred, base: "tiktoken:o200k_base" } } },
  });
  assert.deepEqual(tiktoken.missingCounters(), ["hf:points", "hf:vectors", "tiktoken:o200k_base"]);
  assert.equal(tiktoken.params("zeta").base, "chars4");
  const cal = load(config, { counters: new Map([["hf:vectors", words]]) });
  assert.deepEqual(cal.missingCounters(), ["hf:points"]);
  const params = cal.params("anthropic", "claude-sonnet-4-5");
  assert.deepEqual([params.level, params.base], ["anthropic/claude-sonnet-4-5", "hf:vectors"]);
  assert.equal(cal.count("one two three", "anthropic", "claude-sonnet-4-5"), Math.floor(params.ratios.get("user") * 3 + 0.5));
  assert.equal(cal.baseTokens("one two three", params), 3);
  assert.equal(cal.baseTokens("one two three"), 3); // the default: the config's own base, chars4
  // a counter that is not a function is refused when the config loads, naming its base
  for (const [counter, shown] of [[42, "42"], [null, "null"], ["words", '"words"']]) {
    const message = `invalid calibration config: the counter of 'hf:vectors' is not a function: ${shown}`;
    assert.throws(
      () => load(config, { counters: { "hf:vectors": counter } }),
      (error) => error instanceof CalibrationError && error.message === message,
      message,
    );
  }
});

// -- the context accountant (options and results under Python's names: vectors.mjs)

test("the tracker's tables are the Python runtime's, in its order", () => {
  const tables = vectors.tracker_tables;
  assert.deepStrictEqual(RULES, tables.rules);
  assert.deepEqual(Object.keys(RULES), tables.rule_names);
  for (const name of Object.keys(RULES)) assert.deepEqual(Object.keys(RULES[name]), tables.rule_order[name], name);
  assert.deepEqual([...STRICT_RULES].sort(), tables.strict_rules);
  assert.deepEqual([...REASONING_POLICIES], tables.reasoning_policies);
  assert.equal(DEFAULT_REASONING, tables.default_reasoning);
  assert.deepStrictEqual(snakeKeys(USAGE_CONVENTIONS), tables.usage_conventions);
  assert.deepEqual(Object.keys(USAGE_CONVENTIONS), tables.usage_convention_names);
});

test("ruleLimit: every preset on each window, with its defaults and with parameters given", () => {
  assert.ok(vectors.rule_limits.length > 100);
  for (const v of vectors.rule_limits) {
    const got = ruleLimit(v.rule, v.params, v.context, v.max_output, v.input_limit);
    assert.equal(got, v.expect, JSON.stringify({ ...v, expect: undefined }));
  }
  assert.throws(
    () => ruleLimit("gemini", {}, 1000, 100),
    (error) => error instanceof CalibrationError && error.message.startsWith('rule: unknown rule "gemini"; valid rules: gemini-cli, gemini-cli-0.16, gemini-cli-0.11, dexto'),
  );
});

test("readUsage: each convention's counts, told by the keys or named, and the same errors", () => {
  for (const v of vectors.usages) {
    const label = JSON.stringify({ usage: v.usage, convention: v.convention });
    if (v.error === null) {
      assert.deepStrictEqual(snakeKeys(readUsage(v.usage, v.convention)), v.expect, label);
      if (v.convention === null) assert.equal(usageConvention(v.usage), v.expect.convention, label);
    } else {
      assert.throws(
        () => readUsage(v.usage, v.convention),
        (error) => error instanceof CalibrationError && error.message === v.error,
        `${label}: expected ${v.error}`,
      );
    }
  }
});

test("Tracker: every scripted conversation gives the Python runtime's usage() after each step", () => {
  let steps = 0;
  for (const v of vectors.trackers) {
    if (v.error !== null) {
      assert.throws(
        () => trackerOf(v),
        (error) => error instanceof CalibrationError && error.message === v.error,
        `${v.case}: expected ${v.error}`,
      );
      continue;
    }
    const tracker = trackerOf(v);
    assert.ok(tracker instanceof Tracker);
    v.steps.forEach((step, i) => {
      const { after, returns: expected, error: raised, ...call } = step;
      const where = `${v.case}, step ${i}: ${JSON.stringify(call).slice(0, 240)}`;
      let returns = null;
      let error = null;
      try {
        returns = runStep(tracker, step);
      } catch (caught) {
        if (!(caught instanceof CalibrationError)) throw caught;
        error = caught.message;
      }
      assert.deepStrictEqual({ returns, error }, { returns: expected, error: raised }, where);
      assert.deepStrictEqual(snakeKeys(tracker.usage()), after, where);
      steps++;
    });
  }
  assert.ok(steps >= 250, `${steps} steps`);
});

test("Tracker: options undefined take their defaults; a rule parameter undefined is absent", () => {
  const cal = calibrations.chars4;
  const plain = cal.tracker({ provider: "zeta", window: 1000 }).usage();
  const spelled = cal.tracker({
    provider: "zeta",
    model: undefined,
    window: 1000,
    outputReserve: undefined,
    inputLimit: undefined,
    rule: undefined,
    reasoning: undefined,
    tool: undefined,
    correction: undefined,
  });
  assert.deepStrictEqual(spelled.usage(), plain);
  const rule = cal.tracker({ provider: "zeta", window: 1000, rule: { name: "gemini-cli", threshold: undefined } });
  assert.equal(rule.threshold, 500);
  assert.throws(
    () => cal.tracker(undefined),
    (error) => error instanceof CalibrationError && error.message === "window: expected a number of tokens, got null",
  );
});

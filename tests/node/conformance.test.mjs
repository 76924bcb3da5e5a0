// The shipped calib-runtime.mjs against the vectors calib.runtime wrote: every integer identical.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  CHAR_CLASSES,
  CalibrationError,
  MAX_COUNT,
  UnknownGroupError,
  chars4,
  cjk,
  classCounts,
  load,
  normaliseModel,
  normaliseProvider,
  validate,
} from "../../calib/calib-runtime.mjs";

const vectors = JSON.parse(readFileSync(new URL("../conformance/runtime_vectors.json", import.meta.url), "utf8"));

const texts = {};
for (const [name, spec] of Object.entries(vectors.texts)) {
  texts[name] = typeof spec === "string" ? spec : spec.repeat.repeat(spec.times);
}
const calibrations = {};
for (const [name, config] of Object.entries(vectors.configs)) calibrations[name] = load(config);

function asPart(part) {
  const text = texts[part.text];
  if (part.form === "text") return text;
  if (part.form === "pair") return [part.kind, text];
  return { text, kind: part.kind };
}

function where(vector) {
  return JSON.stringify({ ...vector, expect: undefined }).slice(0, 300);
}

test("the schema version and the character classes are the Python runtime's", () => {
  assert.equal(vectors.schema_version, 1);
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

test("the same level answers, and strict lookups fail with the same message", () => {
  for (const v of vectors.lookups) {
    const cal = calibrations[v.config];
    assert.equal(cal.params(v.provider, v.model).level, v.level, where(v));
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
    (cal) => cal.count("a", "google"),
    (cal) => cal.countParts(["a", "b"], "google"),
    (cal) => cal.predictContext(10, 0, [], "google", null, { removed: ["a"] }),
    (cal) => cal.estimateContext(["a"], "google"),
  ];
  for (const [count, shown] of cases) {
    const words = load({ ...vectors.configs.chars4, base: "words" }, { baseCounter: () => count });
    const weighted = load(vectors.configs.charclass, { classCounter: () => [1, 0, count, 0, 0, 0] });
    for (const [cal, name] of [[words, "baseCounter"], [weighted, "classCounter"]]) {
      const message = `${name} returned ${shown}; expected a number ${range}`;
      for (const call of calls) {
        assert.throws(() => call(cal), (error) => error instanceof CalibrationError && error.message === message, message);
      }
    }
  }
  // at the bound itself, with every parameter at its bound too, every estimate is a finite integer
  const largest = load({ ...vectors.configs.chars4_at_bounds, base: "words" }, { baseCounter: () => MAX_COUNT });
  for (const call of calls) assert.ok(Number.isInteger(call(largest)));
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
  assert.throws(() => load(config), (error) => error instanceof CalibrationError && /pass baseCounter/.test(error.message));
  const words = (text) => text.split(/\s+/).filter(Boolean).length;
  const cal = load(config, { baseCounter: words });
  const params = cal.params("zeta", "x");
  const expected = Math.floor(params.ratios.get("user") * 3 + 0.5);
  assert.equal(cal.count("one two three", "zeta", "x"), expected);
});

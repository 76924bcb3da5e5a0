// The shipped calib-runtime.mjs against the vectors calib.runtime wrote: every integer identical.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  CHAR_CLASSES,
  CalibrationError,
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

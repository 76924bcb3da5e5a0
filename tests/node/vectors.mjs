// How a build of the runtime is driven by the conformance vectors (tests/conformance/runtime_vectors.json,
// written by calib.runtime): their texts, the counters they name, every load of their configs, parts,
// and the tracker's scripted steps. It imports no build: conformance.test.mjs passes the shipped
// calib-runtime.mjs, and package.test.mjs copies this file into a scratch project to drive the
// installed npm package.
//
// The vectors hold Python's names (snake_case); the TypeScript runtime's options and results are
// camelCase. Options go in under their TypeScript names, and what comes back is compared with every key
// turned to snake_case (values, such as breakdown.fitted, stay as they are).

// The counters the vector file names (`counters`: a preferred base's tokenizer), by definition.
export const COUNTERS = {
  // UTF-8 bytes by code point; a lone surrogate takes 3 (as U+FFFD, or Python's surrogatepass)
  utf8_bytes: (text) => {
    let bytes = 0;
    for (const char of text) {
      const point = char.codePointAt(0);
      bytes += point < 0x80 ? 1 : point < 0x800 ? 2 : point < 0x10000 ? 3 : 4;
    }
    return bytes;
  },
  code_points: (text) => Array.from(text).length,
};

export function snakeKeys(value) {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (value === null || typeof value !== "object") return value;
  const out = {};
  for (const [key, item] of Object.entries(value)) out[key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = snakeKeys(item);
  return out;
}

export function camelKey(key) {
  return key.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
}

// The vectors read for one build: `load` is that build's, and every load of the file is made with it.
export function driver(vectors, load) {
  const texts = {};
  for (const [name, spec] of Object.entries(vectors.texts)) {
    texts[name] = typeof spec === "string" ? spec : spec.repeat.repeat(spec.times);
  }
  const countersOf = (names) => {
    const counters = {};
    for (const name of names) counters[name] = COUNTERS[vectors.counters[name]];
    return counters;
  };
  // Every load of the file: its config, with the counters it names passed in by name.
  const calibrations = {};
  for (const [name, spec] of Object.entries(vectors.loads)) {
    calibrations[name] = load(vectors.configs[spec.config], { counters: countersOf(spec.counters) });
  }
  const asPart = (part) => {
    const text = texts[part.text];
    if (part.form === "text") return text;
    if (part.form === "pair") return [part.kind, text];
    return { text, kind: part.kind };
  };
  const textArg = (value) => {
    if (typeof value === "string") return texts[value];
    return value !== null && typeof value === "object" ? value.value : value;
  };
  const trackerOf = (v) => {
    const options = {};
    for (const [key, value] of Object.entries(v.options)) options[camelKey(key)] = value;
    return calibrations[v.config].tracker(options);
  };
  // One step as the TypeScript runtime takes it: what it returns, Python's names for its keys. An
  // argument the step leaves out is left out of the call.
  const runStep = (tracker, step) => {
    const given = (key, map = (x) => x) => (key in step ? map(step[key]) : undefined);
    const parts = (items) => items.map(asPart);
    switch (step.do) {
      case "usage":
        return null;
      case "set_static": {
        const statics = {};
        for (const key of ["system", "tools"]) if (key in step) statics[key] = textArg(step[key]);
        tracker.setStatic(statics);
        return null;
      }
      case "append":
        return "messages" in step ? tracker.append(parts(step.parts), step.messages) : tracker.append(parts(step.parts));
      case "remove":
        return tracker.remove(given("parts", parts), given("placeholders", parts), given("tokens"));
      case "compacted":
        tracker.compacted(given("parts", parts));
        return null;
      case "observe":
        return snakeKeys(tracker.observe(step.usage, given("convention")));
      default:
        throw new Error(`unknown step ${step.do}`);
    }
  };
  return { texts, calibrations, asPart, trackerOf, runStep };
}

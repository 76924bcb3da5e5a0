// The calib-runtime npm package as a user gets it: packed (package.mjs, after npm test's build) into a
// temporary folder, installed from the tarball into a scratch project with no network, then imported by
// its name from plain JavaScript, which must give the conformance vectors' numbers, and from
// TypeScript, which must find its types under Node16 and bundler resolution.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { NAME, manifest, npmEnv, pack } from "./package.mjs";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const VECTORS = here("../conformance/runtime_vectors.json");
const TSC = here("node_modules/typescript/bin/tsc");
const SHIPS = ["README.md", "package.json", "runtime.d.ts", "runtime.js"];

const vectors = JSON.parse(readFileSync(VECTORS, "utf8"));
// A few of each kind of vector, spread over the configs (every load of them, counters passed in or not),
// and the first scripted conversations, which between them take every step a tracker has.
const SELECTION = {
  counts: vectors.counts.map((_, i) => i).filter((i) => i % 97 === 0),
  predictions: vectors.predictions.map((_, i) => i).filter((i) => i % 37 === 0),
  estimates: vectors.estimates.map((_, i) => i).filter((i) => i % 40 === 0),
  trackers: [0, 1, 2, 3, 4],
};

// What a user of the package writes in plain JavaScript, importing it by name. It reads the vectors'
// configs and inputs (never their expected values) and prints what the package makes of them; options
// and results are compared under Python's names, as conformance.test.mjs does.
const SCRIPT = `
import { readFileSync } from "node:fs";
import { CalibrationError, Tracker, load } from "calib-runtime";
import { driver, snakeKeys } from "./vectors.mjs";

const vectors = JSON.parse(readFileSync(process.argv[2], "utf8"));
const selection = JSON.parse(process.argv[3]);
const { texts, calibrations, asPart, trackerOf, runStep } = driver(vectors, load);
const calibration = (name) => calibrations[name];
const parts = (items) => items.map(asPart);

const results = {
  counts: selection.counts.map((i) => {
    const v = vectors.counts[i];
    return calibration(v.config).count(texts[v.text], v.provider, v.model, v.kind);
  }),
  predictions: selection.predictions.map((i) => {
    const v = vectors.predictions[i];
    return calibration(v.config).predictContext(v.last_ctx, v.last_carry, parts(v.new_parts), v.provider, v.model, {
      messages: v.messages,
      removed: parts(v.removed),
      placeholders: parts(v.placeholders),
      removedTokens: v.removed_tokens,
    });
  }),
  estimates: selection.estimates.map((i) => {
    const v = vectors.estimates[i];
    return calibration(v.config).estimateContext(parts(v.parts), v.provider, v.model, { messages: v.messages, tool: v.tool });
  }),
  trackers: selection.trackers.map((i) => {
    const v = vectors.trackers[i];
    const tracker = trackerOf(v);
    if (!(tracker instanceof Tracker)) throw new Error("not a Tracker");
    return v.steps.map((s) => {
      let returns = null;
      let error = null;
      try {
        returns = runStep(tracker, s);
      } catch (caught) {
        if (!(caught instanceof CalibrationError)) throw caught;
        error = caught.message;
      }
      return { returns, error, after: snakeKeys(tracker.usage()) };
    });
  }),
};
console.log(JSON.stringify(results));
`;

// What a user of the package writes in TypeScript: every name from the package, typed.
const CONSUMER = `
import {
  type CalibrationConfig,
  type LoadOptions,
  type Part,
  type TrackerOptions,
  type TrackerUsage,
  type UsageCheck,
  Calibration,
  CalibrationError,
  Tracker,
  load,
} from "calib-runtime";

declare const config: CalibrationConfig;
const options: LoadOptions = { counters: { "hf:gemma3": (text: string) => text.length } };
const cal: Calibration = load(config, options);
const parts: Part[] = ["text", ["tool_result", "output"], { text: "prompt", kind: "user_text" }];
const shown: number = cal.predictContext(1000, 20, parts, "google", "gemini-2.5-pro", { removed: ["old"], placeholders: ["[pruned]"] });
const missing: string[] = cal.missingCounters();
const trackerOptions: TrackerOptions = { provider: "anthropic", model: "claude-sonnet-4-5", window: 200_000, tool: "claude-code" };
const tracker: Tracker = cal.tracker(trackerOptions);
tracker.append(parts);
const check: UsageCheck = tracker.observe({ input_tokens: 900, output_tokens: 40 });
const view: TrackerUsage = tracker.usage();
const compact: boolean = view.shouldCompact;
const refused: boolean = new CalibrationError("x") instanceof Error;
export const used = [shown, missing, check.errorPct, view.breakdown.messages, compact, refused];
`;

// The same package misused: the compiler must say so, or the check above proves nothing.
const MISUSE = `
import { load } from "calib-runtime";
export const level: number = load("{}").params("openai", "gpt-5").level;
`;

const COMPILER_OPTIONS = { target: "ES2020", lib: ["ES2020"], types: [], strict: true, noEmit: true };

let packDir;
let projectDir;
let packed;

before(() => {
  packDir = mkdtempSync(join(tmpdir(), "calib-runtime-pack-"));
  projectDir = mkdtempSync(join(tmpdir(), "calib-runtime-user-"));
  packed = pack(join(packDir, "package"), join(packDir, "dist"));
  const write = (name, text) => writeFileSync(join(projectDir, name), text);
  write("package.json", JSON.stringify({ name: "scratch", private: true, type: "module" }, null, 2));
  execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error", packed.tarball], {
    cwd: projectDir,
    env: npmEnv(),
    stdio: ["ignore", "ignore", "inherit"],
  });
  write("check.mjs", SCRIPT);
  write("vectors.mjs", readFileSync(here("vectors.mjs"), "utf8"));  // the scratch project's copy
  write("consumer.mts", CONSUMER);
  write("misuse.mts", MISUSE);
  const tsconfig = (name, files, options) =>
    write(name, JSON.stringify({ compilerOptions: { ...COMPILER_OPTIONS, ...options }, files }, null, 2));
  tsconfig("tsconfig.node16.json", ["consumer.mts"], { module: "Node16", moduleResolution: "Node16" });
  tsconfig("tsconfig.bundler.json", ["consumer.mts"], { module: "ESNext", moduleResolution: "bundler" });
  tsconfig("tsconfig.misuse.json", ["misuse.mts"], { module: "Node16", moduleResolution: "Node16" });
});

after(() => {
  for (const dir of [packDir, projectDir]) if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the tarball holds the build, the manifest and the README, nothing else", () => {
  assert.match(packed.tarball, new RegExp(`${NAME}-${manifest().version.replace(/\./g, "\\.")}\\.tgz$`));
  assert.deepEqual(packed.files, SHIPS);
  const installed = join(projectDir, "node_modules", NAME);
  assert.deepEqual(readdirSync(installed).sort(), SHIPS);
  // the compiler's output, unchanged
  assert.equal(readFileSync(join(installed, "runtime.js"), "utf8"), readFileSync(here("build/runtime.js"), "utf8"));
  assert.equal(readFileSync(join(installed, "runtime.d.ts"), "utf8"), readFileSync(here("build/runtime.d.ts"), "utf8"));
});

test("the installed manifest: its name, version, ESM entry points with types first, and no dependencies", () => {
  const installed = JSON.parse(readFileSync(join(projectDir, "node_modules", NAME, "package.json"), "utf8"));
  assert.equal(installed.name, "calib-runtime");
  assert.equal(installed.version, manifest().version);
  assert.equal(installed.type, "module");
  assert.deepStrictEqual(installed.exports, {
    ".": { types: "./runtime.d.ts", default: "./runtime.js" },
    "./package.json": "./package.json",
  });
  assert.deepEqual(Object.keys(installed.exports["."]), ["types", "default"]);
  assert.equal(installed.main, "./runtime.js");
  assert.equal(installed.types, "./runtime.d.ts");
  assert.equal(installed.sideEffects, false);
  assert.equal(installed.license, "MIT");
  assert.deepStrictEqual(installed.engines, { node: ">=18" });
  for (const key of Object.keys(installed)) assert.doesNotMatch(key, /dependencies$/i, `${key} in the manifest`);
});

test("imported by name from plain JavaScript, it gives the conformance vectors' numbers", () => {
  const stdout = execFileSync(process.execPath, ["check.mjs", VECTORS, JSON.stringify(SELECTION)], {
    cwd: projectDir,
    encoding: "utf8",
  });
  const got = JSON.parse(stdout);
  for (const kind of ["counts", "predictions", "estimates"]) {
    assert.ok(SELECTION[kind].length >= 5, kind);
    assert.deepStrictEqual(got[kind], SELECTION[kind].map((i) => vectors[kind][i].expect), kind);
  }
  SELECTION.trackers.forEach((i, n) => {
    const v = vectors.trackers[i];
    assert.equal(v.error, null, v.case);
    const expected = v.steps.map((s) => ({ returns: s.returns, error: s.error, after: s.after }));
    assert.deepStrictEqual(got.trackers[n], expected, v.case);
  });
  const steps = new Set(SELECTION.trackers.flatMap((i) => vectors.trackers[i].steps.map((s) => s.do)));
  assert.deepEqual([...steps].sort(), ["append", "compacted", "observe", "remove", "set_static", "usage"]);
});

test("TypeScript finds the package's types under Node16 and bundler resolution, and reports a misuse", async () => {
  const tsc = (config) =>
    promisify(execFile)(process.execPath, [TSC, "-p", join(projectDir, config), "--pretty", "false"], { cwd: projectDir }).then(
      () => ({ code: 0, stdout: "" }),
      (error) => ({ code: error.code, stdout: `${error.stdout}${error.stderr}` }),
    );
  const [node16, bundler, misuse] = await Promise.all(
    ["tsconfig.node16.json", "tsconfig.bundler.json", "tsconfig.misuse.json"].map(tsc),
  );
  assert.deepStrictEqual(node16, { code: 0, stdout: "" }, node16.stdout);
  assert.deepStrictEqual(bundler, { code: 0, stdout: "" }, bundler.stdout);
  assert.notEqual(misuse.code, 0);
  assert.match(misuse.stdout, /misuse\.mts\(3,14\): error TS2322: Type 'string' is not assignable to type 'number'/);
  assert.equal(misuse.stdout.trim().split("\n").length, 1, misuse.stdout);
});

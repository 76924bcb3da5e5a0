// The calib-runtime npm package: the TypeScript build (npm run build) and calib/runtime-npm's manifest
// and README, assembled in a folder of their own and packed there. `node package.mjs [OUT] [DEST]`
// (npm run pack-runtime builds first; make runtime-npm) assembles in OUT, default build/npm/calib-runtime
// at the top of the repository, and leaves the tarball in DEST, default dist/ there. package.test.mjs
// packs into temporary folders and installs the result.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { basename, isAbsolute, join, parse, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

export const NAME = "calib-runtime";
export const REPO = here("../..");
export const MANIFEST = here("../../calib/runtime-npm/package.json");
/** What goes into the package folder: the compiler's output and the package's own manifest and README. */
export const INPUTS = [
  here("build/runtime.js"),
  here("build/runtime.d.ts"),
  MANIFEST,
  here("../../calib/runtime-npm/README.md"),
];
export const DEFAULT_OUT = join(REPO, "build", "npm", NAME);
export const DEFAULT_DEST = join(REPO, "dist");

/** The manifest as the repository holds it. */
export function manifest() {
  return JSON.parse(readFileSync(MANIFEST, "utf8"));
}

/**
 * The environment for an npm started from inside an npm script: without what the outer npm set for its
 * own project (its folder as the local prefix, its log level, its package's fields), so the inner one
 * works on the folder it is started in and prints what it is asked for.
 */
export function npmEnv(env = process.env) {
  const clean = {};
  for (const [key, value] of Object.entries(env)) {
    const lower = key.toLowerCase();
    if (lower === "npm_config_local_prefix" || lower === "npm_config_loglevel") continue;
    if (lower.startsWith("npm_package_") || lower.startsWith("npm_lifecycle_") || lower === "npm_command") continue;
    clean[key] = value;
  }
  return clean;
}

// The output folder is wiped: only when it is absent, empty, or an earlier assembly of this package, and
// never the repository, a folder above it, or a filesystem root.
function checkWipeable(out) {
  const up = relative(out, REPO);
  if (out === parse(out).root || up === "" || !(up.startsWith("..") || isAbsolute(up))) {
    throw new Error(`refusing to wipe ${out}: it holds the repository or is a root`);
  }
  if (!existsSync(out) || readdirSync(out).length === 0) return;
  const previous = join(out, "package.json");
  let name = null;
  try {
    name = JSON.parse(readFileSync(previous, "utf8")).name;
  } catch {
    // not a package folder
  }
  if (name !== NAME) throw new Error(`refusing to wipe ${out}: not empty and not an assembled ${NAME}`);
}

/** Wipes OUT and copies the package's files into it; returns their names. */
export function assemble(out = DEFAULT_OUT) {
  out = resolve(out);
  for (const input of INPUTS) {
    if (!existsSync(input)) throw new Error(`${input} is missing: run npm run build in tests/node first`);
  }
  checkWipeable(out);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  for (const input of INPUTS) copyFileSync(input, join(out, basename(input)));
  return INPUTS.map((input) => basename(input));
}

/**
 * Assembles the package in OUT and packs it into DEST. Returns the tarball's path, its size and the
 * files in it as npm pack lists them (paths inside the package, sorted).
 */
export function pack(out = DEFAULT_OUT, dest = DEFAULT_DEST) {
  out = resolve(out);
  dest = resolve(dest);
  assemble(out);
  mkdirSync(dest, { recursive: true });
  const stdout = execFileSync("npm", ["pack", "--json", "--pack-destination", dest], {
    cwd: out,
    env: npmEnv(),
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [packed] = JSON.parse(stdout);
  return {
    tarball: join(dest, packed.filename),
    size: packed.size,
    files: packed.files.map((file) => file.path).sort(),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [out, dest] = process.argv.slice(2);
  console.log(pack(out || DEFAULT_OUT, dest || DEFAULT_DEST).tarball);
}

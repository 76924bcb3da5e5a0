// What calib ships of the TypeScript build: build output -> the package's copy. `node shipped.mjs`
// (npm run ship, after npm run build) writes the copies; build.test.mjs fails when they drift.
import { copyFileSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

export const SHIPPED = [
  { built: here("build/runtime.js"), shipped: here("../../calib/calib-runtime.mjs") },
  { built: here("build/runtime.d.ts"), shipped: here("../../calib/calib-runtime.d.mts") },
];

export function read(path) {
  return readFileSync(path, "utf8");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const { built, shipped } of SHIPPED) {
    copyFileSync(built, shipped);
    console.log(`wrote ${shipped}`);
  }
}

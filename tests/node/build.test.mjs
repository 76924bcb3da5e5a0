// The JavaScript calib ships is exactly what the pinned TypeScript compiler makes of calib/runtime.ts
// (npm test builds first). On a failure: cd tests/node && npm run ship, and commit the copies.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SHIPPED, read } from "./shipped.mjs";

for (const { built, shipped } of SHIPPED) {
  test(`${shipped.split("/").pop()} is the build of runtime.ts`, () => {
    assert.equal(read(shipped), read(built), `${shipped} drifted from the build: run npm run ship in tests/node`);
  });
}

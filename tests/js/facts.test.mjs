// Facts the package's JavaScript keeps a copy of (it loads no wasm where it makes its own
// errors), checked against the engine's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { errorKinds } from "agentwire";
// The module's own export (the package has loaded it: importing "agentwire" did).
import { retryableKinds } from "../../npm/dist/wasm/agentwire_wasm.js";
import { agentwireError } from "../../npm/dist/errors.js";

test("an error the package makes is retryable exactly when the engine's of that kind is", () => {
  const mine = errorKinds().filter((kind) => agentwireError(kind, "m").retryable);
  assert.deepEqual(mine.sort(), retryableKinds().sort());
  assert.ok(mine.length > 0);
});

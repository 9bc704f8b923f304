// A Web Worker as webpack builds it for `target: "webworker"` (bundlers.test.mjs): it imports
// `agentwire/rkt`, whose wasm webpack emits as an asset, and posts the outcome of a round trip to
// the RKT server its own URL names (`?rkt=<url>`: a message sent to it could come before the
// module, which awaits the wasm, has set `onmessage`).
import { AgentwireError, RktClient } from "agentwire/rkt";

async function run() {
  const client = await RktClient.connect(new URLSearchParams(self.location.search).get("rkt"), { timeoutMs: 5000 });
  try {
    const now = await client.request("weather.current", { city: "Seoul" });
    let refused;
    try {
      await client.request("", {});
    } catch (e) {
      refused = e instanceof AgentwireError ? e.kind : String(e);
    }
    return { temperature: now.data.temperature, refused };
  } finally {
    await client.close();
  }
}

run().then(
  (ok) => self.postMessage({ ok }),
  (e) => self.postMessage({ error: String(e?.stack ?? e) }),
);

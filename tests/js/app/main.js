// An app as a bundler (Vite, webpack) builds it: it imports `agentwire/rkt` and `agentwire` from
// node_modules, and the bundler emits their wasm as assets. `?rkt=<url>`: the RKT server to ask.
// The outcome is `window.result`.
import { AgentwireError, RktClient, rktDecode } from "agentwire/rkt";
import { errorKinds, MoltZapSession } from "agentwire";

async function run() {
  const ping = rktDecode("RKT/1.0 PING\nVersion: 1\nMessage-ID: a\nSession-ID: b\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 5\n");
  const client = await RktClient.connect(new URLSearchParams(location.search).get("rkt"), { timeoutMs: 5000 });
  try {
    const now = await client.request("weather.current", { city: "Seoul" });
    let refused;
    try {
      await client.request("", {});
    } catch (e) {
      refused = e instanceof AgentwireError ? e.kind : String(e);
    }
    return { ping: ping.type, temperature: now.data.temperature, refused, kinds: errorKinds().length, session: typeof new MoltZapSession().pollEvent };
  } finally {
    await client.close();
  }
}

window.result = run().then(
  (ok) => ({ ok }),
  (e) => ({ error: String(e?.stack ?? e) }),
);

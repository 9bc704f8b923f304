// RKT from Node 22+ (global WebSocket): a request, a stream, memory, errors.
// Run: node examples/rkt.mjs ws://127.0.0.1:7749/rkt   (the playground's RKT server)
import { AgentwireError, RktClient } from "agentwire";

const url = process.argv[2] ?? "ws://127.0.0.1:7749/rkt";
const client = await RktClient.connect(url, { timeoutMs: 5000 });
console.log("connected to", client.server.from, "offering", client.server.capabilities.join(", "));

const now = await client.request("weather.current", { city: "Seoul" }, { timeoutMs: 2000 });
console.log("weather.current:", now.data.temperature, "°C,", now.data.condition);

for await (const day of client.stream("weather.forecast", { city: "Seoul", days: 3 })) {
  console.log("forecast:", day.date, day.high, "/", day.low);
}

await client.memorySet("city", "Seoul", { namespace: "user.prefs", ttlS: 3600 });
console.log("memory:", (await client.memoryGet("city", { namespace: "user.prefs" })).value);

try {
  await client.request("no.such.intent");
} catch (e) {
  if (!(e instanceof AgentwireError)) throw e;
  console.log(`refused: ${e.kind} ${e.code}: ${e.message}`);
}
await client.close();

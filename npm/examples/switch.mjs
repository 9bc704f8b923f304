// Switch Rooms from Node 22+. A browser connects to the relay with a relay token; a server-side
// Node process may talk to a Switch server directly with the agent key, by giving a WebSocket
// constructor that sends it as Authorization (undici's accepts `headers`).
// Run: node examples/switch.mjs http://127.0.0.1:7751 AGENT_ID AGENT_KEY ROOM_ID
import { SwitchClient } from "agentwire";

const [url = "http://127.0.0.1:7751", agentId, key, room] = process.argv.slice(2);
class KeyedWebSocket extends WebSocket {
  constructor(u) {
    super(u, { headers: { authorization: `Bearer ${key}` } });
  }
}
const client = await SwitchClient.connect(url, { token: key, agentId, rooms: [room], webSocket: KeyedWebSocket, timeoutMs: 5000 });
console.log("attached:", client.status().state, "rooms", client.status().rooms.join(", "));
const ops = await client.listOps();
console.log("operations:", Object.keys(ops.operations).length);
await client.op("connect_to_room", { room_id: room });
const posted = await client.op("post_message", { body: "hello from agentwire" });
console.log("posted:", JSON.stringify(posted).slice(0, 80));
await client.close();

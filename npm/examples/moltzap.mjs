// MoltZap from Node 22+: bob listens, alice sends him a message.
// Run: node examples/moltzap.mjs ws://127.0.0.1:7750/ws ALICE_KEY BOB_KEY
// (play.sh prints the keys; `agentwire moltzap register NAME` makes new ones).
import { MoltZapClient } from "agentwire";

const [url = "ws://127.0.0.1:7750/ws", aliceKey, bobKey] = process.argv.slice(2);
const bob = await MoltZapClient.connect(url, { agentKey: bobKey, generation: "auto" });
const alice = await MoltZapClient.connect(url, { agentKey: aliceKey, generation: "auto" });
console.log("alice speaks the", alice.info.generation, "generation");

const inbox = bob.events();
await alice.send({ agent: "bob" }, "hello bob");
for await (const ev of inbox) {
  if (ev.type === "messageReceived") {
    console.log("bob got a message in", ev.conversationId, "from", ev.senderId);
    break;
  }
}
const recent = await bob.recentMessages({ limit: 5 });
console.log("bob's recent messages:", JSON.stringify(recent).length, "bytes");
await Promise.all([alice.close(), bob.close()]);

// A connection outlives UPSTREAM_TIMEOUT_MS: the timeout bounds the upstream open only (a
// regression: the upgrade fetch once kept a timeout signal that ended the socket after it).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startPeer, startRelay, relayVars, token, open, wsPath, withToken, cleanup } from "./harness.mjs";
after(cleanup);
for (const generation of ["current", "released"]) test(`a ${generation} connection lives past UPSTREAM_TIMEOUT_MS`, { timeout: 30000 }, async () => {
  const peer = await startPeer({ generation });
  const relay = await startRelay(relayVars(peer, { UPSTREAM_TIMEOUT_MS: "3000" }));
  const c = open(wsPath(relay, peer.agents.alice.id), { protocols: withToken(await token(peer.agents.alice.id)) });
  await c.opened;
  await new Promise((r) => setTimeout(r, 9000));
  const pings = c.frames.filter((f) => f.event === "ping").length;
  assert.ok(pings >= 3, `pings ${pings}`);
  assert.equal(c.ws.readyState, 1);
  c.ws.close(1000);
  assert.equal((await c.closed).code, 1000);
});

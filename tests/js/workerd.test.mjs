// The scenarios in real workerd (Miniflare, from worker-relay's packages): the package's Workers
// entries, `agentwire` and each protocol's own, with workerd's own WebSocket, against the same
// local peers as Node and Chromium.
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startWorker } from "../../worker-relay/miniflare.mjs";
import { runs } from "./scenarios.mjs";
import { testEnv } from "./env.mjs";

const env = testEnv();
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
let worker;
const logs = [];

before(async () => {
  worker = await startWorker({
    vars: {},
    script: fileURLToPath(new URL("workerd/worker.mjs", import.meta.url)),
    modulesRoot: ROOT,
    log: (t) => logs.push(t),
  });
});

after(async () => {
  await worker?.mf.dispose();
});

for (const [entry, name, title] of runs("workerd")) {
  test(title, { timeout: 20_000 }, async (t) => {
    const res = await fetch(worker.url, { method: "POST", body: JSON.stringify({ entry, name, env }) });
    const { outcome, error } = await res.json();
    if (error) throw new Error(`${error}\nworkerd: ${logs.join("")}`);
    if (typeof outcome === "string") t.skip(outcome);
  });
}

test("workerd: nothing uncaught in the Worker", async () => {
  const { uncaught } = await (await fetch(worker.url)).json();
  if (uncaught.length) throw new Error(uncaught.join("\n"));
});

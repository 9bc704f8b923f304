// The playground (playground/) in headless Chromium: its own server (playground/serve.mjs, with
// a config built from the peers run.sh started), one round trip per protocol through the page's
// forms, no uncaught error and no console error, and a screenshot in target/playground.png; then
// what a first use found: bob's Switch connection (scope all) against another that claims the
// lobby, double clicks and empty inputs, the headers after a disconnect and while reconnecting
// (the browser taken offline), localhost redirected to 127.0.0.1, and a package that fails to load.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { launch } from "./chromium.mjs";
import { testEnv } from "./env.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const WAIT_MS = 10_000;
const env = testEnv();
const config = {
  rkt: env.rkt,
  moltzap: env.moltzap,
  moltzapKeys: { alice: env.moltzapKeys.alice, bob: env.moltzapKeys.bob },
  switch: env.switch,
  switchAgents: env.switchAgents,
  switchLobby: env.switchLobby,
  ...(env.switchRelay ? { switchRelay: env.switchRelay } : {}),
};

let server, browser, tab, origin;
const problems = [];

/** Starts playground/serve.mjs on a free port; resolves with its origin once it prints it. */
function startServer() {
  const child = spawn(process.execPath, [`${ROOT}playground/serve.mjs`], {
    // On the port the relay allows as an origin.
    env: { ...process.env, PORT: String(env.playgroundPort ?? 0), AGENTWIRE_PLAYGROUND_CONFIG: JSON.stringify(config) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the playground server printed no URL in ${WAIT_MS} ms: ${out}`)), WAIT_MS);
    const read = (chunk) => {
      out += chunk;
      const m = /playground on (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, origin: m[1] });
      }
    };
    child.stdout.on("data", read);
    child.stderr.on("data", (c) => (out += c));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the playground server exited (${code}): ${out}`));
    });
  });
}

const entries = (list, kind) => tab.locator(`#${list} li[data-kind="${kind}"]`);
const waitText = (list, kind, text) => entries(list, kind).filter({ hasText: text }).first().waitFor({ timeout: WAIT_MS });

before(async () => {
  ({ child: server, origin } = await startServer());
  browser = await launch();
  tab = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  tab.setDefaultTimeout(WAIT_MS);
  tab.on("pageerror", (e) => problems.push(`uncaught in the page: ${e.message}`));
  // Chromium's own report of a WebSocket it could not open while the test has it offline.
  const offline = (text) => text.includes("net::ERR_INTERNET_DISCONNECTED");
  tab.on("console", (m) => m.type() === "error" && !offline(m.text()) && problems.push(`console error: ${m.text()}`));
  await tab.goto(`${origin}/`);
});

after(async () => {
  await browser?.close();
  server?.kill();
});

test("the page connects to RKT and MoltZap on load", { timeout: 20_000 }, async () => {
  await tab.locator('#rkt-status[data-state="connected"]').waitFor();
  await tab.locator('#mz-status[data-state="connected"]').waitFor();
  assert.match(await tab.locator("#rkt-server").textContent(), /weather/);
});

test("rkt: weather.current in Seoul through the form, then a streamed forecast", { timeout: 20_000 }, async () => {
  await tab.fill("#rkt-intent", "weather.current");
  await tab.fill("#rkt-params", '{"city":"Seoul"}');
  await tab.setChecked("#rkt-stream", false);
  await tab.click("#rkt-send");
  await waitText("rkt-log", "result", '"temperature": 24');

  await tab.fill("#rkt-intent", "weather.forecast");
  await tab.fill("#rkt-params", '{"city":"Seoul","days":3}');
  await tab.setChecked("#rkt-stream", true);
  await tab.click("#rkt-send");
  await waitText("rkt-log", "info", "stream ended: 3 chunks");
  assert.equal(await entries("rkt-log", "result").filter({ hasText: /chunk \d/ }).count(), 3);

  await tab.click("#rkt-ping");
  await waitText("rkt-log", "result", "ms round trip");
});

test("rkt: an error shows as kind: message", { timeout: 20_000 }, async () => {
  await tab.fill("#rkt-intent", "no.such.intent");
  await tab.fill("#rkt-params", "{}");
  await tab.setChecked("#rkt-stream", false);
  await tab.click("#rkt-send");
  await waitText("rkt-log", "error", /remote: /);
  await tab.fill("#rkt-params", "{not json");
  await tab.click("#rkt-send");
  await waitText("rkt-log", "error", "invalid: the params are not JSON");
  // Back to the example for the screenshot.
  await tab.fill("#rkt-intent", "weather.current");
  await tab.fill("#rkt-params", '{"city":"Seoul"}');
});

test("moltzap: alice sends to bob, bob's panel shows it, recent messages list it", { timeout: 20_000 }, async () => {
  const text = `hello bob ${Math.random().toString(36).slice(2, 8)}`;
  await tab.selectOption("#mz-from", "alice");
  await tab.fill("#mz-to", "bob");
  await tab.fill("#mz-text", text);
  await tab.click("#mz-send");
  await waitText("mz-events-bob", "event", text);
  assert.match(await entries("mz-events-bob", "event").filter({ hasText: text }).first().textContent(), /message from alice/);
  await waitText("mz-events-alice", "sent", text);
  await tab.selectOption("#mz-from", "bob");
  await tab.click("#mz-recent");
  await waitText("mz-recent-list", "result", text);
  await tab.selectOption("#mz-from", "alice");
});

test("switch: the relay note and the CLI, or a round trip through the relay", { timeout: 20_000 }, async () => {
  if (!config.switchRelay) {
    await tab.locator("#sw-note").waitFor({ state: "visible" });
    assert.match(await tab.locator("#sw-note").textContent(), /goes through the\s+relay/);
    const cli = await tab.locator("#sw-cli").textContent();
    assert.ok(cli.includes(`switch watch --url ${env.switch}`) && cli.includes(env.switchLobby), cli);
    assert.equal(await tab.locator('#sw-status[data-state="needs relay"]').count(), 1);
    return;
  }
  await tab.locator('#sw-status[data-state="connected"]').waitFor();
  const text = `hello @bob ${Math.random().toString(36).slice(2, 8)}`;
  await tab.fill("#sw-text", text);
  await tab.click("#sw-post");
  await waitText("sw-events-bob", "event", text);
});

test("switch: bob's page connection (scope all) keeps receiving while another of bob's claims the lobby", { timeout: 20_000 }, async () => {
  if (!config.switchRelay) return;
  // What `switch watch --room LOBBY` in a terminal does: a second connection of bob's that claims
  // the lobby (with takeover). The page's bob claims nothing, so it loses nothing.
  const rooms = await tab.evaluate(async (lobby) => {
    const { SwitchClient } = await import("agentwire");
    const cfg = await (await fetch("/playground/config.json")).json();
    globalThis.otherBob = await SwitchClient.connect(cfg.switchRelay.url, {
      token: cfg.switchRelay.tokens.bob,
      agentId: cfg.switchAgents.bob.id,
      rooms: [lobby],
      timeoutMs: 10_000,
    });
    return globalThis.otherBob.status().rooms;
  }, env.switchLobby);
  assert.deepEqual(rooms, [env.switchLobby]);
  try {
    const text = `hello again @bob ${Math.random().toString(36).slice(2, 8)}`;
    await tab.fill("#sw-text", text);
    await tab.click("#sw-post");
    await waitText("sw-events-bob", "event", text);
    assert.equal(await tab.locator('#sw-status[data-state="connected"]').count(), 1);
  } finally {
    await tab.evaluate(() => globalThis.otherBob?.close());
  }
});

test("a double click sends once; an empty message or recipient is refused in the page", { timeout: 20_000 }, async () => {
  const mzText = `once ${Math.random().toString(36).slice(2, 8)}`;
  await tab.selectOption("#mz-from", "alice");
  await tab.fill("#mz-to", "bob");
  await tab.fill("#mz-text", mzText);
  await tab.dblclick("#mz-send", { delay: 150 });
  await waitText("mz-events-bob", "event", mzText);
  if (config.switchRelay) {
    const swText = `once @bob ${Math.random().toString(36).slice(2, 8)}`;
    await tab.fill("#sw-text", swText);
    await tab.dblclick("#sw-post", { delay: 150 });
    await waitText("sw-events-bob", "event", swText);
    await tab.waitForTimeout(500);
    assert.equal(await entries("sw-events-alice", "sent").filter({ hasText: swText }).count(), 1);
    assert.equal(await entries("sw-events-bob", "event").filter({ hasText: swText }).count(), 1);
    await tab.fill("#sw-text", " ");
    await tab.click("#sw-post");
    await waitText("sw-events-alice", "error", "invalid: the message is empty");
    await tab.fill("#sw-text", "hello @bob");
  }
  assert.equal(await entries("mz-events-alice", "sent").filter({ hasText: mzText }).count(), 1);
  assert.equal(await entries("mz-events-bob", "event").filter({ hasText: mzText }).count(), 1);
  await tab.fill("#mz-to", "");
  await tab.click("#mz-send");
  await waitText("mz-events-alice", "error", "invalid: say whom to send to");
  await tab.fill("#mz-to", "bob");
  await tab.fill("#mz-text", "hello bob");
});

test("a screenshot in target/playground.png", { timeout: 20_000 }, async () => {
  await mkdir(`${ROOT}target`, { recursive: true });
  await tab.screenshot({ path: `${ROOT}target/playground.png`, fullPage: true, timeout: WAIT_MS });
});

test("disconnecting shows closed in the panels' headers, and clears RKT's server line", { timeout: 20_000 }, async () => {
  await tab.click("#rkt-connect");
  await tab.locator('#rkt-status[data-state="closed"]').waitFor();
  assert.equal(await tab.locator("#rkt-server").textContent(), "");
  await tab.click("#mz-connect");
  await tab.locator('#mz-status[data-state="closed"]').waitFor();
});

test("switch: a lost connection shows as reconnecting (not connected) with its reason, resumes, and Disconnect shows closed", { timeout: 30_000 }, async () => {
  if (!config.switchRelay) return;
  await tab.context().setOffline(true);
  try {
    await tab.locator('#sw-status[data-state="reconnecting"]').waitFor();
    await waitText("sw-events-bob", "info", /disconnected.+ — retrying in \d+ ms/);
  } finally {
    await tab.context().setOffline(false);
  }
  await tab.locator('#sw-status[data-state="connected"]').waitFor({ timeout: 20_000 });
  await tab.click("#sw-connect");
  await tab.locator('#sw-status[data-state="closed"]').waitFor();
});

test("http://localhost:PORT/ is redirected to 127.0.0.1, whose origin the relay allows", { timeout: 20_000 }, async () => {
  const other = await browser.newPage();
  try {
    await other.goto(`${origin.replace("127.0.0.1", "localhost")}/`);
    assert.equal(new URL(other.url()).origin, origin);
    if (config.switchRelay) await other.locator('#sw-status[data-state="connected"]').waitFor({ timeout: WAIT_MS });
  } finally {
    await other.close();
  }
});

test("a package that does not load (missing, or broken) says so in the page's banner", { timeout: 20_000 }, async () => {
  for (const answer of [{ status: 404, body: "" }, { status: 200, contentType: "text/javascript", body: "export const = ;" }]) {
    const other = await browser.newPage();
    try {
      await other.route("**/npm/dist/browser.js", (route) => route.fulfill(answer));
      await other.goto(`${origin}/`);
      await other.locator("#page-error").waitFor({ state: "visible", timeout: WAIT_MS });
      assert.match(await other.locator("#page-error").textContent(), /the agentwire package did not load .*npm\/build\.sh/);
    } finally {
      await other.close();
    }
  }
});

test("nothing uncaught and no console error in the page", () => {
  assert.deepEqual(problems, []);
});

// The relay from an operator's side: the local runners work from any directory.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { cleanup, startRelay, within, SECRET, ORIGIN } from "./harness.mjs";

const T = { timeout: 30_000 };
const DEV = fileURLToPath(new URL("../dev.mjs", import.meta.url));
const FAKE = { id: "agent-ops", key: "sk_switch_ops_key_000000000001" };
const VARS = {
  UPSTREAM: "http://127.0.0.1:9",
  AGENT_KEYS: JSON.stringify({ [FAKE.id]: FAKE.key }),
  RELAY_TOKEN_SECRET: SECRET,
  ALLOWED_ORIGINS: ORIGIN,
};

after(cleanup);

test("dev.mjs and the harness start the relay from any working directory, not only worker-relay/", T, async () => {
  // A directory that is not above worker-relay/ (from one above it, module paths still resolved).
  const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), "relay-cwd-"));
  const child = spawn(process.execPath, [DEV], {
    cwd: elsewhere,
    env: { ...process.env, RELAY_VARS: JSON.stringify(VARS) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  const exited = new Promise((resolve) => child.on("exit", resolve));
  try {
    const url = await within(20_000, "dev.mjs listening", new Promise((resolve, reject) => {
      child.stdout.on("data", () => {
        const m = out.match(/listening on (\S+)/);
        if (m) resolve(m[1]);
      });
      exited.then((code) => reject(new Error(`dev.mjs exited (${code}): ${out}`)));
    }));
    const r = await fetch(`${url}/nowhere`);
    assert.equal(r.status, 404, await r.text());
  } finally {
    child.kill("SIGTERM");
    await within(10_000, "dev.mjs exiting", exited);
  }
  const cwd = process.cwd();
  process.chdir(elsewhere);
  try {
    const relay = await startRelay(VARS);
    assert.equal((await fetch(`${relay.url}/nowhere`)).status, 404);
  } finally {
    process.chdir(cwd);
    fs.rmSync(elsewhere, { recursive: true, force: true });
  }
});

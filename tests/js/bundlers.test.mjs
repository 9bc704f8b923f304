// The package in apps built by the bundlers most web apps use, Vite and webpack: each builds
// tests/js/app (which imports `agentwire/rkt` and `agentwire`), resolving the `browser` conditions,
// emitting each entry's wasm as an asset and keeping the entries that instantiate it (the
// package's `sideEffects`); each built app, served as files and loaded in headless Chromium,
// makes a round trip to the local RKT server and gets a typed error.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "vite";
import webpack from "webpack";
import { launch } from "./chromium.mjs";
import { serve } from "./serve.mjs";
import { testEnv } from "./env.mjs";

const env = testEnv();
const app = new URL("app/", import.meta.url);
let browser, server, origin;

before(async () => {
  const served = await serve({}, 0);
  server = served.server;
  origin = served.origin;
  browser = await launch();
});

after(async () => {
  await browser?.close();
  server?.close();
});

const bundlers = {
  async vite(out) {
    await build({ root: fileURLToPath(app), base: "./", logLevel: "warn", build: { outDir: fileURLToPath(out), emptyOutDir: true } });
    return new URL("assets/", out);
  },
  async webpack(out) {
    const compiler = webpack({
      mode: "production",
      context: fileURLToPath(app),
      entry: "./main.js",
      output: { path: fileURLToPath(out), filename: "main.js", clean: true },
      target: "web",
      performance: { hints: false },
    });
    const stats = await new Promise((resolve, reject) => compiler.run((e, s) => (e ? reject(e) : resolve(s))));
    await new Promise((resolve) => compiler.close(resolve));
    if (stats.hasErrors()) throw new Error(stats.toString({ all: false, errors: true }));
    writeFileSync(new URL("index.html", out), '<!doctype html><meta charset="utf-8"><script src="./main.js"></script>');
    return out;
  },
};

for (const [name, bundle] of Object.entries(bundlers)) {
  test(`${name}: the app builds, the wasm of agentwire/rkt and of agentwire emitted, and runs in chromium`, { timeout: 60_000 }, async () => {
    const out = new URL(`dist-${name}/`, app);
    const assets = await bundle(out);
    const wasm = readdirSync(assets).filter((f) => f.endsWith(".wasm"));
    assert.equal(wasm.length, 2, `wasm assets: ${wasm}`);
    const tab = await browser.newPage();
    const errors = [];
    tab.on("pageerror", (e) => errors.push(e.message));
    const path = fileURLToPath(out).slice(fileURLToPath(new URL("../../", import.meta.url)).length);
    await tab.goto(`${origin}/${path}index.html?rkt=${encodeURIComponent(env.rkt)}`);
    // The entries instantiate their wasm with a top-level await: `load` may come first.
    await tab.waitForFunction(() => window.result !== undefined, null, { timeout: 10_000 });
    const result = await tab.evaluate(() => window.result);
    assert.deepEqual(result, { ok: { ping: "PING", temperature: 24, refused: "invalid", kinds: 13, session: "function" } });
    assert.deepEqual(errors, []);
    await tab.close();
  });
}

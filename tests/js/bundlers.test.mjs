// The package in apps built by the bundlers most web apps use, Vite and webpack: each builds
// tests/js/app (which imports `agentwire/rkt` and `agentwire`), resolving the `browser` conditions,
// emitting each entry's wasm as an asset and keeping the entries that instantiate it (the
// package's `sideEffects`); each built app, served as files and loaded in headless Chromium,
// makes a round trip to the local RKT server and gets a typed error. webpack also builds a Web
// Worker (`target: "webworker"`, tests/js/app/worker.js), which resolves the `browser` entry (a
// `worker` condition once sent it to the Workers entry, whose wasm import webpack cannot build).
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
  // The built apps (tests/js/app/dist-*/).
  const served = await serve({}, 0, { files: ["/tests/js/app/"] });
  server = served.server;
  origin = served.origin;
  browser = await launch();
});

after(async () => {
  await browser?.close();
  server?.close();
});

/** Builds `entry` of tests/js/app with webpack for `target` into `out`; fails on any error. */
async function webpackBuild(entry, target, out) {
  const compiler = webpack({
    mode: "production",
    context: fileURLToPath(app),
    entry,
    output: { path: fileURLToPath(out), filename: entry.slice(2), clean: true },
    target,
    performance: { hints: false },
  });
  const stats = await new Promise((resolve, reject) => compiler.run((e, s) => (e ? reject(e) : resolve(s))));
  await new Promise((resolve) => compiler.close(resolve));
  if (stats.hasErrors()) throw new Error(stats.toString({ all: false, errors: true }));
}

/** Opens `index.html` of the built app `out` in chromium and gives its `window.result`. */
async function runInChromium(out) {
  const tab = await browser.newPage();
  const errors = [];
  tab.on("pageerror", (e) => errors.push(e.message));
  const path = fileURLToPath(out).slice(fileURLToPath(new URL("../../", import.meta.url)).length);
  await tab.goto(`${origin}/${path}index.html?rkt=${encodeURIComponent(env.rkt)}`);
  // The entries instantiate their wasm with a top-level await: `load` may come first.
  await tab.waitForFunction(() => window.result !== undefined, null, { timeout: 10_000 });
  const result = await tab.evaluate(() => window.result);
  await tab.close();
  assert.deepEqual(errors, []);
  return result;
}

const bundlers = {
  async vite(out) {
    await build({ root: fileURLToPath(app), base: "./", logLevel: "warn", build: { outDir: fileURLToPath(out), emptyOutDir: true } });
    return new URL("assets/", out);
  },
  async webpack(out) {
    await webpackBuild("./main.js", "web", out);
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
    const result = await runInChromium(out);
    assert.deepEqual(result, { ok: { ping: "PING", temperature: 24, refused: "invalid", kinds: 13, session: "function" } });
  });
}

test("webpack, target webworker: a Web Worker importing agentwire/rkt builds, its wasm emitted, and runs in chromium", { timeout: 60_000 }, async () => {
  const out = new URL("dist-webworker/", app);
  await webpackBuild("./worker.js", "webworker", out);
  const wasm = readdirSync(out).filter((f) => f.endsWith(".wasm"));
  assert.equal(wasm.length, 1, `wasm assets: ${wasm}`);
  const page = `const worker = new Worker("./worker.js" + location.search);
worker.onerror = (e) => (window.result = { error: e.message });
worker.onmessage = (m) => (window.result = m.data);`;
  writeFileSync(new URL("index.html", out), `<!doctype html><meta charset="utf-8"><script>${page}</script>`);
  assert.deepEqual(await runInChromium(out), { ok: { temperature: 24, refused: "invalid" } });
});

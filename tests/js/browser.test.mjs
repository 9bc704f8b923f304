// The scenarios in headless Chromium: each runs inside a page that imports the package through
// an import map (the browser entry: fetch + instantiate), with the browser's own WebSocket.
import { after, before, test } from "node:test";
import { launch } from "./chromium.mjs";
import { page, serve } from "./serve.mjs";
import { runs } from "./scenarios.mjs";
import { testEnv } from "./env.mjs";

const env = testEnv();
let browser, server, tab;
const errors = [];

before(async () => {
  // On the port the relays allow as the page's origin.
  const served = await serve({ "/test.html": page("agentwire tests", "<p>agentwire tests</p>") }, env.pagePort ?? 0, {
    files: ["/tests/js/scenarios.mjs"],
  });
  server = served.server;
  browser = await launch();
  tab = await browser.newPage();
  tab.on("pageerror", (e) => errors.push(`uncaught in the page: ${e.message}`));
  await tab.goto(`${served.origin}/test.html`);
});

after(async () => {
  await browser?.close();
  server?.close();
});

// Each entry loads its own module, all in the same page.
for (const [entry, name, title] of runs("chromium")) {
  test(title, { timeout: 20_000 }, async (t) => {
    const outcome = await tab.evaluate(
      async ([entry, name, env]) => {
        const aw = await import(entry);
        const { scenarios } = await import("/tests/js/scenarios.mjs");
        return await scenarios[name](aw, env);
      },
      [entry, name, env],
    );
    if (typeof outcome === "string") t.skip(outcome);
  });
}

test("chromium: nothing uncaught in the page", () => {
  if (errors.length) throw new Error(errors.join("\n"));
});

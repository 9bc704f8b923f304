// tests/js/serve.mjs, the server of the browser tests and of the playground, on its own (no
// build, no browser, no peers): it answers only to its own Host, and a page that throws is a 500
// that leaves the server up.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:http";
import { serve } from "./serve.mjs";

let server, port;

before(async () => {
  ({ server } = await serve({
    "/ok.html": "ok",
    "/boom.json": async () => {
      throw new Error("no config");
    },
  }));
  port = server.address().port;
});

after(() => server.close());

/** GET `path` from the server (on `to`, default the first one's port) with `host` as the Host
 * header (none when null); resolves with the status, and the Location when it redirects. */
function get(path, host, to = port) {
  return new Promise((resolve, reject) => {
    const headers = host === null ? {} : { host };
    const req = request({ host: "127.0.0.1", port: to, path, headers, setHost: host !== null, timeout: 5000 }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.headers.location ? `${res.statusCode} ${res.headers.location}` : res.statusCode));
    });
    req.on("timeout", () => req.destroy(new Error("no answer in 5 s")));
    req.on("error", reject);
    req.end();
  });
}

test("only its own Host is answered", async () => {
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`]) {
    assert.equal(await get("/ok.html", host), 200, host);
  }
  for (const host of ["evil.example", `evil.example:${port}`, "127.0.0.1", `127.0.0.1:${port + 1}`]) {
    assert.equal(await get("/ok.html", host), 403, host);
    assert.equal(await get("/README.md", host), 403, host);
  }
  // Without a Host at all, Node's HTTP/1.1 server refuses the request itself.
  assert.equal(await get("/ok.html", null), 400);
});

test("a page that throws is a 500 and the server stays up", async () => {
  const own = `127.0.0.1:${port}`;
  assert.equal(await get("/boom.json", own), 500);
  assert.equal(await get("/ok.html", own), 200);
});

test("redirectToOrigin: localhost and [::1] are redirected to 127.0.0.1, other names still refused", async () => {
  const { server: other } = await serve({ "/ok.html": "ok" }, 0, { redirectToOrigin: true });
  const p = other.address().port;
  try {
    assert.equal(await get("/ok.html", `127.0.0.1:${p}`, p), 200);
    for (const host of [`localhost:${p}`, `LocalHost:${p}`, `[::1]:${p}`]) {
      assert.equal(await get("/ok.html?x=1", host, p), `308 http://127.0.0.1:${p}/ok.html?x=1`, host);
    }
    assert.equal(await get("/ok.html", `evil.example:${p}`, p), 403);
  } finally {
    other.close();
  }
});

test("only the package and the files named are served: no other repository file, no dotfile", async () => {
  const { server: other } = await serve({}, 0, { files: ["/playground/", "/tests/js/serve.mjs"] });
  const p = other.address().port;
  const own = `127.0.0.1:${p}`;
  try {
    assert.equal(await get("/playground/app.js", own, p), 200);
    assert.equal(await get("/playground/index.html", own, p), 200);
    assert.equal(await get("/tests/js/serve.mjs", own, p), 200);
    assert.equal(await get("/playground/no-such-file.js", own, p), 404);
    for (const path of [
      "/README.md",
      "/Cargo.toml",
      "/worker-relay/dev.mjs",
      "/worker-relay/.dev.vars",
      "/tests/js/serve.test.mjs",
      "/tests/js/",
      "/playground",
      "/playgroundx/app.js",
      "/playground/../README.md",
      "/playground/%2e%2e/README.md",
      "/playground/..%2fREADME.md",
      "/playground/%2e%2e%2fworker-relay/dev.mjs",
      "/playground//app.js",
      "/playground/.dev.vars",
      "/npm/dist/../package.json",
      "/npm/dist/.env",
      "/.git/config",
      "/npm/dist/%2e%2e/%2e%2e/.git/HEAD",
    ]) {
      assert.equal(await get(path, own, p), 404, path);
    }
  } finally {
    other.close();
  }
});

test("a file outside the list is not served even when it exists (worker-relay/.dev.vars)", async (t) => {
  const { mkdtempSync, writeFileSync, rmSync } = await import("node:fs");
  const { fileURLToPath } = await import("node:url");
  // A 0600 file where the relay's dev server reads its secrets, as a developer would have it.
  const dir = fileURLToPath(new URL("../../worker-relay/", import.meta.url));
  const name = `.dev.vars.serve-test-${process.pid}`;
  const path = `${dir}${name}`;
  writeFileSync(path, "RELAY_TOKEN_SECRET=from-a-0600-file\n", { mode: 0o600 });
  t.after(() => rmSync(path, { force: true }));
  // Even with its directory listed, a dotfile is not served.
  const { server: other } = await serve({}, 0, { files: ["/worker-relay/"] });
  const p = other.address().port;
  try {
    assert.equal(await get("/worker-relay/dev.mjs", `127.0.0.1:${p}`, p), 200);
    assert.equal(await get(`/worker-relay/${name}`, `127.0.0.1:${p}`, p), 404);
  } finally {
    other.close();
  }
  assert.equal(await get(`/worker-relay/${name}`, `127.0.0.1:${port}`), 404, "nor by default");
  assert.equal(await get("/worker-relay/dev.mjs", `127.0.0.1:${port}`), 404);
});

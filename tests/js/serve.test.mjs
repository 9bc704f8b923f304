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

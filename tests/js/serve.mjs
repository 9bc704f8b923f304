// A static file server on 127.0.0.1 for the browser tests and the playground: the repository's
// files under their own paths (the package is /npm/dist/browser.js), read-only, nothing outside
// the repository, and an import map page per entry. It answers only requests whose Host is
// itself (127.0.0.1, localhost or [::1] with its port), so that a page on another name that
// resolves to 127.0.0.1 (DNS rebinding) cannot read what it serves, such as the playground's
// config.json with the local agents' keys: any other Host gets 403.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".css": "text/css; charset=utf-8",
  ".png": "image/png",
};

const imports = JSON.stringify({
  imports: {
    agentwire: "/npm/dist/browser.js",
    "agentwire/rkt": "/npm/dist/rkt/browser.js",
    "agentwire/moltzap": "/npm/dist/moltzap/browser.js",
    "agentwire/switch": "/npm/dist/switch/browser.js",
  },
});

/** A page that maps `agentwire` (and `agentwire/rkt`, ...) to the built package and runs `body`
 * (a module script). */
export function page(title, body, head = "") {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title>
<script type="importmap">${imports}</script>${head}</head>
<body>${body}</body></html>`;
}

/** Whether `host` (a request's Host header) names this server, listening on `port`. */
export function isOwnHost(host, port) {
  const h = String(host ?? "").toLowerCase();
  return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].includes(h);
}

/** Serves the repository, plus `pages` (path → HTML, `{type, body}` for another content type,
 * or a function returning either, called per request; one that throws or rejects is answered
 * 500), on `port` (default: a free one); resolves with the server and its origin, rejects when
 * it cannot listen. Requests whose Host is not the server's own are answered 403. With
 * `{redirectToOrigin: true}`, a request to localhost or [::1] is redirected (308) to the same
 * path on the origin (127.0.0.1), for a page whose origin matters (the relay allows one). */
export function serve(pages = {}, port = 0, { redirectToOrigin = false } = {}) {
  const server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      console.error(`serve: ${req.method} ${req.url}: ${e?.stack ?? e}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  const handle = async (req, res) => {
    if (!isOwnHost(req.headers.host, server.address()?.port)) {
      res.writeHead(403, { "content-type": "text/plain; charset=utf-8" });
      return res.end("this server answers only to 127.0.0.1, localhost and [::1] on its own port\n");
    }
    const origin = `http://127.0.0.1:${server.address().port}`;
    if (redirectToOrigin && String(req.headers.host).toLowerCase() !== origin.slice("http://".length)) {
      res.writeHead(308, { location: `${origin}${req.url ?? "/"}`, "cache-control": "no-store" });
      return res.end();
    }
    let path;
    try {
      path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    } catch {
      res.writeHead(400);
      return res.end();
    }
    if (pages[path] !== undefined) {
      const found = typeof pages[path] === "function" ? await pages[path]() : pages[path];
      const { type = TYPES[".html"], body } = typeof found === "string" ? { body: found } : found;
      res.writeHead(200, { "content-type": type, "cache-control": "no-store" });
      return res.end(body);
    }
    const file = normalize(resolve(ROOT, "." + path));
    if (!file.startsWith(ROOT + sep) || file.includes(`${sep}.git${sep}`)) {
      res.writeHead(403);
      return res.end();
    }
    try {
      const data = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "cache-control": "no-store" });
      res.end(data);
    } catch {
      res.writeHead(404);
      res.end();
    }
  };
  return new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(port, "127.0.0.1", () => ok({ server, origin: `http://127.0.0.1:${server.address().port}` }));
  });
}

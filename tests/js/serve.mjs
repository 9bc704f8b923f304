// A static file server on 127.0.0.1 for the browser tests and the playground: the package
// (/npm/dist/, browser.js and what it loads) and the repository files each caller names, under
// their own paths, read-only, and an import map page per entry. Nothing else of the repository
// is served (a 404), nor any name starting with a dot, wherever it is: any local user can reach
// this server, and a file such as worker-relay/.dev.vars holds secrets. It answers only
// requests whose Host is itself (127.0.0.1, localhost or [::1] with its port), so that a page on another name that
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

/** What every server serves: the built package. */
const PACKAGE = "/npm/dist/";

/** Whether the URL path `path` (decoded, `/`-separated) is in `files`: a directory (ending in
 * `/`) holding it, or the file itself. A path with a `..`, `.` or empty segment, or a segment
 * starting with a dot, is not. */
export function isServed(path, files) {
  const segments = path.split("/").slice(1);
  if (segments.some((s, i) => s.startsWith(".") || (s === "" && i < segments.length - 1)) || path.includes("\\")) {
    return false;
  }
  return files.some((f) => (f.endsWith("/") ? path.startsWith(f) && path.length > f.length : path === f));
}

/** Serves the package (/npm/dist/) and `files` (repository paths, each a directory ending in
 * `/` or a file: `["/playground/"]`), plus `pages` (path → HTML, `{type, body}` for another content type,
 * or a function returning either, called per request; one that throws or rejects is answered
 * 500), on `port` (default: a free one); resolves with the server and its origin, rejects when
 * it cannot listen. Any other path is a 404. Requests whose Host is not the server's own are answered 403. With
 * `{redirectToOrigin: true}`, a request to localhost or [::1] is redirected (308) to the same
 * path on the origin (127.0.0.1), for a page whose origin matters (the relay allows one). */
export function serve(pages = {}, port = 0, { redirectToOrigin = false, files = [] } = {}) {
  const served = [PACKAGE, ...files];
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
    if (!isServed(path, served) || !file.startsWith(ROOT + sep)) {
      res.writeHead(404);
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

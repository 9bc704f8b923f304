// Upstreams the Switch peer cannot play (its faults are only settable in-process): tiny Node
// servers on 127.0.0.1 that record what the relay sends them and misbehave on purpose. Each
// server is stopped by `stopHostile()` (call it from `after`), and every socket it accepted is
// destroyed then, so nothing outlives a test file.
import http from "node:http";
import net from "node:net";
import { WebSocketServer } from "ws";

const stops = [];
export async function stopHostile() {
  for (const stop of stops.splice(0).reverse()) await stop().catch(() => {});
}

function listen(server) {
  const sockets = new Set();
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  stops.push(
    () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port)));
}

/** Resolves when `test()` is true (polled every 20 ms), rejects after `ms`. */
export async function until(test, ms, what) {
  const end = Date.now() + ms;
  while (!test()) {
    if (Date.now() > end) throw new Error(`${what}: not after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * An HTTP + WebSocket upstream that records every request (`requests`: `{kind: "http"|"ws",
 * method, url, headers, body}`, and for an upgrade `closedAt`, when its TCP connection closed) and every close it sees from the relay (`closes`: `{code,
 * reason, at}`). HTTP answers `{"ok":true,"path":...}` (never an echo of the headers).
 * `onSocket(ws, req)` decides what a WebSocket does: by default it echoes every message
 * (`behave` may be replaced at any time). `refuse(status)` makes the next upgrades fail with
 * that HTTP status; `upgradeDelayMs` delays the upgrade's answer.
 */
export async function startUpstream({ onSocket = echo, onHttp } = {}) {
  const up = {
    requests: [],
    closes: [],
    sockets: new Set(),
    behave: onSocket,
    refuseStatus: null,
    upgradeDelayMs: 0,
    onHttp,
  };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      up.requests.push({ kind: "http", method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders, body });
      if (up.onHttp) return up.onHttp(req, res, body);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: true, path: req.url }));
    });
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 << 20 });
  server.on("upgrade", (req, socket, head) => {
    const entry = { kind: "ws", method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders, closedAt: null };
    socket.on("close", () => (entry.closedAt = Date.now()));
    up.requests.push(entry);
    if (up.refuseStatus) {
      socket.end(`HTTP/1.1 ${up.refuseStatus} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      return;
    }
    if (up.upgradeDelayMs) return void setTimeout(() => accept(req, socket, head), up.upgradeDelayMs);
    accept(req, socket, head);
  });
  const accept = (req, socket, head) => {
    if (socket.destroyed) return;
    wss.handleUpgrade(req, socket, head, (ws) => {
      up.sockets.add(ws);
      ws.on("close", (code, reason) => {
        up.sockets.delete(ws);
        up.closes.push({ code, reason: String(reason), at: Date.now() });
      });
      ws.on("error", () => {});
      up.behave(ws, req, socket);
    });
  };
  const port = await listen(server);
  stops.push(async () => {
    for (const ws of wss.clients) ws.terminate();
    wss.close();
  });
  up.url = `http://127.0.0.1:${port}`;
  up.refuse = (status) => {
    up.refuseStatus = status;
  };
  up.wsRequests = () => up.requests.filter((r) => r.kind === "ws");
  up.httpRequests = () => up.requests.filter((r) => r.kind === "http");
  return up;
}

/** Echoes every message as it came (text as text, binary as binary). */
export function echo(ws) {
  ws.on("message", (data, isBinary) => ws.send(data, { binary: isBinary }));
}

/** A TCP server that accepts and never says a byte: `accepted` and `open` count sockets. */
export async function startBlackhole() {
  const hole = { accepted: 0, open: 0 };
  const server = net.createServer((s) => {
    hole.accepted += 1;
    hole.open += 1;
    s.on("close", () => {
      hole.open -= 1;
    });
    s.on("error", () => {});
    s.resume(); // read (and drop) what comes, so a FIN is seen and the socket closes
  });
  const port = await listen(server);
  hole.url = `http://127.0.0.1:${port}`;
  return hole;
}

/**
 * A released-generation upstream (SSE + beats) under the test's control: `onEvents(res, req)`
 * answers `GET .../events` (the response is already `200 text/event-stream` unless it writes
 * its own head first: pass `{head: false}`); beats are answered `beatStatus` (200 by default)
 * or never when `beatStatus` is `null`, `beatDelayMs` (as it was when the beat came) late, with a
 * body that breaks off when `beatBreaks`; a
 * WebSocket upgrade gets `upgradeStatus` (403, as a released server with a valid key). Records `requests` (`upgrade: true` for upgrades) and
 * `beats`, and `streams` (the open event responses, to see whether the relay closed them:
 * `closedAt`).
 */
export async function startSseUpstream(onEvents, { head = true } = {}) {
  const up = { requests: [], beats: [], streams: [], beatStatus: 200, beatDelayMs: 0, beatBreaks: false, upgradeStatus: 403 };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      up.requests.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (req.method === "GET" && /\/events(\?|$)/.test(req.url)) {
        const stream = { req, res, closedAt: null };
        up.streams.push(stream);
        res.on("close", () => {
          stream.closedAt = Date.now();
        });
        if (head) res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
        onEvents(res, req);
        return;
      }
      if (req.method === "POST" && /\/connection\/beat$/.test(req.url)) {
        up.beats.push({ at: Date.now(), body });
        if (up.beatStatus === null) return;
        const answer = () => {
          res.writeHead(up.beatStatus, { "content-type": "application/json" });
          if (up.beatBreaks) return void (res.write('{"detail":"taken","co'), setTimeout(() => res.destroy(), 50));
          res.end(JSON.stringify({ ok: true, rooms: [], cursor: 0 }));
        };
        if (up.beatDelayMs) return void setTimeout(answer, up.beatDelayMs);
        answer();
        return;
      }
      // Released servers refuse a WebSocket upgrade (as a plain HTTP route): 404 here.
      res.writeHead(404, { "content-type": "application/json" });
      res.end('{"detail":"Not Found"}');
    });
  });
  server.on("upgrade", (req, socket) => {
    up.requests.push({ method: req.method, url: req.url, headers: req.headers, upgrade: true });
    socket.end(`HTTP/1.1 ${up.upgradeStatus} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
  });
  const port = await listen(server);
  up.url = `http://127.0.0.1:${port}`;
  return up;
}

/** A released `connection_state` SSE frame for `agentId`/`connectionId`. */
export function sseConnectionState(agentId, connectionId, { heartbeatSeconds = 2 } = {}) {
  const data = {
    connection_id: connectionId,
    agent_id: agentId,
    scope: "single",
    filter: "all",
    spawn_capable: false,
    rooms: [],
    cursor: 0,
    protocol: 1,
    heartbeat_interval_seconds: heartbeatSeconds,
    server: { version: "0.19.0", contracts: { "agent-protocol": { speaks: 1, accepts: 1 } } },
    client: { speaks: null, accepts: null, artifact: null, version: null },
  };
  return `event: connection_state\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A released domain event SSE frame. */
export function sseMessage(seq, roomId, body) {
  const data = {
    type: "message",
    room_id: roomId,
    bridge_id: null,
    channel_type: "channel_public",
    payload: { addressed: false, sender: "x", sender_name: "x", message_id: `m${seq}`, body, timestamp: 0, thread_id: null, attachments: [] },
    sequence: seq,
  };
  return `id: ${seq}\nevent: message\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The query of a recorded request as an object. */
export function queryOf(url) {
  return Object.fromEntries(new URL(url, "http://x").searchParams);
}

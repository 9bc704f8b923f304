// The flood servers: one `ws` server per protocol on 127.0.0.1 (random ports), each speaking just
// enough of its protocol for a real client to get ready, then sending N frames as fast as the
// socket takes them. The frames are built in batches of whole WebSocket frames (unmasked text
// frames, as a server sends them) and written straight to the TCP socket, waiting for `drain`:
// building and framing stay cheap, so the server is not what is measured.
//
//   RKT      ws://127.0.0.1:P/rkt            HELLO → HELLO_ACK; REQUEST `Stream: true` with
//                                            params {count: N} → STREAM_BEGIN, N × STREAM_DATA
//                                            (Seq 0..N-1), STREAM_END {count: N}
//   MoltZap  ws://127.0.0.1:P/ws?events=N    agent/network/connect → HelloOk {}, then N
//                                            `messages/received` notifications
//   Switch   http://127.0.0.1:P/flood/N      (the relay URL) → /flood/N/agents/{agent}/connection/ws
//                                            echoes `agentwire.v1`, connection_state, then N
//                                            `message` events (a `ping` every 2 s between them)
//
// Run as a script (a child process, so it has its own core), it reports its ports over IPC (or
// as one JSON line on stdout) and exits when its parent goes away.
import { createServer } from "node:http";
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { WebSocketServer } from "ws";
import { moltzapReceived, rktMessage, rktStreamData, switchConnectionState, switchMessages, SWITCH_PING } from "./frames.mjs";

const MAX_EVENTS = 20_000_000;
/** Bytes of frames built per write. */
const BATCH_BYTES = 128 * 1024;
const SWITCH_HEARTBEAT_S = 2;

/** The header of an unmasked, final text frame of `len` bytes. */
function header(buf, off, len) {
  buf[off] = 0x81;
  if (len < 126) {
    buf[off + 1] = len;
    return off + 2;
  }
  if (len < 65536) {
    buf[off + 1] = 126;
    buf.writeUInt16BE(len, off + 2);
    return off + 4;
  }
  buf[off + 1] = 127;
  buf.writeBigUInt64BE(BigInt(len), off + 2);
  return off + 10;
}

/** Frames `texts` (ASCII) into one buffer. */
function frameAll(texts) {
  let size = 0;
  for (const t of texts) size += t.length + 10;
  const buf = Buffer.allocUnsafe(size);
  let off = 0;
  for (const t of texts) {
    off = header(buf, off, t.length);
    off += buf.latin1Write(t, off);
  }
  return buf.subarray(0, off);
}

/** Builds frames `frameAt(i)` from `i` on until about BATCH_BYTES, `extra()` (pings) between. */
function batch(frameAt, i, end, extra) {
  const texts = [];
  let bytes = 0;
  while (i < end && bytes < BATCH_BYTES) {
    const t = frameAt(i++);
    texts.push(t);
    bytes += t.length;
  }
  const x = extra?.();
  if (x) texts.push(x);
  return { buf: frameAll(texts), next: i };
}

/** Sends frames `from..end` of `frameAt` on `ws`'s socket as fast as it drains; `extra` may add
 * a frame after each batch; `tail` frames go last. Resolves with the count sent (less when the
 * socket closed first). */
async function flood(ws, from, end, frameAt, { extra, tail = [] } = {}) {
  const sock = ws._socket;
  let closed = false;
  const onClose = () => (closed = true);
  sock.once("close", onClose);
  try {
    let i = from;
    let next = batch(frameAt, i, end, extra);
    while (!closed) {
      const ok = sock.write(next.buf);
      i = next.next;
      if (i >= end) break;
      next = batch(frameAt, i, end, extra); // built while the socket drains
      if (!ok && !closed) {
        await new Promise((resolve) => {
          const done = () => {
            sock.off("drain", done);
            sock.off("close", done);
            resolve();
          };
          sock.on("drain", done);
          sock.on("close", done);
        });
      }
    }
    if (!closed && tail.length) sock.write(frameAll(tail));
    return i - from;
  } finally {
    sock.off("close", onClose);
  }
}

function events(n) {
  const v = Number(n);
  if (!Number.isInteger(v) || v < 1 || v > MAX_EVENTS) throw new Error(`bad event count ${n}`);
  return v;
}

// ---- RKT ------------------------------------------------------------------------------------

/** Type, headers (lowercase names) and body text of an RKT message from one of our clients. */
function parseRkt(text) {
  const nl = text.indexOf("\n");
  const type = text.slice(0, nl < 0 ? text.length : nl).trim().split(" ")[1];
  const brace = text.indexOf("\n{");
  const head = brace < 0 ? text : text.slice(0, brace);
  const headers = {};
  for (const line of head.split("\n").slice(1)) {
    const c = line.indexOf(":");
    if (c > 0) headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
  }
  return { type, headers, body: brace < 0 ? undefined : text.slice(brace + 1) };
}

function rktServer(wss) {
  let ids = 0;
  const mid = () => `0196${(++ids).toString(16).padStart(4, "0")}-0000-7000-ab12-${Date.now().toString(16).padStart(12, "0")}`;
  wss.on("connection", (ws) => {
    let session = "unknown";
    const reply = (type, to, extra, body) =>
      rktMessage(
        type,
        [["Version", 1], ["Message-ID", mid()], ["Reply-To", to], ["Session-ID", session], ["Timestamp", new Date().toISOString()], ...extra],
        body,
      );
    ws.on("message", (data) => {
      const m = parseRkt(data.toString());
      const id = m.headers["message-id"];
      if (m.type === "HELLO") {
        session = m.headers["session-id"] ?? session;
        ws.send(
          reply(
            "HELLO_ACK",
            id,
            [["From", "rkt://127.0.0.1"], ["User-Agent", "agentwire-bench-flood/1.0"], ["Capabilities", "bench"]],
            `{"agreed_version":1,"session_timeout":300}`,
          ),
        );
      } else if (m.type === "REQUEST") {
        let req;
        try {
          req = JSON.parse(m.body);
        } catch {
          return;
        }
        const n = events(req.params?.count);
        const from = [["From", "rkt://127.0.0.1"]];
        ws.send(reply("STREAM_BEGIN", id, from, JSON.stringify({ intent: req.intent })));
        const end = reply("STREAM_END", id, from, JSON.stringify({ count: n }));
        flood(ws, 0, n, rktStreamData(id, session), { tail: [end] }).catch(() => {});
      } else if (m.type === "PING") {
        ws.send(reply("PONG", id, []));
      } else if (m.type === "GOODBYE") {
        ws.close(1000);
      }
    });
  });
}

// ---- MoltZap --------------------------------------------------------------------------------

function moltzapServer(wss) {
  wss.on("connection", (ws, req) => {
    const n = events(new URL(req.url, "http://x").searchParams.get("events") ?? 1000);
    ws.on("message", (data) => {
      let m;
      try {
        m = JSON.parse(data.toString());
      } catch {
        return;
      }
      if (m.method === "agent/network/connect") {
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: {} }));
        flood(ws, 0, n, moltzapReceived()).catch(() => {});
      } else if (m.id !== undefined) {
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found", _tag: "MethodNotFound" } }));
      }
    });
  });
}

// ---- Switch ---------------------------------------------------------------------------------

const SWITCH_PATH = /^\/flood\/(\d+)\/agents\/([^/]+)\/connection\/ws$/;

function switchServer(wss) {
  wss.on("connection", (ws, req) => {
    const url = new URL(req.url, "http://x");
    const [, n, agent] = SWITCH_PATH.exec(url.pathname);
    const rooms = (url.searchParams.get("rooms") ?? "").split(",").filter(Boolean);
    const connectionId = url.searchParams.get("connection_id") ?? "00000000-0000-4000-8000-000000000000";
    ws.send(switchConnectionState({ connectionId, agentId: decodeURIComponent(agent), rooms, heartbeatS: SWITCH_HEARTBEAT_S }));
    let lastPing = Date.now();
    const ping = () => {
      const now = Date.now();
      if (now - lastPing < SWITCH_HEARTBEAT_S * 1000) return undefined;
      lastPing = now;
      return SWITCH_PING;
    };
    const timer = setInterval(() => ping() && ws.send(SWITCH_PING), SWITCH_HEARTBEAT_S * 1000); // while idle
    ws.on("close", () => clearInterval(timer));
    flood(ws, 0, events(n), switchMessages(rooms[0] ?? "47e911ea-014b-427b-a600-1c72595f0c98"), { extra: ping }).catch(() => {});
    // Pongs ({"type":"pong","cursor":N}) are read and ignored.
  });
}

// ---- the three servers ----------------------------------------------------------------------

function listen(handle, protocol, paths) {
  const http = createServer((_, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 1 << 20,
    handleProtocols: (offered) => (protocol === undefined ? false : offered.has(protocol) ? protocol : false),
  });
  http.on("upgrade", (req, socket, head) => {
    const path = new URL(req.url, "http://x").pathname;
    if (!paths.test(path)) return socket.end("HTTP/1.1 404 Not Found\r\n\r\n");
    if (protocol !== undefined && !(req.headers["sec-websocket-protocol"] ?? "").split(",").some((p) => p.trim() === protocol)) {
      return socket.end("HTTP/1.1 400 Bad Request\r\n\r\n");
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws._socket.setNoDelay(true);
      wss.emit("connection", ws, req);
    });
  });
  handle(wss);
  return new Promise((ok) => http.listen(0, "127.0.0.1", () => ok({ http, wss, port: http.address().port })));
}

/** Starts the three servers in this process; resolves with their URLs and `close()`. */
export async function startFloodServers() {
  const servers = await Promise.all([
    listen(rktServer, "rkt.1.0", /^\/rkt$/),
    listen(moltzapServer, undefined, /^\/ws$/),
    listen(switchServer, "agentwire.v1", SWITCH_PATH),
  ]);
  const [rkt, moltzap, sw] = servers.map((s) => s.port);
  return {
    ports: { rkt, moltzap, switch: sw },
    close: () => {
      for (const s of servers) {
        for (const c of s.wss.clients) c.terminate();
        s.wss.close();
        s.http.close();
      }
    },
  };
}

/** The URL a client of `protocol` uses for `n` events on `ports`. */
export function floodUrl(ports, protocol, n) {
  if (protocol === "rkt") return `ws://127.0.0.1:${ports.rkt}/rkt`;
  if (protocol === "moltzap") return `ws://127.0.0.1:${ports.moltzap}/ws?events=${n}`;
  return `http://127.0.0.1:${ports.switch}/flood/${n}`;
}

/** Starts the servers in a child process (its own core); resolves with the ports and `stop()`. */
export function spawnFloodServers(timeoutMs = 15_000) {
  const child = fork(fileURLToPath(import.meta.url), [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error("the flood servers did not start"));
    }, timeoutMs);
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`the flood servers exited (${code})`)));
    child.once("message", (ports) => {
      clearTimeout(timer);
      child.removeAllListeners("exit");
      resolve({
        ports,
        pid: child.pid,
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null) return done();
            const t = setTimeout(() => child.kill("SIGKILL"), 3000);
            child.once("exit", () => {
              clearTimeout(t);
              done();
            });
            child.disconnect();
          }),
      });
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { ports, close } = await startFloodServers();
  if (process.send) {
    process.send(ports);
    process.on("disconnect", () => {
      close();
      process.exit(0);
    });
  } else {
    console.log(JSON.stringify(ports));
    process.on("SIGINT", () => {
      close();
      process.exit(0);
    });
  }
}

// A hostile server on 127.0.0.1 for the bad-input scenarios: each path misbehaves in one way.
//   /rkt/garbage      HELLO answered with garbage text, a binary frame and invalid UTF-8, then a 1011 close
//   /rkt/midrequest   a real HELLO_ACK, then the socket dies (no close frame) at the first REQUEST
//   /rkt/huge         a real HELLO_ACK, then a text frame of 64 MiB + 1 at the first REQUEST
//   /moltzap/garbage  the connect answered, then garbage and binary at the first call, then the socket dies
//   /switch/...       (any /agents/ path) the upgrade accepted with agentwire.v1, garbage, then the socket dies
//   /silent           the TCP connection accepted, the WebSocket upgrade never answered
//   /endless-refusal  the upgrade refused with 401 and a chunked body that never ends (30 s at most)
//   /flood/...        a Switch "relay" whose connection attaches (a connection_state, then
//                     silence) and whose operations answer 200 with a chunked body that never
//                     ends (64 KiB chunks until the client goes, at most 30 s)
// Prints `listening on ws://127.0.0.1:PORT`; stops by itself after `--for-ms` (default 120 s).
import http from "node:http";
import { WebSocketServer } from "ws";

const forMs = Number(process.argv[process.argv.indexOf("--for-ms") + 1]) || 120_000;
const GARBAGE = ["", "{", "\u0000\u0001not a frame", "RKT/9.9 HELLO\n\n", '{"jsonrpc":"2.0","id":', "x".repeat(70_000)];

const server = http.createServer((req, res) => {
  if (!req.url.startsWith("/flood/")) return res.writeHead(404).end();
  if (req.method === "OPTIONS") {
    const asked = req.headers["access-control-request-headers"] ?? "";
    const allow = { "access-control-allow-methods": "GET, POST", "access-control-allow-headers": asked };
    return res.writeHead(204, { "access-control-allow-origin": "*", ...allow }).end();
  }
  res.writeHead(200, { "content-type": "application/json", "access-control-allow-origin": "*" });
  writeUntilGone(res, Buffer.alloc(64 << 10, 0x20));
});
const wss = new WebSocketServer({
  server,
  handleProtocols: (protocols) => (protocols.has("rkt.1.0") ? "rkt.1.0" : protocols.has("agentwire.v1") ? "agentwire.v1" : false),
  // /silent: the upgrade request is read and never answered (the callback is never called).
  verifyClient: (info, done) => {
    if (info.req.url.startsWith("/endless-refusal")) return refuseEndlessly(info.req.socket);
    if (!info.req.url.startsWith("/silent")) done(true);
  },
});

function refuseEndlessly(socket) {
  socket.write("HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n");
  writeUntilGone(socket, `4000\r\n${"no ".repeat(0x4000 / 3)}n\r\n`);
}

/** Writes `chunk` to `out` as fast as the peer reads, until the peer goes; 30 s at most. */
function writeUntilGone(out, chunk) {
  const pump = () => {
    while (!out.destroyed && out.write(chunk));
  };
  out.on("drain", pump);
  out.on("error", () => {});
  const stop = setTimeout(() => out.destroy(), 30_000);
  out.on("close", () => clearTimeout(stop));
  pump();
}

function header(text, name) {
  const m = text.match(new RegExp(`^${name}: (.*)$`, "m"));
  return m ? m[1].trim() : "";
}

function helloAck(hello) {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return [
    "RKT/1.0 HELLO_ACK",
    "Version: 1",
    `Message-ID: 01960000-0000-7000-ab12-${String(Date.now()).padStart(12, "0").slice(-12)}`,
    `Reply-To: ${header(hello, "Message-ID")}`,
    `Session-ID: ${header(hello, "Session-ID")}`,
    `Timestamp: ${now}`,
    "From: rkt://garbage",
    "Capabilities: weather",
    "",
    '{"agreed_version":1,"session_timeout":300}',
  ].join("\n");
}

function spew(ws) {
  for (const g of GARBAGE) ws.send(g);
  ws.send(Buffer.from([0xff, 0xfe, 0x00, 0x01]), { binary: true });
}

wss.on("connection", (ws, req) => {
  const path = new URL(req.url, "http://x").pathname;
  ws.on("error", () => {});
  if (path.startsWith("/flood/agents/")) {
    const url = new URL(req.url, "http://x");
    const data = {
      connection_id: url.searchParams.get("connection_id"),
      agent_id: path.split("/")[3],
      generation: 1,
      scope: "single",
      filter: "all",
      spawn_capable: false,
      rooms: [],
      cursor: 0,
      protocol: 1,
      heartbeat_interval_seconds: 30.0,
      server: { version: "0.20.0", contracts: { "agent-protocol": { speaks: 6, accepts: 1 } } },
      client: {},
    };
    ws.send(JSON.stringify({ event: "connection_state", data }));
    return;
  }
  if (path.startsWith("/agents/")) {
    spew(ws);
    setTimeout(() => ws.terminate(), 50);
    return;
  }
  ws.on("message", (data, isBinary) => {
    const text = isBinary ? "" : data.toString();
    if (path === "/rkt/garbage") {
      spew(ws);
      ws.close(1011, "garbage over");
    } else if (path === "/rkt/midrequest") {
      if (text.startsWith("RKT/1.0 HELLO")) ws.send(helloAck(text));
      else if (text.startsWith("RKT/1.0 REQUEST")) ws.terminate();
    } else if (path === "/rkt/huge") {
      if (text.startsWith("RKT/1.0 HELLO")) ws.send(helloAck(text));
      else if (text.startsWith("RKT/1.0 REQUEST")) ws.send("x".repeat((64 << 20) + 1));
    } else if (path === "/moltzap/garbage") {
      let msg;
      try {
        msg = JSON.parse(text);
      } catch {
        return;
      }
      if (msg.method === "agent/network/connect") {
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: {} }));
      } else {
        spew(ws);
        setTimeout(() => ws.terminate(), 50);
      }
    }
  });
});

server.listen(0, "127.0.0.1", () => console.log(`listening on ws://127.0.0.1:${server.address().port}`));
setTimeout(() => {
  for (const c of wss.clients) c.terminate();
  wss.close();
  server.close();
  process.exit(0);
}, forMs).unref();

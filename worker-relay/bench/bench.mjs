#!/usr/bin/env node
// The relay's bench (issue 6, item 7): added latency (p50, p99) and throughput of a WebSocket
// through the relay, against a direct connection to the same upstream and against a bare pipe
// Worker (test/pipe-worker.js: accept, fetch + Upgrade, pipe; nothing else) in the same workerd.
// The upstream is a Node `ws` echo server on 127.0.0.1 (it takes the relay's Authorization).
// The three paths run interleaved, several rounds, a fresh socket per run; medians are reported,
// with the ratios relay / bare pipe (throughput target >= 0.9) and relay / direct.
//
//   node bench/bench.mjs [--rounds 5] [--samples 500] [--messages 5000] [--json]
//
// Needs ./build.sh and gen/relay-token.js (./test.sh builds both). Not a test: numbers vary with
// the machine; see bench/README.md.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { WebSocket, WebSocketServer } from "ws";
import { startRelay, relayVars, token, withToken, cleanup, ORIGIN, ROOT } from "../test/harness.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? dflt : Number(process.argv[i + 1]);
};
const ROUNDS = arg("rounds", 5);
const SAMPLES = arg("samples", 500);
const MESSAGES = arg("messages", 5000);
const WINDOW = 64;
const SIZES = [1024, 64 * 1024];
const AGENT = { id: "agent-bench", key: "sk_switch_bench_key_000000000001" };

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

function echoServer() {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0, maxPayload: 1 << 20 });
  wss.on("connection", (ws) => ws.on("message", (d, isBinary) => ws.send(d, { binary: isBinary })));
  return new Promise((resolve) => wss.on("listening", () => resolve({ wss, url: `http://127.0.0.1:${wss.address().port}` })));
}

/** A connected socket, once one echo came back (the relay accepts the browser's socket before
 * the upstream's is there, and takes only 16 frames meanwhile). */
async function connect({ url, protocols = [], origin }) {
  const ws = new WebSocket(url, protocols, { origin, perMessageDeflate: false, maxPayload: 1 << 20 });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
    ws.once("unexpected-response", (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  await new Promise((resolve) => {
    ws.once("message", resolve);
    ws.send("ready?");
  });
  return ws;
}

/** Round trips one at a time: latencies in ms. */
async function latency(ws, samples) {
  const payload = Buffer.alloc(64, 97);
  const out = [];
  for (let i = 0; i < samples + 50; i++) {
    const t0 = process.hrtime.bigint();
    await new Promise((resolve, reject) => {
      ws.once("message", resolve);
      ws.once("close", () => reject(new Error("closed during the latency run")));
      ws.send(payload);
    });
    ws.removeAllListeners("close");
    if (i >= 50) out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
}

/** `messages` echoes of `size` bytes with WINDOW in flight: messages per second. */
function throughput(ws, size, messages) {
  const payload = Buffer.alloc(size, 98);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let got = 0;
    const t0 = process.hrtime.bigint();
    ws.on("message", () => {
      got += 1;
      if (got === messages) resolve(messages / (Number(process.hrtime.bigint() - t0) / 1e9));
      else if (sent < messages) {
        sent += 1;
        ws.send(payload);
      }
    });
    ws.once("close", (code) => got < messages && reject(new Error(`closed ${code} after ${got} of ${messages}`)));
    for (; sent < Math.min(WINDOW, messages); sent++) ws.send(payload);
  });
}

async function main() {
  const echo = await echoServer();
  const relay = await startRelay(relayVars({ url: echo.url, agents: { bench: AGENT } }, {
    UPSTREAM_GENERATION: "ws",
    RATE_LIMIT_PER_MINUTE: "1000000",
    RATE_LIMIT_BURST: "1000000",
    FRAME_LIMIT_PER_MINUTE: "100000000",
    FRAME_LIMIT_BURST: "1000000",
    // The echo upstream never pings: no idle close between runs.
    UPSTREAM_IDLE_MS: "600000",
  }));
  const pipe = await startRelay({ UPSTREAM: echo.url }, { script: path.join(ROOT, "worker-relay/test/pipe-worker.js") });
  const wsPathOf = (base) => `${base}/agents/${AGENT.id}/connection/ws?connection_id=${crypto.randomUUID()}`;
  const targets = {
    direct: async () => connect({ url: wsPathOf(echo.url.replace("http", "ws")) }),
    pipe: async () => connect({ url: wsPathOf(pipe.wsUrl) }),
    relay: async () => connect({ url: wsPathOf(relay.wsUrl), protocols: withToken(await token(AGENT.id)), origin: ORIGIN }),
  };
  const names = Object.keys(targets);
  const results = Object.fromEntries(names.map((n) => [n, { p50: [], p99: [], ...Object.fromEntries(SIZES.map((s) => [`tput${s}`, []])) }]));
  // Warm-up: one short run each (JIT, wasm, connection setup).
  for (const n of names) {
    const ws = await targets[n]();
    await latency(ws, 50);
    await throughput(ws, 1024, 500);
    ws.close();
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]);
    for (const n of order) {
      let ws = await targets[n]();
      const lat = await latency(ws, SAMPLES);
      results[n].p50.push(pct(lat, 50));
      results[n].p99.push(pct(lat, 99));
      ws.close();
      for (const size of SIZES) {
        ws = await targets[n]();
        results[n][`tput${size}`].push(await throughput(ws, size, size > 4096 ? Math.ceil(MESSAGES / 5) : MESSAGES));
        ws.close();
      }
    }
    process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`);
  }
  const med = Object.fromEntries(names.map((n) => [n, Object.fromEntries(Object.entries(results[n]).map(([k, v]) => [k, median(v)]))]));
  const ratio = (a, b, k) => med[a][k] / med[b][k];
  const report = {
    settings: { rounds: ROUNDS, latencySamples: SAMPLES, messages: MESSAGES, window: WINDOW, sizes: SIZES, node: process.version },
    medians: med,
    addedLatencyMs: {
      relayVsDirect: { p50: med.relay.p50 - med.direct.p50, p99: med.relay.p99 - med.direct.p99 },
      relayVsPipe: { p50: med.relay.p50 - med.pipe.p50, p99: med.relay.p99 - med.pipe.p99 },
      pipeVsDirect: { p50: med.pipe.p50 - med.direct.p50, p99: med.pipe.p99 - med.direct.p99 },
    },
    throughputRatios: Object.fromEntries(SIZES.map((s) => [s, {
      relayOverPipe: ratio("relay", "pipe", `tput${s}`),
      relayOverDirect: ratio("relay", "direct", `tput${s}`),
      pipeOverDirect: ratio("pipe", "direct", `tput${s}`),
    }])),
  };
  if (process.argv.includes("--json")) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    const f = (x, d = 3) => x.toFixed(d);
    console.log(`rounds ${ROUNDS}, ${SAMPLES} round trips of 64 B, ${MESSAGES} x 1 KiB and ${Math.ceil(MESSAGES / 5)} x 64 KiB echoes (${WINDOW} in flight); medians`);
    console.log("path    p50 ms  p99 ms  1KiB msg/s  64KiB msg/s");
    for (const n of names) {
      const m = med[n];
      console.log(`${n.padEnd(7)} ${f(m.p50).padStart(6)}  ${f(m.p99).padStart(6)}  ${m.tput1024.toFixed(0).padStart(10)}  ${m.tput65536.toFixed(0).padStart(11)}`);
    }
    const a = report.addedLatencyMs;
    console.log(`added latency, relay vs direct: p50 ${f(a.relayVsDirect.p50)} ms, p99 ${f(a.relayVsDirect.p99)} ms`);
    console.log(`added latency, relay vs pipe:   p50 ${f(a.relayVsPipe.p50)} ms, p99 ${f(a.relayVsPipe.p99)} ms`);
    for (const s of SIZES) {
      const r = report.throughputRatios[s];
      console.log(`throughput ${s / 1024} KiB: relay/pipe ${f(r.relayOverPipe, 2)} (target >= 0.9), relay/direct ${f(r.relayOverDirect, 2)}, pipe/direct ${f(r.pipeOverDirect, 2)}`);
    }
  }
  await cleanup();
  echo.wss.close();
  for (const c of echo.wss.clients) c.terminate();
}

main().catch(async (e) => {
  console.error(e);
  await cleanup();
  process.exit(1);
});

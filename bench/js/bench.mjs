// The speed benchmark of the npm package (a script, not a timed test): events per second from
// the socket to a user callback, per protocol, agentwire against a minimal pure-JS client on the
// same stream (WebSocket + JSON.parse; the RKT guide's raw parser for RKT), in Node and in
// headless Chromium; then the memory after one 1M-event run per protocol.
//
//   node bench.mjs [--events N] [--runs R] [--memory-events M] [--hosts node,chromium]
//                  [--protocols rkt,moltzap,switch] [--no-memory] [--json FILE]
//
// The flood servers run in a child process (server.mjs). Every run has a timeout, the servers
// and the browser stop at the end, and the script exits by itself (a watchdog ends it if not).
import { spawn } from "node:child_process";
import { cpus, loadavg, totalmem } from "node:os";
import { statSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { spawnFloodServers, floodUrl } from "./server.mjs";
import { run, wasmMemoryBytes } from "./clients.mjs";

const PROTOCOLS = ["rkt", "moltzap", "switch"];
const NAMES = { rkt: "RKT (stream)", moltzap: "MoltZap (messages/received)", switch: "Switch (message events)" };

function parseArgs(argv) {
  const o = { events: 200_000, runs: 3, memoryEvents: 1_000_000, hosts: ["node", "chromium"], protocols: PROTOCOLS, memory: true, json: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    const int = (min) => {
      const v = Number(val());
      if (!Number.isInteger(v) || v < min) throw new Error(`${a}: an integer ≥ ${min}`);
      return v;
    };
    if (a === "--events") o.events = int(1000);
    else if (a === "--runs") o.runs = int(1);
    else if (a === "--memory-events") o.memoryEvents = int(1000);
    else if (a === "--hosts") o.hosts = val().split(",");
    else if (a === "--protocols") o.protocols = val().split(",");
    else if (a === "--no-memory") o.memory = false;
    else if (a === "--json") o.json = val();
    else if (a === "--help" || a === "-h") {
      console.log("node bench.mjs [--events N] [--runs R] [--memory-events M] [--hosts node,chromium] [--protocols rkt,moltzap,switch] [--no-memory] [--json FILE]");
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  for (const h of o.hosts) if (!["node", "chromium"].includes(h)) throw new Error(`unknown host ${h}`);
  for (const p of o.protocols) if (!PROTOCOLS.includes(p)) throw new Error(`unknown protocol ${p}`);
  return o;
}

/** A run's budget: generous (at least 2,000 events/s) but bounded. */
const runTimeout = (n) => 30_000 + Math.ceil(n / 2);

function withTimeout(p, ms, what) {
  let timer;
  return Promise.race([
    p,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fmt = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "—");
const mib = (b) => (b === undefined || b === null ? "—" : `${(b / 1048576).toFixed(1)} MiB`);

/** Warm-up, then `runs` interleaved agentwire / baseline pairs per protocol with `runOne`. */
async function throughput(host, opts, runOne) {
  const rows = [];
  for (const protocol of opts.protocols) {
    const row = { protocol, agentwire: [], baseline: [], errors: [] };
    const warm = Math.min(20_000, opts.events);
    for (const kind of ["agentwire", "baseline"]) {
      try {
        await runOne(kind, protocol, warm);
      } catch (e) {
        row.errors.push(`warm-up ${kind}: ${e.message}`);
      }
    }
    for (let r = 0; r < opts.runs; r++) {
      for (const kind of ["agentwire", "baseline"]) {
        try {
          const res = await runOne(kind, protocol, opts.events);
          row[kind].push(res.rate);
          process.stderr.write(`  ${host} ${protocol} ${kind} run ${r + 1}: ${fmt(res.rate)} events/s\n`);
        } catch (e) {
          row.errors.push(`${kind} run ${r + 1}: ${e.message}`);
          process.stderr.write(`  ${host} ${protocol} ${kind} run ${r + 1}: ERROR ${e.message}\n`);
        }
      }
    }
    // The ceiling: the same stream with a handler that only counts messages (one run).
    try {
      row.socket = (await runOne("socket", protocol, opts.events)).rate;
      process.stderr.write(`  ${host} ${protocol} socket only: ${fmt(row.socket)} messages/s\n`);
    } catch (e) {
      row.errors.push(`socket only: ${e.message}`);
    }
    row.agentwireMedian = median(row.agentwire);
    row.baselineMedian = median(row.baseline);
    row.ratio = row.agentwireMedian / row.baselineMedian;
    rows.push(row);
  }
  return rows;
}

function throughputTable(host, rows, opts) {
  const out = [
    `${host}: ${opts.events.toLocaleString("en-US")} events per run, median of ${opts.runs} interleaved runs each`,
    "",
    "| protocol | agentwire events/s | baseline events/s | ratio (agentwire / baseline) | agentwire runs | baseline runs | socket only (count, no parse) |",
    "|---|---:|---:|---:|---|---|---:|",
  ];
  for (const r of rows) {
    out.push(
      `| ${NAMES[r.protocol]} | ${fmt(r.agentwireMedian)} | ${fmt(r.baselineMedian)} | ${Number.isFinite(r.ratio) ? r.ratio.toFixed(2) : "—"} | ${r.agentwire.map(fmt).join(", ")} | ${r.baseline.map(fmt).join(", ")} | ${fmt(r.socket)} |`,
    );
  }
  for (const r of rows) for (const e of r.errors) out.push(`- ${r.protocol}: ${e}`);
  return out.join("\n");
}

// ---- Node -----------------------------------------------------------------------------------

async function nodeWebSocket() {
  if (typeof globalThis.WebSocket === "function") return { WebSocket: globalThis.WebSocket, which: "the global WebSocket" };
  const undici = await import("undici");
  return { WebSocket: undici.WebSocket, which: "undici's WebSocket (injected)" };
}

async function nodeThroughput(servers, opts) {
  const aw = await import("agentwire");
  const { WebSocket } = await nodeWebSocket();
  return throughput("node", opts, (kind, protocol, n) =>
    run(kind, protocol, { aw, url: floodUrl(servers.ports, protocol, n), n, WebSocket, timeoutMs: runTimeout(n) }),
  );
}

/** One client run in a fresh `node --expose-gc` process (this script with --child-memory), so
 * the heap holds that run only. */
function nodeMemory(servers, kind, protocol, n) {
  const args = ["--expose-gc", fileURLToPath(import.meta.url), "--child-memory", kind, protocol, String(n), JSON.stringify(servers.ports)];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  const done = new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`memory run exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split("\n").at(-1)));
      } catch (e) {
        reject(e);
      }
    });
  });
  return withTimeout(done, runTimeout(n) + 15_000, `node memory ${kind} ${protocol}`).catch((e) => {
    child.kill("SIGKILL");
    throw e;
  });
}

async function childMemory([kind, protocol, n, ports]) {
  const mem = () => {
    const m = process.memoryUsage();
    return { heapUsed: m.heapUsed, rss: m.rss, external: m.external, arrayBuffers: m.arrayBuffers };
  };
  const aw = await import("agentwire");
  const { WebSocket } = await nodeWebSocket();
  globalThis.gc?.();
  const before = mem();
  const count = Number(n);
  const res = await run(kind, protocol, { aw, url: floodUrl(JSON.parse(ports), protocol, count), n: count, WebSocket, timeoutMs: runTimeout(count) });
  const after = mem();
  let afterGc;
  if (globalThis.gc) {
    globalThis.gc();
    afterGc = mem();
  }
  const wasm = kind === "agentwire" ? await wasmMemoryBytes(import.meta.resolve("agentwire")) : undefined;
  console.log(JSON.stringify({ kind, protocol, events: res.events, rate: res.rate, before, after, afterGc, wasm }));
  process.exit(0);
}

function nodeMemoryTable(rows, n) {
  const out = [
    `node: memory after one ${n.toLocaleString("en-US")}-event run (a fresh \`node --expose-gc\` process per run; heap = process.memoryUsage().heapUsed)`,
    "",
    "| protocol | client | events/s | heapUsed before | heapUsed after | heapUsed after gc() | rss after | wasm memory |",
    "|---|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows) {
    if (r.error) {
      out.push(`| ${NAMES[r.protocol]} | ${r.kind} | error: ${r.error} | | | | | |`);
      continue;
    }
    out.push(
      `| ${NAMES[r.protocol]} | ${r.kind} | ${fmt(r.rate)} | ${mib(r.before.heapUsed)} | ${mib(r.after.heapUsed)} | ${mib(r.afterGc?.heapUsed)} | ${mib(r.after.rss)} | ${r.kind === "agentwire" ? mib(r.wasm) : "n/a"} |`,
    );
  }
  return out.join("\n");
}

// ---- Chromium -------------------------------------------------------------------------------

async function chromiumRun(servers, opts) {
  const { launch } = await import("../../tests/js/chromium.mjs");
  const { page, serve } = await import("../../tests/js/serve.mjs");
  const served = await serve({ "/bench.html": page("agentwire bench", "<p>agentwire bench</p>") }, 0, {
    files: ["/bench/js/clients.mjs"],
  });
  let browser;
  try {
    browser = await launch();
    const version = browser.version();
    const pageErrors = [];
    const open = async () => {
      const context = await browser.newContext();
      const tab = await context.newPage();
      tab.on("pageerror", (e) => pageErrors.push(e.message));
      await tab.goto(`${served.origin}/bench.html`);
      await tab.evaluate(async () => {
        await import("agentwire");
        await import("/bench/js/clients.mjs");
      });
      return { context, tab };
    };
    const inPage = (tab, kind, protocol, n) =>
      withTimeout(
        tab.evaluate(
          async ([kind, protocol, url, n, timeoutMs]) => {
            const aw = await import("agentwire");
            const { run } = await import("/bench/js/clients.mjs");
            return await run(kind, protocol, { aw, url, n, WebSocket, timeoutMs });
          },
          [kind, protocol, floodUrl(servers.ports, protocol, n), n, runTimeout(n)],
        ),
        runTimeout(n) + 10_000,
        `chromium ${kind} ${protocol}`,
      );

    const { context, tab } = await open();
    const rows = await throughput("chromium", opts, (kind, protocol, n) => inPage(tab, kind, protocol, n));
    await context.close();

    const memory = [];
    if (opts.memory) {
      for (const protocol of opts.protocols) {
        for (const kind of ["agentwire", "baseline"]) {
          const { context, tab } = await open();
          try {
            const cdp = await context.newCDPSession(tab);
            const heap = async (gc) => {
              if (gc) await cdp.send("HeapProfiler.collectGarbage");
              return (await cdp.send("Runtime.getHeapUsage")).usedSize;
            };
            const before = await heap(true);
            const res = await inPage(tab, kind, protocol, opts.memoryEvents);
            const after = await heap(false);
            const perfMemory = await tab.evaluate(() => performance.memory?.usedJSHeapSize);
            const afterGc = await heap(true);
            const wasm =
              kind === "agentwire"
                ? await tab.evaluate(async () => (await import("/bench/js/clients.mjs")).wasmMemoryBytes(new URL("/npm/dist/browser.js", location.href)))
                : undefined;
            memory.push({ protocol, kind, rate: res.rate, before, after, afterGc, perfMemory, wasm });
            process.stderr.write(`  chromium memory ${protocol} ${kind}: ${fmt(res.rate)} events/s, heap ${mib(after)}\n`);
          } catch (e) {
            memory.push({ protocol, kind, error: e.message });
            process.stderr.write(`  chromium memory ${protocol} ${kind}: ERROR ${e.message}\n`);
          } finally {
            await context.close();
          }
        }
      }
    }
    return { version, rows, memory, pageErrors };
  } finally {
    await browser?.close();
    served.server.close();
  }
}

function chromiumMemoryTable(rows, n) {
  const out = [
    `chromium: memory after one ${n.toLocaleString("en-US")}-event run (a fresh browser context per run; heap = CDP Runtime.getHeapUsage usedSize, gc = HeapProfiler.collectGarbage; performance.memory.usedJSHeapSize as the page sees it)`,
    "",
    "| protocol | client | events/s | JS heap before (after gc) | JS heap after | performance.memory after | JS heap after gc | wasm memory |",
    "|---|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows) {
    if (r.error) {
      out.push(`| ${NAMES[r.protocol]} | ${r.kind} | error: ${r.error} | | | | | |`);
      continue;
    }
    out.push(
      `| ${NAMES[r.protocol]} | ${r.kind} | ${fmt(r.rate)} | ${mib(r.before)} | ${mib(r.after)} | ${mib(r.perfMemory)} | ${mib(r.afterGc)} | ${r.kind === "agentwire" ? mib(r.wasm) : "n/a"} |`,
    );
  }
  return out.join("\n");
}

// ---- main -----------------------------------------------------------------------------------

/** The package's wasm file as measured: size and build time (a rebuild during a run shows). */
function wasmFile() {
  try {
    const st = statSync(new URL("./wasm/agentwire_wasm_bg.wasm", import.meta.resolve("agentwire")));
    return `${st.size} bytes, built ${st.mtime.toISOString()}`;
  } catch {
    return "?";
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  // Everything is bounded by its own timeout; this ends the script if something still hangs.
  const budget =
    120_000 + opts.protocols.length * opts.hosts.length * (2 * opts.runs + 3) * runTimeout(opts.events) +
    (opts.memory ? opts.protocols.length * opts.hosts.length * 2 * (runTimeout(opts.memoryEvents) + 15_000) : 0);
  let servers;
  const watchdog = setTimeout(() => {
    console.error(`bench: not finished within ${Math.round(budget / 1000)} s; stopping`);
    servers?.stop();
    process.exit(2);
  }, budget);
  watchdog.unref();

  const env = {
    date: new Date().toISOString(),
    node: process.version,
    cpu: `${cpus()[0]?.model ?? "?"} × ${cpus().length}`,
    memory: `${Math.round(totalmem() / 1073741824)} GiB`,
    events: opts.events,
    runs: opts.runs,
    memoryEvents: opts.memoryEvents,
    loadStart: loadavg().map((x) => x.toFixed(2)).join(" "),
    wasm: wasmFile(),
  };
  console.error(`bench: ${env.node}, ${env.cpu}; ${opts.events} events per run, ${opts.runs} runs`);
  servers = await spawnFloodServers();
  const results = { env };
  const tables = [];
  try {
    if (opts.hosts.includes("node")) {
      const { which } = await nodeWebSocket();
      console.error(`== node (${which})`);
      results.node = { websocket: which, rows: await nodeThroughput(servers, opts) };
      tables.push(throughputTable(`node ${process.version}, ${which}`, results.node.rows, opts));
      if (opts.memory) {
        results.node.memory = [];
        for (const protocol of opts.protocols) {
          for (const kind of ["agentwire", "baseline"]) {
            try {
              const r = await nodeMemory(servers, kind, protocol, opts.memoryEvents);
              results.node.memory.push(r);
              process.stderr.write(`  node memory ${protocol} ${kind}: ${fmt(r.rate)} events/s, heap ${mib(r.after.heapUsed)}\n`);
            } catch (e) {
              results.node.memory.push({ protocol, kind, error: e.message });
              process.stderr.write(`  node memory ${protocol} ${kind}: ERROR ${e.message}\n`);
            }
          }
        }
        tables.push(nodeMemoryTable(results.node.memory, opts.memoryEvents));
      }
    }
    if (opts.hosts.includes("chromium")) {
      console.error("== chromium (headless, playwright-core)");
      try {
        const c = await chromiumRun(servers, opts);
        results.chromium = c;
        tables.push(throughputTable(`chromium ${c.version} (headless)`, c.rows, opts));
        if (opts.memory) tables.push(chromiumMemoryTable(c.memory, opts.memoryEvents));
        if (c.pageErrors.length) tables.push(`uncaught in the page:\n${c.pageErrors.map((e) => `- ${e}`).join("\n")}`);
      } catch (e) {
        results.chromium = { error: e.message };
        tables.push(`chromium: ERROR ${e.message}`);
      }
    }
  } finally {
    await servers.stop();
  }
  env.loadEnd = loadavg().map((x) => x.toFixed(2)).join(" ");
  if (wasmFile() !== env.wasm) env.wasm += `; CHANGED during the run: now ${wasmFile()}`;
  console.log(`\n${env.date}; ${env.node}; ${env.cpu}; ${env.memory}; load average ${env.loadStart} at the start, ${env.loadEnd} at the end; agentwire wasm ${env.wasm}\n`);
  console.log(tables.join("\n\n"));
  if (opts.json) writeFileSync(opts.json, JSON.stringify(results, null, 2) + "\n");
  clearTimeout(watchdog);
}

if (process.argv[2] === "--child-memory") {
  await childMemory(process.argv.slice(3));
} else {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}

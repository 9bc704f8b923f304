// The agentwire playground: RKT, MoltZap and Switch from a browser page with the package's browser
// entry (the import map maps `agentwire` to /npm/dist/browser.js). Plain ESM, no framework, no
// build step. The peers' URLs and keys come from /playground/config.json (playground/serve.mjs).
import { AgentwireError, MoltZapClient, RktClient, SwitchClient } from "agentwire";

window.playgroundStarted = true; // the package loaded: index.html's load-failure banner stands down
const $ = (id) => document.getElementById(id);
const CONNECT_TIMEOUT_MS = 10_000;
const MAX_ENTRIES = 200;

/** An element: `h("li", {className: "x"}, "text", child)`. */
function h(tag, props = {}, ...children) {
  const el = Object.assign(document.createElement(tag), props);
  el.append(...children.filter((c) => c !== undefined && c !== null));
  return el;
}

/** An error as the page shows it: `kind: message`. */
function describe(e) {
  if (e instanceof AgentwireError) return `${e.kind}: ${e.message}`;
  return `internal: ${e instanceof Error ? e.message : String(e)}`;
}

/** Appends an entry to a log: its kind (`sent`, `result`, `event`, `info`, `error`), a label and
 * a value (text, or anything else shown as JSON). Keeps the newest entries in view. */
function log(list, kind, label, value) {
  const time = new Date().toLocaleTimeString([], { hour12: false });
  const body =
    value === undefined ? undefined : typeof value === "string" ? h("span", { className: "text", textContent: value }) : h("pre", { textContent: JSON.stringify(value, null, 2) });
  const li = h("li", { className: kind }, h("time", { textContent: time }), h("span", { className: "label", textContent: label }), body);
  li.dataset.kind = kind;
  list.append(li);
  while (list.children.length > MAX_ENTRIES) list.firstElementChild.remove();
  list.scrollTop = list.scrollHeight;
}

function setStatus(el, state, text = state) {
  el.dataset.state = state;
  el.textContent = text;
}

/** A column per agent (its status and its timeline) in `container`; returns name → elements. */
function agentColumns(container, prefix, names, title) {
  const columns = {};
  for (const name of names) {
    const status = h("span", { className: "status", id: `${prefix}-status-${name}`, textContent: "idle" });
    status.dataset.state = "idle";
    const list = h("ol", { className: "log", id: `${prefix}-events-${name}` });
    list.dataset.testid = `${prefix}-events-${name}`;
    container.append(h("div", { className: "agent" }, h("h3", {}, title(name), " ", status), list));
    columns[name] = { status, list };
  }
  return columns;
}

/** The panel's status from its agents': connected when all are; else the first of connecting,
 * reconnecting, error, partial (some connected), closed that applies; idle before any connect. */
function overall(el, columns) {
  const states = Object.values(columns).map((c) => c.status.dataset.state);
  const any = (s) => states.includes(s);
  const state = states.length && states.every((s) => s === "connected")
    ? "connected"
    : ["connecting", "reconnecting", "error"].find(any) ?? (any("connected") ? "partial" : any("closed") ? "closed" : "idle");
  setStatus(el, state);
}

/** Runs `send` with `button` disabled (a double click sends once), then `sync` sets the panel's
 * buttons again. */
async function inFlight(button, sync, send) {
  if (button.dataset.busy) return;
  button.dataset.busy = "1";
  button.disabled = true;
  try {
    await send();
  } finally {
    delete button.dataset.busy;
    sync();
  }
}

// The second click of a double click (`detail` 2) is not a second send: a local peer's answer
// can come back between the two clicks, and the busy button above holds only until it does.
for (const id of ["rkt-send", "mz-send", "sw-post"]) {
  $(id).addEventListener("click", (ev) => ev.detail > 1 && ev.preventDefault());
}

/** Whether a button may be clicked: its panel is up and no send of its own is in flight. */
const idle = (id) => !$(id).dataset.busy;

let config;
try {
  const res = await fetch("/playground/config.json");
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  config = await res.json();
} catch (e) {
  const banner = $("page-error");
  banner.hidden = false;
  banner.textContent = `invalid: /playground/config.json could not be read (${e.message}): start the page with scripts/play.sh`;
  config = {};
}

// ---- RKT -------------------------------------------------------------------------------------

const rkt = { client: undefined, log: $("rkt-log"), status: $("rkt-status") };
$("rkt-url").value = config.rkt ?? "ws://127.0.0.1:7749/rkt";

function rktSync() {
  const up = rkt.client !== undefined;
  $("rkt-connect").textContent = up ? "Disconnect" : "Connect";
  for (const id of ["rkt-send", "rkt-discover", "rkt-ping"]) $(id).disabled = !up || !idle(id);
}

async function rktConnect() {
  const url = $("rkt-url").value.trim();
  setStatus(rkt.status, "connecting");
  $("rkt-server").textContent = "";
  $("rkt-connect").disabled = true;
  try {
    const client = await RktClient.connect(url, { timeoutMs: CONNECT_TIMEOUT_MS });
    rkt.client = client;
    setStatus(rkt.status, "connected");
    const s = client.server;
    $("rkt-server").textContent = `${s.userAgent ?? s.url} · RKT ${s.agreedVersion} · capabilities: ${s.capabilities.join(", ")}`;
    log(rkt.log, "info", "connected", url);
    rktWatch(client);
  } catch (e) {
    setStatus(rkt.status, "error");
    log(rkt.log, "error", describe(e));
  } finally {
    $("rkt-connect").disabled = false;
    rktSync();
  }
}

/** What answers no call: errors, GOODBYE, the close. */
async function rktWatch(client) {
  for await (const ev of client.events()) {
    if (ev.type === "error") log(rkt.log, "error", describe(new AgentwireError(ev.error)));
    else if (ev.type === "goodbye") log(rkt.log, "info", "the server said goodbye");
    else if (ev.type === "closed") log(rkt.log, "info", `closed (${ev.code}${ev.reason ? ` ${ev.reason}` : ""})`);
  }
  if (rkt.client === client) {
    rkt.client = undefined;
    setStatus(rkt.status, "closed");
    $("rkt-server").textContent = "";
    rktSync();
  }
}

$("rkt-connect-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  if (rkt.client) rkt.client.close();
  else rktConnect();
});

/** Runs one call, logging its error if it fails. */
async function rktCall(run) {
  try {
    await run();
  } catch (e) {
    log(rkt.log, "error", describe(e));
  }
}

$("rkt-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const client = rkt.client;
  const intent = $("rkt-intent").value.trim();
  const text = $("rkt-params").value.trim();
  if (intent === "") return log(rkt.log, "error", "invalid: the intent is empty (e.g. weather.current)");
  let params;
  try {
    params = text === "" ? undefined : JSON.parse(text);
  } catch (e) {
    return log(rkt.log, "error", `invalid: the params are not JSON (${e.message})`);
  }
  if (!client) return log(rkt.log, "error", "closed: not connected");
  const stream = $("rkt-stream").checked;
  inFlight($("rkt-send"), rktSync, async () => {
    log(rkt.log, "sent", `${stream ? "stream" : "request"} ${intent}`, params);
    await rktCall(async () => {
      if (!stream) return log(rkt.log, "result", `response ${intent}`, await client.request(intent, params));
      let n = 0;
      for await (const chunk of client.stream(intent, params, { timeoutMs: 60_000 })) log(rkt.log, "result", `chunk ${++n}`, chunk);
      log(rkt.log, "info", `stream ended: ${n} chunk${n === 1 ? "" : "s"}`);
    });
  });
});

$("rkt-discover").addEventListener("click", () =>
  rktCall(async () => {
    log(rkt.log, "sent", "discover");
    log(rkt.log, "result", "manifest", await rkt.client.discover());
  }),
);

$("rkt-ping").addEventListener("click", () =>
  rktCall(async () => {
    log(rkt.log, "sent", "ping");
    log(rkt.log, "result", "pong", `${(await rkt.client.ping()).toFixed(1)} ms round trip`);
  }),
);

for (const button of document.querySelectorAll("[data-example]")) {
  button.addEventListener("click", () => {
    const { intent, params, stream } = JSON.parse(button.dataset.example);
    $("rkt-intent").value = intent;
    $("rkt-params").value = JSON.stringify(params);
    $("rkt-stream").checked = stream === true;
  });
}

// ---- MoltZap ---------------------------------------------------------------------------------

const mzKeys = config.moltzapKeys ?? {};
const mz = {
  clients: new Map(),
  /** agent id → name: from the config, and learnt from each message the page sends. */
  names: new Map(Object.entries(config.moltzapIds ?? {}).map(([name, id]) => [id, name])),
  columns: agentColumns($("mz-agents"), "mz", Object.keys(mzKeys), (name) => name),
  status: $("mz-status"),
};
$("mz-server").textContent = config.moltzap ? `${config.moltzap} · agents ${Object.keys(mzKeys).join(", ")}` : "no MoltZap peer configured";
for (const name of Object.keys(mzKeys)) $("mz-from").append(h("option", { value: name, textContent: name }));

const senderName = (id) => mz.names.get(id) ?? (id ? `${id.slice(0, 8)}…` : "?");
const textOf = (message) =>
  Array.isArray(message?.parts) ? message.parts.filter((p) => p.type === "text").map((p) => p.text).join(" ") : undefined;

function mzSync() {
  const up = mz.clients.size > 0;
  $("mz-connect").textContent = up ? "Disconnect" : "Connect";
  $("mz-send").disabled = !up || !idle("mz-send");
  $("mz-recent").disabled = !up;
  $("mz-recent").textContent = `List as ${$("mz-from").value}`;
}

async function mzConnect(name) {
  const { status, list } = mz.columns[name];
  setStatus(status, "connecting");
  try {
    const client = await MoltZapClient.connect(config.moltzap, { agentKey: mzKeys[name], generation: "auto", timeoutMs: CONNECT_TIMEOUT_MS });
    mz.clients.set(name, client);
    setStatus(status, "connected");
    log(list, "info", `connected as ${name}`, `${client.info.generation} generation`);
    mzWatch(name, client);
  } catch (e) {
    setStatus(status, "error");
    log(list, "error", describe(e));
  }
}

/** An agent's pushes, live. */
async function mzWatch(name, client) {
  const { status, list } = mz.columns[name];
  for await (const ev of client.events()) {
    if (ev.type === "messageReceived") {
      const message = ev.data?.message ?? ev.data;
      log(list, "event", `message from ${senderName(ev.senderId ?? message?.senderId)}`, textOf(message) ?? message);
    } else if (ev.type === "diagnostic") {
      log(list, "error", describe(new AgentwireError(ev.error)));
    } else if (ev.type === "disconnected") {
      log(list, "info", `disconnected (${ev.code}${ev.reason ? ` ${ev.reason}` : ""})`);
    } else if (ev.type === "presenceChanged") {
      log(list, "event", `presence: ${senderName(ev.agentId)} ${ev.status ?? ""}`);
    } else if (ev.type === "missedPings") {
      log(list, "info", `missed ${ev.count} pings`);
    } else {
      log(list, "event", ev.type === "other" ? ev.name : ev.type, ev.data);
    }
  }
  if (mz.clients.get(name) === client) {
    mz.clients.delete(name);
    setStatus(status, "closed");
    overall(mz.status, mz.columns);
    mzSync();
  }
}

$("mz-connect").addEventListener("click", async () => {
  const button = $("mz-connect");
  button.disabled = true;
  if (mz.clients.size > 0) {
    await Promise.all([...mz.clients.values()].map((c) => c.close()));
  } else {
    setStatus(mz.status, "connecting");
    await Promise.all(Object.keys(mzKeys).map(mzConnect));
  }
  overall(mz.status, mz.columns);
  button.disabled = false;
  mzSync();
});

$("mz-from").addEventListener("change", mzSync);

$("mz-send-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const from = $("mz-from").value;
  const to = $("mz-to").value.trim();
  const text = $("mz-text").value;
  const { list } = mz.columns[from];
  const client = mz.clients.get(from);
  if (!client) return log(list, "error", `closed: ${from} is not connected`);
  if (to === "") return log(list, "error", `invalid: say whom to send to in To (${Object.keys(mzKeys).join(" or ")})`);
  if (text.trim() === "") return log(list, "error", "invalid: the message is empty");
  await inFlight($("mz-send"), mzSync, async () => {
    log(list, "sent", `to ${to}`, text);
    try {
      const sent = await client.send({ agent: to }, text);
      if (sent?.message?.senderId) mz.names.set(sent.message.senderId, from);
    } catch (e) {
      log(list, "error", describe(e));
    }
  });
});

$("mz-recent").addEventListener("click", async () => {
  const as = $("mz-from").value;
  const list = $("mz-recent-list");
  const client = mz.clients.get(as);
  list.replaceChildren();
  $("mz-recent-as").textContent = `(${as}'s view)`;
  if (!client) return log(list, "error", `closed: ${as} is not connected`);
  try {
    const result = await client.recentMessages({ limit: 20 });
    const messages = Array.isArray(result) ? result : (result?.messages ?? []);
    if (messages.length === 0) log(list, "info", "no messages yet");
    for (const m of messages) log(list, "result", senderName(m.senderId), textOf(m) ?? m);
  } catch (e) {
    log(list, "error", describe(e));
  }
});

// ---- Switch ----------------------------------------------------------------------------------

const sw = { clients: new Map(), status: $("sw-status") };
const swAgents = config.switchAgents ?? {};
const lobby = config.switchLobby;
const relay = config.switchRelay;

const facts = [
  ["Peer", config.switch ? `${config.switch} (WebSocket and SSE)` : "not configured"],
  ["Room", lobby ? `lobby ${lobby}` : "–"],
  ...Object.entries(swAgents).map(([name, a]) => [`Agent ${name}`, a.id]),
];
for (const [term, value] of facts) $("sw-facts").append(h("dt", { textContent: term }), h("dd", { textContent: value }));

if (!relay) {
  setStatus(sw.status, "needs relay", "needs the relay");
  $("sw-no-relay").hidden = false;
  const bin = config.cli ?? "agentwire";
  // The key in the environment, not an argument: any local user sees a process's arguments.
  const key = (name) => `SWITCH_AGENT_KEY=${swAgents[name]?.key ?? "KEY"}`;
  const agent = (name) => `--agent ${swAgents[name]?.id ?? "ID"}`;
  const url = config.switch ?? "http://127.0.0.1:7751";
  $("sw-cli").textContent = [
    `# bob watches all his rooms (the lobby among them)`,
    `${key("bob")} ${bin} switch watch --url ${url} ${agent("bob")} --scope all`,
    `# alice posts to it`,
    `${key("alice")} ${bin} switch post --url ${url} ${agent("alice")} --room ${lobby ?? "ROOM_ID"} "hello @bob"`,
    `# the operations the server offers`,
    `${key("alice")} ${bin} switch ops --url ${url} ${agent("alice")}`,
  ].join("\n");
} else {
  $("sw-relay").hidden = false;
  $("sw-relay-url").textContent = `through the relay ${relay.url}`;
  sw.columns = agentColumns($("sw-agents"), "sw", ["alice", "bob"], (name) => (name === "bob" ? "bob, all his rooms" : name));
}

function swSync() {
  const up = sw.clients.size > 0;
  $("sw-connect").textContent = up ? "Disconnect" : "Connect";
  $("sw-post").disabled = !sw.clients.has("alice") || !idle("sw-post");
}

async function swConnect(name) {
  const { status, list } = sw.columns[name];
  setStatus(status, "connecting");
  try {
    const client = await SwitchClient.connect(relay.url, {
      token: relay.tokens?.[name],
      // The relay closes the socket at the token's exp; a fresh one (the server mints one per
      // config.json) lets the connection reopen and resume.
      refreshToken: async () => (await (await fetch("/playground/config.json")).json()).switchRelay.tokens[name],
      agentId: swAgents[name]?.id,
      // bob watches every room he is in rather than claiming the lobby: a claim would take it from
      // his other connections (a terminal's `switch watch`, another tab) and they from him.
      scope: name === "bob" ? "all" : undefined,
      timeoutMs: CONNECT_TIMEOUT_MS,
    });
    sw.clients.set(name, client);
    setStatus(status, "connected");
    swWatch(name, client);
  } catch (e) {
    setStatus(status, "error");
    log(list, "error", describe(e));
  }
}

/** A connection's event, as its agent's timeline shows it. */
function swShow(list, status, ev) {
  if (ev.type === "event") {
    const p = ev.payload ?? {};
    const room = ev.room_id === undefined || ev.room_id === lobby ? "the lobby" : `room ${ev.room_id}`;
    if (ev.kind === "message") log(list, "event", `${p.sender_name ?? p.sender ?? "?"} in ${room}`, p.body ?? p);
    else log(list, "event", ev.kind, p);
  } else if (ev.type === "connected") {
    setStatus(status, "connected");
    overall(sw.status, sw.columns);
    log(list, "info", ev.resumed ? "resumed" : "connected", `over the ${ev.wire}`);
  } else if (ev.type === "disconnected") {
    const reason = ev.reason || (ev.code === undefined ? "the connection was lost" : `code ${ev.code}`);
    if (ev.retry_in_ms !== undefined) setStatus(status, "reconnecting");
    overall(sw.status, sw.columns);
    log(list, "info", "disconnected", ev.retry_in_ms === undefined ? reason : `${reason} — retrying in ${ev.retry_in_ms} ms`);
  } else if (ev.type === "stopped") {
    if (ev.error) log(list, "error", describe(new AgentwireError(ev.error)));
    else log(list, "info", "stopped");
  } else if (ev.type === "diagnostic") {
    log(list, "error", describe(new AgentwireError(ev.error)));
  } else if (ev.type === "subscription_changed") {
    const rooms = ev.rooms.map((r) => (r === lobby ? "lobby" : r)).join(", ") || "none";
    log(list, "info", "rooms", ev.reason ? `${rooms} (${ev.reason})` : rooms);
  } else {
    log(list, "event", ev.type, ev);
  }
}

/** A connection's events, live (`connected` first). */
async function swWatch(name, client) {
  const { status, list } = sw.columns[name];
  for await (const ev of client.events()) swShow(list, status, ev);
  if (sw.clients.get(name) === client) {
    sw.clients.delete(name);
    setStatus(sw.columns[name].status, "closed");
    overall(sw.status, sw.columns);
    swSync();
  }
}

if (relay) {
  $("sw-connect").addEventListener("click", async () => {
    const button = $("sw-connect");
    button.disabled = true;
    if (sw.clients.size > 0) {
      await Promise.all([...sw.clients.values()].map((c) => c.close()));
    } else {
      setStatus(sw.status, "connecting");
      await Promise.all(["alice", "bob"].map(swConnect));
    }
    overall(sw.status, sw.columns);
    button.disabled = false;
    swSync();
  });

  $("sw-post-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const { list } = sw.columns.alice;
    const client = sw.clients.get("alice");
    const text = $("sw-text").value;
    if (!client) return log(list, "error", "closed: alice is not connected");
    if (text.trim() === "") return log(list, "error", "invalid: the message is empty");
    await inFlight($("sw-post"), swSync, async () => {
      log(list, "sent", "post to the lobby", text);
      try {
        await client.op("connect_to_room", { room_id: lobby });
        await client.op("post_message", { body: text });
      } catch (e) {
        log(list, "error", describe(e));
      }
    });
  });
}

// ---- Start: connect what can be connected ----------------------------------------------------

rktSync();
mzSync();
if (relay) swSync();
if (config.rkt) rktConnect();
if (config.moltzap && Object.keys(mzKeys).length) $("mz-connect").click();
if (relay) $("sw-connect").click();

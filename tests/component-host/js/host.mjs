// A small Node host for the agentwire component, transpiled by jco into ./out (run.sh does it).
// The component is sans-IO: this host owns the sockets and the clock. It feeds each session what
// happens (`handle-*`, with `now` as a BigInt of Date.now()), then drains `poll-transmit` and
// `poll-event`, and runs one timer at `poll-timeout`. The same thing as ../src (wasmtime), from
// Node: `ws` for WebSockets (it can set headers on the upgrade), fetch for HTTP.
import WebSocket from 'ws';
import * as engine from './out/engine.js';

export const { rkt, moltzap } = engine;
/** `switch` is a reserved word: jco exports the interface under the string name 'switch'. */
export const sw = engine['switch'];

export const WAIT_MS = 10_000;

/** The host's clock, as the WIT `millis` (u64, a BigInt in JS). */
export const now = () => BigInt(Date.now());

/** JSON with BigInts as numbers, for failure messages. */
export const show = (v) => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? Number(x) : x));

/** What the three hosts share: feeding inputs, draining, the timer, and bounded waits. */
class Host {
  #events = [];
  #wake = null;
  #timer = undefined;
  #ended = false;

  constructor(session) {
    this.session = session;
  }

  /** Feeds one input, `f(session, now)`, then drains. */
  feed(f) {
    if (this.#ended) return; // a socket or fetch that answers after end()
    f(this.session, now());
    this.drain();
  }

  /** Calls a command, `f(session, now)`, and drains; its value (an `err` result throws). */
  call(f) {
    try {
      return f(this.session, now());
    } finally {
      this.drain();
    }
  }

  /**
   * Carries out every transmit, queues every event, re-arms the timer: the WIT `drain`, one call
   * for what `poll-transmit`, `poll-event` and `poll-timeout` give.
   */
  drain() {
    const { transmits, events, timeout: due } = this.session.drain();
    for (const t of transmits) this.carryOut(t);
    this.#events.push(...events);
    clearTimeout(this.#timer);
    if (due !== undefined) {
      const wait = Math.min(Math.max(0, Number(due) - Date.now()), 2 ** 31 - 1);
      this.#timer = setTimeout(() => this.feed((s, t) => s.handleTimeout(t)), wait).unref();
    }
    if (this.#events.length) this.#wake?.();
  }

  /**
   * Events until `pick(event)` returns something other than undefined, within `ms`:
   * `[that value, the events passed over]`.
   */
  async until(pick, ms = WAIT_MS) {
    const end = Date.now() + ms;
    const skipped = [];
    for (;;) {
      while (this.#events.length) {
        const e = this.#events.shift();
        const v = pick(e);
        if (v !== undefined) return [v, skipped];
        skipped.push(e);
      }
      const left = end - Date.now();
      if (left <= 0) throw new Error(`no matching event within ${ms} ms; passed over ${show(skipped)}`);
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.#wake = () => (clearTimeout(t), resolve());
      });
      this.#wake = null;
    }
  }

  /** Stops the timer and drops the session. */
  end() {
    this.#ended = true;
    clearTimeout(this.#timer);
    this.session[Symbol.dispose]();
  }
}

/**
 * RKT or MoltZap: one WebSocket, its frames fed to the session, the session's `outgoing` frames
 * put on it. `opened` settles when the socket opens (after `handle-open`) or fails to.
 */
class WsHost extends Host {
  constructor(session, url, protocol, { ping = false } = {}) {
    super(session);
    const ws = new WebSocket(url, protocol ? [protocol] : []);
    this.ws = ws;
    this.opened = new Promise((resolve, reject) => {
      ws.once('open', () => (this.feed((s, t) => s.handleOpen(t)), resolve()));
      ws.once('error', reject);
    });
    this.opened.catch(() => {}); // a failed open also reaches the session as a close
    ws.on('message', (data, binary) =>
      this.feed((s, t) => (binary ? s.handleBinary(t, new Uint8Array(data)) : s.handleText(t, data.toString()))),
    );
    ws.on('close', (code, reason) => this.feed((s, t) => s.handleClose(t, code, reason.toString())));
    ws.on('error', () => {}); // a close (1006) follows
    if (ping) ws.on('ping', () => this.feed((s, t) => s.handlePing(t)));
  }

  carryOut(out) {
    if (out.tag === 'close') return close(this.ws, out.val);
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(out.val);
  }

  end() {
    this.ws.removeAllListeners();
    this.ws.on('error', () => {});
    this.ws.terminate();
    super.end();
  }
}

/** An RKT session on a socket opened with the subprotocol `rkt.1.0`; wait for its `ready`. */
export const openRkt = (url, config) => new WsHost(new rkt.Session(config), url, 'rkt.1.0');

/** A MoltZap session on an open socket (no subprotocol), the socket's pings fed to it. */
export async function openMoltZap(url, config) {
  const host = new WsHost(new moltzap.Session(config), url, null, { ping: true });
  await host.opened;
  return host;
}

/** Connection errors that say the request never left: no connection was made. */
const UNSENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * A failed fetch as `op-failed`'s `kind`, `message` and `sent`: fetch's own deadline is a
 * `timeout`, anything else `closed`; sent unless no connection was made.
 */
export function noAnswer(e) {
  const kind = e?.name === 'TimeoutError' ? 'timeout' : 'closed';
  const cause = e?.cause?.code;
  return [kind, cause ? `${e.message}: ${cause}` : String(e?.message ?? e), !UNSENT.has(cause)];
}

/**
 * A Switch connection to `base` (http://host:port) as the agent whose key is `key`, started. It
 * carries out the connection's transmits: `open` as a WebSocket to the origin with the request's
 * headers and `Authorization: Bearer <key>` (an SSE open is answered as failed, so configure
 * `transport: 'websocket'`), `text` on that socket, `http` with fetch, `close`.
 */
export class SwitchHost extends Host {
  constructor(base, key, config) {
    super(new sw.Session(config));
    this.base = base.replace(/\/$/, '');
    this.key = key;
    this.ws = null;
    this.call((s, t) => s.start(t));
  }

  headers(request) {
    return [...request.headers, ['Authorization', `Bearer ${this.key}`]];
  }

  /** Makes an HTTP request the engine wrote: `[status, body]`. */
  async fetch(request) {
    const r = await fetch(this.base + request.path, {
      method: request.method,
      headers: this.headers(request),
      body: request.body,
      signal: AbortSignal.timeout(WAIT_MS),
    });
    return [r.status, await r.text()];
  }

  /**
   * Runs operation `name` with `args` (JSON text) on this connection: its result, JSON text. Its
   * answer goes to `op-result` with the request; a call that got none, to `op-failed`, whose
   * engine error is thrown.
   */
  async op(name, args) {
    const s = this.session;
    const request = sw.opRequest(s.agentId(), s.connectionId(), name, args);
    let answer;
    try {
      answer = await this.fetch(request);
    } catch (e) {
      throw sw.opFailed(request, ...noAnswer(e));
    }
    return sw.opResult(request, ...answer);
  }

  carryOut(t) {
    switch (t.tag) {
      case 'open':
        return this.open(t.val);
      case 'text':
        if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(t.val);
        return;
      case 'http': {
        const { id, request } = t.val;
        this.fetch(request).then(
          ([status, body]) => this.feed((s, n) => s.handleHttpResponse(n, id, status, body)),
          (e) => this.feed((s, n) => s.handleHttpFailed(n, id, String(e))),
        );
        return;
      }
      case 'close':
        return this.drop(t.val);
    }
  }

  /** Replaces the socket; only the current socket's happenings reach the session. */
  open({ wire, request }) {
    this.drop();
    if (wire === 'sse') {
      setImmediate(() => this.feed((s, n) => s.handleOpenError(n, 'this host opens WebSockets only')));
      return;
    }
    const url = this.base.replace(/^http/, 'ws') + request.path;
    const ws = new WebSocket(url, { headers: Object.fromEntries(this.headers(request)) });
    this.ws = ws;
    let open = false;
    const mine = (f) => (...args) => this.ws === ws && f(...args);
    const failed = (status, body) => {
      this.ws = null;
      ws.terminate();
      this.feed((s, n) => s.handleOpenFailed(n, status, body));
    };
    ws.on('open', mine(() => ((open = true), this.feed((s, n) => s.handleOpen(n)))));
    ws.on('unexpected-response', mine((_, res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c) => (body += c));
      res.on('end', mine(() => failed(res.statusCode, body)));
    }));
    ws.on('error', (e) => this.ws === ws && !open && failed(undefined, e.message)); // after open, a close follows
    ws.on('message', mine((data, binary) =>
      this.feed((s, n) => (binary ? s.handleBinary(n, new Uint8Array(data)) : s.handleText(n, data.toString()))),
    ));
    ws.on('close', mine((code, reason) => {
      this.ws = null;
      this.feed((s, n) => s.handleClose(n, code, reason.toString()));
    }));
  }

  /** Closes the current socket, if any, reporting nothing more about it. */
  drop(frame) {
    const ws = this.ws;
    this.ws = null;
    if (ws) close(ws, frame);
  }

  end() {
    this.drop();
    super.end();
  }
}

/** Sends a close frame when the socket is open and the code can be sent; else drops it. */
function close(ws, frame) {
  try {
    if (ws.readyState === WebSocket.OPEN && frame) return ws.close(frame.code, frame.reason);
  } catch {
    // 1005, 1006 and the like cannot go on the wire
  }
  ws.terminate();
}

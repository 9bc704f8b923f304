/// <reference lib="esnext.disposable" preserve="true" />
/** What every client shares: calls with `AbortSignal` and timeouts, bounded async queues, the
 * event fan-out, and the host types the package needs without the DOM library. */
import { AgentwireError, agentwireError, toError } from "./errors.js";

/** The `AbortSignal` members agentwire uses (DOM's and Node's both fit). */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/** A `WebSocket` constructor (the browser's, or e.g. undici's `WebSocket` on Node 20). */
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => object;

/** Options of every call that waits. */
export interface CallOptions {
  /** Abort the call: it rejects with kind `cancelled` (`timeout` for `AbortSignal.timeout`). */
  signal?: AbortSignalLike | undefined;
  /** Give up after this many milliseconds: it rejects with kind `timeout`. `Infinity`: no
   * bound; NaN or a negative number is refused with kind `invalid`. */
  timeoutMs?: number | undefined;
}

/** Options of every `connect`. */
export interface ConnectOptions extends CallOptions {
  /** The `WebSocket` constructor to use instead of the global one (Node 20 has none). */
  webSocket?: WebSocketConstructor | undefined;
  /** Events as they arrive, instead of buffering them for `events()`. */
  onEvent?: ((event: never) => void) | undefined;
  /** Events held for `events()` before the oldest are dropped (default 4096). Switch drops
   * none: past it, events wait in the engine (`maxQueuedEvents`), which replays from its cursor. */
  maxBufferedEvents?: number | undefined;
  /** The same bound in characters of the events' JSON (default 64 Mi). */
  maxBufferedBytes?: number | undefined;
}

/** Calls `f` after `ms` (never when `ms` is undefined or Infinity); a delay past what
 * `setTimeout` holds (2^31 - 1 ms, which it would turn into 1 ms) is waited in steps. A timer
 * firing over 50 ms late (the event loop was held up: user code, a process stopped, a tab
 * frozen) calls `f` one task later, after the socket input read meanwhile (Node runs due timers
 * before the I/O of the same turn): a reply that came in time answers its call. Returns what
 * stops it. Throws kind `invalid` for NaN and negative delays (a `timeoutMs`). */
export function after(ms: number | undefined, f: () => void): () => void {
  let t: ReturnType<typeof setTimeout> | undefined;
  const late = (due: number) => () => (Date.now() - due > 50 ? (t = setTimeout(f, 0)) : f());
  const arm = (left: number) =>
    (t = left > 2147483647 ? setTimeout(() => arm(left - 2147483647), 2147483647) : setTimeout(late(Date.now() + left), left));
  if (ms! < 0 || ms !== ms) throw agentwireError("invalid", `timeoutMs is ${ms}`);
  if (ms! < Infinity) arm(ms!);
  return () => clearTimeout(t);
}

/** `opts.signal`, checked before anything starts: kind `invalid` when it is not an
 * `AbortSignal` (plain JavaScript), which would fail only once the call was sent. */
export function signalOf(opts: CallOptions): AbortSignalLike | undefined {
  const s = opts.signal;
  if (s != null && typeof s.addEventListener != "function") throw agentwireError("invalid", "`signal` is not an AbortSignal");
  return s ?? undefined;
}

export function abortError(signal: AbortSignalLike): AgentwireError {
  const r = signal.reason as { name?: unknown } | undefined;
  if (r !== null && typeof r === "object" && r.name === "TimeoutError") {
    return agentwireError("timeout", "the call timed out (AbortSignal)", signal.reason);
  }
  return agentwireError("cancelled", "the call was aborted", signal.reason);
}

/** What the engines add to the message of a call sent and unanswered
 * (`agentwire_core::MAY_HAVE_RUN`, checked by crates/agentwire-core/tests/npm_facts.rs). */
const MAY_HAVE_RUN = " (it was sent: the server may have carried it out, so making it again may do it twice)";

/** `e` for a call given up on here (`timeoutMs`, `AbortSignal.timeout`) after it was made: a
 * `timeout` is not retryable, as in the engines for a call sent and unanswered, since the
 * package cannot tell whether it left or is safe to repeat. */
export function unanswered(e: AgentwireError): AgentwireError {
  return e.kind === "timeout" ? new AgentwireError({ ...e.info, message: e.message + MAY_HAVE_RUN, retryable: false }, { cause: e.cause }) : e;
}

/** Starts a call with `start(resolve, reject)` (which returns its id) and settles it on its
 * reply, on `signal`, or after `timeoutMs`; the last two also `cancel(id)` it in the engine
 * (which returns true when its frame never left: the error then stays retryable). */
export function call<T>(
  start: (resolve: (v: T) => void, reject: (e: unknown) => void) => string,
  cancel: (id: string) => unknown,
  opts: CallOptions = {},
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const { timeoutMs } = opts;
    const signal = signalOf(opts);
    if (signal?.aborted) return reject(abortError(signal));
    let id: string | undefined;
    let stopTimer = () => {};
    let settled = false;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      stopTimer();
      signal?.removeEventListener("abort", onAbort);
      return true;
    };
    // `cancel` says true when the call's frame never left (held for a backed-up socket).
    const giveUp = (e: AgentwireError) => {
      if (!finish()) return;
      reject(id === undefined || cancel(id) === true ? e : unanswered(e));
    };
    const onAbort = () => giveUp(abortError(signal!));
    // Before the start: a bad timeoutMs throws, and the executor rejects with it.
    stopTimer = after(timeoutMs, () => giveUp(agentwireError("timeout", `no reply within ${timeoutMs} ms`)));
    try {
      id = start(
        (v) => finish() && resolve(v),
        (e) => finish() && reject(toError(e)),
      );
    } catch (e) {
      finish();
      return reject(toError(e));
    }
    if (settled) return;
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** An async iterator over pushed values: `push`, then `end` (or `end(error)`). At most `limit`
 * values wait, and `maxBytes` of their size in all the queues sharing `all` (the queue's own
 * unless given); past it `overflow()` decides (drop the oldest, or end the queue). */
export class Queue<T> implements AsyncIterableIterator<T> {
  /** Each value with its size (what `maxBytes` counts); a slot taken is emptied. */
  #items: ([T, number] | undefined)[] = [];
  #head = 0;
  #bytes = 0;
  #waiting: ((r: IteratorResult<T>) => void)[] = [];
  #failWaiting: ((e: unknown) => void)[] = [];
  #ended = false;
  #error: AgentwireError | undefined;
  /** Values dropped because nobody read them in time. */
  dropped = 0;
  /** Called once when the queue ends, however it ends (to let go of listeners and timers). */
  onEnd: (() => void) | undefined;
  /** Called after a reader took a value. */
  onTaken: (() => void) | undefined;

  constructor(
    readonly limit: number,
    readonly maxBytes: number,
    private readonly onOverflow: (q: Queue<T>) => void,
    private readonly onReturn?: () => void,
    /** The size of the values waiting in every queue that shares it, until this one ends. */
    public all = { n: 0 },
  ) {}

  get size(): number {
    return this.#items.length - this.#head;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** At `limit / k` values, or at `maxBytes / k` (`k` 1: full). */
  over(k = 1): boolean {
    return this.size * k >= this.limit || this.all.n * k >= this.maxBytes;
  }

  /** Queues `v`, of size `n`: past `limit` values or `maxBytes` of size, `onOverflow` first
   * (until there is room, or the queue has ended; one value always fits when the queues sharing
   * `all` are empty),
   * unless `over` (the producer was told to stop, and these were on their way). */
  push(v: T, n: number, over = false): void {
    if (this.#ended) return;
    const w = this.#waiting.shift();
    if (w) {
      this.#failWaiting.shift();
      return w({ value: v, done: false });
    }
    while (!over && (this.size || this.all.n) && (this.size >= this.limit || this.all.n + n > this.maxBytes)) {
      const [size, all] = [this.size, this.all.n];
      this.onOverflow(this);
      if (this.#ended) return;
      // A policy that made no room (dropping the oldest of an empty queue whose sharers hold the
      // bytes): the value is taken, over the bound by this one value, rather than loop for ever.
      if (this.size === size && this.all.n === all) break;
    }
    this.#items.push([v, n]);
    this.#bytes += n;
    this.all.n += n;
  }

  /** Drops the oldest value (an overflow policy). */
  dropOldest(): void {
    if (this.size === 0) return;
    this.#take();
    this.dropped++;
  }

  /** Takes the oldest value out: its slot is emptied (nothing keeps a value taken or dropped),
   * and the array is cut once most of it is empty slots. */
  #take(): T {
    const [value, n] = this.#items[this.#head]!;
    this.#items[this.#head++] = undefined;
    this.#bytes -= n;
    this.all.n -= n;
    if (this.size === 0 || (this.#head > 1024 && this.#head * 2 > this.#items.length)) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return value;
  }

  /** Ends the queue once the values waiting are read. `error` goes to every reader waiting, or
   * else to the next read after the values; the reads after it are the end. */
  end(error?: AgentwireError): void {
    if (this.#ended) return;
    this.#ended = true;
    // An ended queue grows no more: what it holds leaves the shared bound (for the reader, or
    // the garbage collector, to free), so an abandoned one does not take the others' room.
    this.all.n -= this.#bytes;
    this.all = { n: this.#bytes };
    this.onEnd?.();
    this.onEnd = undefined;
    const waiting = this.#waiting.splice(0);
    const failing = this.#failWaiting.splice(0);
    if (!waiting.length) this.#error = error;
    waiting.forEach((w, i) => (error ? failing[i]!(error) : w({ value: undefined, done: true })));
  }

  /** Gives the next value (or the end) to `resolve`, now or once it comes; the end with an
   * error to `reject`. */
  wait(resolve: (r: IteratorResult<T>) => void, reject: (e: unknown) => void): void {
    if (this.size > 0) return resolve(this.#shift());
    if (this.#ended) {
      const e = this.#error;
      this.#error = undefined;
      return e ? reject(e) : resolve({ value: undefined, done: true });
    }
    this.#waiting.push(resolve);
    this.#failWaiting.push(reject);
  }

  /** Stops a `wait` that has not been given anything yet (`resolve` as given to it). */
  unwait(resolve: (r: IteratorResult<T>) => void): void {
    const i = this.#waiting.indexOf(resolve);
    if (i < 0) return;
    this.#waiting.splice(i, 1);
    this.#failWaiting.splice(i, 1);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.size > 0) return Promise.resolve(this.#shift());
    return new Promise((resolve, reject) => this.wait(resolve, reject));
  }

  #shift(): IteratorResult<T> {
    const r: IteratorResult<T> = { value: this.#take(), done: false };
    this.onTaken?.();
    return r;
  }

  /** Drops the values waiting, then `end(error)`: the next read is the error (an abort, where
   * the values left unread are not wanted). */
  fail(error?: AgentwireError): void {
    this.#items = [];
    this.#head = 0;
    this.all.n -= this.#bytes;
    this.#bytes = 0;
    this.end(error);
  }

  return(): Promise<IteratorResult<T>> {
    const live = !this.#ended;
    this.fail();
    if (live) this.onReturn?.();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}

/** The payload as the engine's `to_json` has it: the raw text parsed as JSON, or the text
 * itself when it is not JSON. */
function parsePayload(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

const UNPARSED: unique symbol = Symbol("unparsed");
/** Where an event keeps its payload's state: `[raw text, value or UNPARSED]`. A key of the event
 * (not a private field, which only the event itself has): the getter also works for a Proxy
 * around the event that passes itself as the receiver (Vue's `reactive`) and for an object
 * inheriting from it. Not enumerable, so out of `JSON.stringify`, spread, `Object.keys` and
 * `assert.deepStrictEqual`; the array is not extensible, which keeps Vue from wrapping it. */
const STATE: unique symbol = Symbol("payload");
type Lazy = { [STATE]: [string | undefined, unknown] };

/** One descriptor for every lazy field (one shape for every event of a kind). Without a
 * prototype: `defineProperty` reads `value` and `writable` through it, and another library's
 * `Object.prototype.value` made every payload's definition throw. */
const LAZY = {
  __proto__: null,
  get(this: Lazy) {
    const s = this[STATE];
    if (s[1] !== UNPARSED) return s[1];
    const value = parsePayload(s[0]!);
    // Kept, unless a deep freeze that went through the event's keys froze the array.
    if (!Object.isFrozen(s)) {
      s[0] = undefined;
      s[1] = value;
    }
    return value;
  },
  set(this: Lazy, value: unknown) {
    const s = this[STATE];
    s[0] = undefined;
    s[1] = value;
  },
  enumerable: true,
  configurable: true,
} as PropertyDescriptor;

/** Makes `o[field]` the payload `raw`, parsed on first read (and kept): a callback that never
 * reads it never pays for the parse. The property is own and enumerable, so `JSON.stringify`,
 * spread and `Object.keys` see it as if it had been parsed eagerly. */
function lazyField(o: object, field: string, raw: string): void {
  // Configurable: a Proxy's `get` may then give another value for it.
  Object.defineProperty(o, STATE, { __proto__: null, value: Object.preventExtensions([raw, UNPARSED]), configurable: true } as PropertyDescriptor);
  Object.defineProperty(o, field, LAZY);
}

/** A client's events: to `onEvent` when given, else buffered for `events()`; the queue ends
 * after the event of type `last`. Past the buffer's bounds the oldest are dropped, unless the
 * driver can hold events back (`hold`: Switch, whose engine replays from its cursor). */
export class Events<E extends { type: string }> {
  readonly #queue: Queue<E> | undefined;
  readonly #onEvent: ((e: E) => void) | undefined;
  #closed = false;
  readonly #whenClosed: Promise<void>;
  #markClosed!: () => void;

  constructor(
    private readonly last: string,
    opts: ConnectOptions,
  ) {
    const { onEvent } = opts;
    const maxBufferedEvents = opts.maxBufferedEvents ?? 4096;
    const maxBufferedBytes = opts.maxBufferedBytes ?? 1 << 26;
    if (onEvent != null && typeof onEvent != "function") throw agentwireError("invalid", "`onEvent` is not a function");
    for (const [k, v] of Object.entries({ maxBufferedEvents, maxBufferedBytes })) if (typeof v != "number" || !(v >= 0)) throw agentwireError("invalid", `\`${k}\` is ${typeof v == "string" ? JSON.stringify(v) : typeof v == "bigint" ? v + "n" : String(v)}, not a number ≥ 0`);
    this.#onEvent = onEvent as ((e: E) => void) | undefined;
    if (!this.#onEvent) this.#queue = new Queue<E>(maxBufferedEvents, maxBufferedBytes, (q) => q.dropOldest());
    this.#whenClosed = new Promise((r) => (this.#markClosed = r));
  }

  /** Sees every event first (a connect waiting for its outcome). */
  tap: ((e: E) => void) | undefined;

  /** Tells the driver to hold events back (`true`: the buffer is full) or to hand them over
   * again (`false`: it is under half full). */
  set hold(hold: (held: boolean) => void) {
    const q = this.#queue;
    if (!q) return;
    let held = false;
    this.#hold = () => {
      if (!held && q.over()) hold((held = true));
    };
    q.onTaken = () => {
      if (held && (!q.size || !q.over(2))) hold((held = false));
    };
  }
  #hold: (() => void) | undefined;

  /** One event from the engine, as JSON text; or its envelope, with the payload's field and
   * raw JSON apart (parsed on first use: see `lazyField`). */
  readonly emit = (json: string, field?: string, raw?: string): void => {
    const event = JSON.parse(json) as E;
    // Read before the event is handed over: it is the app's (a callback may rename its `type`).
    const last = event.type === this.last;
    if (field !== undefined) lazyField(event, field, raw!);
    this.tap?.(event);
    if (this.#onEvent) {
      // A throw, or the rejection of a promise it returns (an async callback), is logged.
      new Promise((r) => r(this.#onEvent!(event))).catch((e) => console.error(e));
    } else {
      this.#queue!.push(event, json.length + (raw?.length ?? 0), !!this.#hold);
      this.#hold?.();
    }
    if (last) {
      this.#closed = true;
      this.#queue?.end();
      this.#markClosed();
    }
  };

  get closed(): boolean {
    return this.#closed;
  }

  /** Resolves once the last event has been emitted. */
  get done(): Promise<void> {
    return this.#whenClosed;
  }

  /** Resolves once the last event has been emitted, or after `graceMs`. */
  whenClosed(graceMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((r) => (timer = setTimeout(r, graceMs)));
    return Promise.race([this.#whenClosed, grace]).finally(() => clearTimeout(timer));
  }

  /** The buffered events as an async iterator (ends after the connection closes). Leaving a
   * loop over it (`break`, `return()`) ends that iterator only: the events keep being buffered
   * for the next `iterator()`. Each event goes to one reader. */
  iterator(): AsyncIterableIterator<E> {
    const queue = this.#queue;
    if (!queue) throw agentwireError("state", "events go to the onEvent callback given to connect");
    const end: IteratorResult<E> = { value: undefined, done: true };
    let left = false;
    // This view's `next()`s still waiting: `return()` ends them, and they take nothing after.
    const waiting = new Set<(r: IteratorResult<E>) => void>();
    const view: AsyncIterableIterator<E> = {
      next: () =>
        new Promise<IteratorResult<E>>((resolve, reject) => {
          if (left) return resolve(end);
          const got = (r: IteratorResult<E>) => {
            waiting.delete(got);
            resolve(r);
          };
          waiting.add(got);
          queue.wait(got, (e) => {
            waiting.delete(got);
            reject(e);
          });
        }),
      return: () => {
        left = true;
        for (const got of waiting) {
          queue.unwait(got);
          got(end);
        }
        return Promise.resolve(end);
      },
      [Symbol.asyncIterator]: () => view,
    };
    return view;
  }

  /** Events dropped because nobody read them. */
  get dropped(): number {
    return this.#queue?.dropped ?? 0;
  }
}

/** Splits connect (or request) options into the engine's (sent as JSON) and the package's own;
 * NaN and ±Infinity are refused with kind `invalid` (see `finite`). */
export function engineOptions(opts: object, what = "the options"): string {
  const { webSocket, signal, timeoutMs, onEvent, maxBufferedEvents, maxBufferedBytes, ...engine } = opts as ConnectOptions &
    Record<string, unknown>;
  void webSocket, signal, timeoutMs, onEvent, maxBufferedEvents, maxBufferedBytes;
  return jsonArg(engine, what, finite);
}

/** Refuses NaN and ±Infinity in options: JSON makes them null, which the engine takes for
 * absent (the default). No engine option has an infinite value. */
function finite(k: string, v: unknown): unknown {
  if (typeof v == "number" && !isFinite(v)) throw Error(`\`${k}\` is ${v}`);
  return v;
}

/** `Symbol.asyncDispose`, where the host has one (Node 20 may not). */
export const asyncDispose: typeof Symbol.asyncDispose =
  (Symbol as { asyncDispose?: typeof Symbol.asyncDispose }).asyncDispose ??
  (Symbol.for("Symbol.asyncDispose") as typeof Symbol.asyncDispose);

/** An engine reply body as the engine's `to_json` has it: `undefined` for none, the text
 * parsed as JSON, or the text itself when it is not JSON (RKT bodies are not checked). */
export function parseBody<T>(body: string | undefined): T {
  return (body === undefined ? undefined : parsePayload(body)) as T;
}

/** `JSON.stringify(v)` for a call's argument `what`: what JSON cannot hold (a BigInt, a cycle,
 * a function) is an `invalid` error, thrown where the call turns it into its rejection. */
export function jsonArg(v: unknown, what: string, replacer?: (k: string, v: unknown) => unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(v, replacer);
  } catch (e) {
    throw agentwireError("invalid", `${what} is not JSON: ${e instanceof Error ? e.message : String(e)}`, e);
  }
  if (text === undefined) throw agentwireError("invalid", `${what} is not JSON: ${typeof v}`);
  return text;
}

/** A driver `close()`s. */
interface Closable {
  close(): void;
  /** Added to a timeout's message: what the connection last met. */
  why?: string;
}

/** Opens a driver with `make(onReady, onFail)` and resolves with `ready(driver, readyJson)`
 * once the engine reports the connection ready; rejects on failure, on `signal` and after
 * `timeoutMs` (closing the driver). */
export function open<E extends { type: string }, D extends Closable, C>(
  opts: ConnectOptions,
  last: string,
  make: (events: Events<E>, onReady: (json: string) => void, onFail: (e: unknown) => void) => D,
  ready: (driver: D, events: Events<E>, json: string) => C,
  what: string,
): Promise<C> {
  return new Promise<C>((resolve, reject) => {
    // Options that cannot work (read here, so that a throwing getter rejects too) reject with
    // `invalid` before anything opens.
    const { timeoutMs } = opts;
    const signal = signalOf(opts);
    const events = new Events<E>(last, opts);
    if (signal?.aborted) return reject(abortError(signal));
    let driver: D | undefined;
    let stopTimer = () => {};
    let settled = false;
    const done = () => {
      settled = true;
      stopTimer();
      signal?.removeEventListener("abort", onAbort);
    };
    const fail = (e: AgentwireError) => {
      if (settled) return;
      done();
      reject(e);
      driver?.close();
    };
    const onAbort = () => fail(abortError(signal!));
    const onReady = (json: string) => {
      if (settled) return;
      done();
      resolve(ready(driver!, events, json));
    };
    stopTimer = after(timeoutMs, () => fail(agentwireError("timeout", `no ${what} within ${timeoutMs} ms${driver?.why ?? ""}`)));
    try {
      driver = make(events, onReady, (e) => fail(toError(e)));
    } catch (e) {
      return fail(toError(e));
    }
    if (settled) return;
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

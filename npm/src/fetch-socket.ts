/** `fetchWebSocket(headers)`: a `WebSocket` constructor for Cloudflare Workers (workerd) that
 * opens the socket with `fetch` and `Upgrade: websocket`, so it can send headers a `WebSocket`
 * constructor cannot, such as the `Authorization: Bearer <agent key>` Switch requires. Pass it
 * as `webSocket` to `connect`; it gives the drivers the part of the `WebSocket` API they use. */
import type { WebSocketConstructor } from "./calls.js";

/** The socket workerd hands back with an upgrade's answer (its `webSocket`). */
interface WorkerSocket {
  binaryType?: string;
  accept(): void;
  send(data: string | ArrayBuffer | ArrayBufferView): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, listener: (event: { data?: unknown; code?: number; reason?: string; wasClean?: boolean }) => void): void;
}

type Handler = ((event: object) => void) | null;

/** The relay's subprotocol that carries a relay token: never offered here, where the secret goes
 * in a header (a subprotocol is a header proxies and logs rarely redact). */
const TOKEN_PROTOCOL = "agentwire.token.";

/** Characters of a refused upgrade's answer kept for the engine: as many as the bytes it reads
 * (`agentwire_core::http::REFUSAL_BODY_MAX`, checked by crates/agentwire-core/tests/npm_facts.rs). */
const REFUSAL_BODY = 65536;
/** How long a refused upgrade's body is read, in milliseconds, before its close goes out with
 * what came (`agentwire_core::http::REFUSAL_BODY_WAIT_MS`, checked as `REFUSAL_BODY` is): a
 * body that trickles or never ends is its status after this long, not after the open's timeout. */
const REFUSAL_BODY_WAIT_MS = 2000;

/** A code a close frame may carry: 1000, or 3000–4999. */
const sendable = (code: number | undefined): number => (code === 1000 || (code !== undefined && code >= 3000 && code <= 4999) ? code : 1000);

/** A constructor for `webSocket` that opens each socket with `fetch(url, {headers})`, upgraded.
 * Workers only: other hosts' `fetch` does not upgrade. It offers the subprotocols it is given
 * except the relay's `agentwire.token.*`, and refuses an answer that picks one it did not offer.
 * An upgrade refused with HTTP 401 ends as a close with code 4401 (what Switch sends for a key
 * it does not take); any other failure as 1006, with the status and the start of the answer in
 * the reason. The close of a refused upgrade also has `status` and `body` (the answer's first
 * 65,536 characters, or what came of it in 2 s), which agentwire's drivers pass on to the
 * engine. */
export function fetchWebSocket(headers: Record<string, string>): WebSocketConstructor {
  return class FetchWebSocket {
    static readonly CONNECTING = 0;
    static readonly OPEN = 1;
    static readonly CLOSING = 2;
    static readonly CLOSED = 3;
    readyState = 0;
    binaryType = "arraybuffer";
    protocol = "";
    onopen: Handler = null;
    onmessage: Handler = null;
    onclose: Handler = null;
    onerror: Handler = null;
    #socket: WorkerSocket | undefined;
    readonly #upgrade = new AbortController();
    readonly #offered: string[];

    constructor(url: string, protocols?: string | string[]) {
      const init = new Headers(headers);
      init.set("Upgrade", "websocket");
      this.#offered = (typeof protocols === "string" ? [protocols] : (protocols ?? [])).filter((p) => !p.startsWith(TOKEN_PROTOCOL));
      if (this.#offered.length) init.set("Sec-WebSocket-Protocol", this.#offered.join(", "));
      fetch(url.replace(/^ws/i, "http"), { headers: init, signal: this.#upgrade.signal }).then(
        (answer) => this.#answered(answer),
        (e: unknown) => this.#ended(1006, `the upgrade failed: ${e instanceof Error ? e.message : String(e)}`),
      );
    }

    async #answered(answer: Response): Promise<void> {
      const socket = (answer as Response & { webSocket?: WorkerSocket | null }).webSocket;
      if (answer.status !== 101 || !socket) {
        const body = await bodyStart(answer);
        // Closed meanwhile: that close is the one delivered (its abort cut the body short).
        if (this.readyState !== 0) return;
        // Cut short, a `409 taken_over` would be a final refusal without its code: no answer
        // (retried), as every driver takes it.
        if (body === null) return this.#ended(1006, `the HTTP ${answer.status} answer broke off`);
        const said = body.slice(0, 80);
        const why = `the upgrade was refused with HTTP ${answer.status}${said ? `: ${said}` : ""}`;
        this.#ended(answer.status === 401 ? 4401 : 1006, why, false, { status: answer.status, body });
        return;
      }
      try {
        socket.accept();
        // Workers give binary frames as a Blob from compatibility date 2026-03-17 unless asked.
        socket.binaryType = "arraybuffer";
        const chosen = answer.headers.get("Sec-WebSocket-Protocol") ?? "";
        if (this.readyState !== 0) {
          socket.close(1000, "closed before it opened");
          return;
        }
        if (chosen && !this.#offered.includes(chosen)) {
          socket.close(1000, "a subprotocol that was not offered");
          this.#ended(1006, `the server chose the subprotocol ${chosen}, which was not offered`);
          return;
        }
        this.#socket = socket;
        this.protocol = chosen;
        socket.addEventListener("message", (e) => {
          if (this.readyState === 1 || this.readyState === 2) this.onmessage?.({ data: e.data });
        });
        socket.addEventListener("close", (e) => {
          // Answer the peer's close (Workers before compatibility date 2026-04-07 do not; later
          // ones ignore this call).
          if (this.readyState === 1) this.#quietly(() => socket.close(sendable(e.code), e.reason ?? ""));
          this.#ended(e.code ?? 1005, e.reason ?? "", e.wasClean ?? false);
        });
        socket.addEventListener("error", () => {
          if (this.readyState === 3) return;
          this.#quietly(() => socket.close(1000, "the connection failed"));
          this.#ended(1006, "the connection failed");
        });
        this.readyState = 1;
        this.onopen?.({});
      } catch (e) {
        this.#quietly(() => socket.close(1000, "the socket could not be opened"));
        this.#ended(1006, `the socket could not be opened: ${e instanceof Error ? e.message : String(e)}`);
      }
    }

    /** Delivers the one `close` (no `error` before it: the reason says what went wrong). A
     * refused upgrade's close also carries the answer's `status` and `body`, which the drivers
     * hand to the engine (Switch's `handle_open_failed` decides what a status means). */
    #ended(code: number, reason: string, wasClean = false, refused?: { status: number; body: string }): void {
      if (this.readyState === 3) return;
      this.readyState = 3;
      this.#upgrade.abort();
      this.onclose?.({ code, reason, wasClean, ...refused });
    }

    #quietly(f: () => void): void {
      try {
        f();
      } catch {
        // Already closed.
      }
    }

    send(data: string | ArrayBuffer | ArrayBufferView): void {
      if (this.readyState !== 1 || !this.#socket) throw new Error("the WebSocket is not open");
      this.#socket.send(data);
    }

    close(code?: number, reason?: string): void {
      if (this.readyState >= 2) return;
      if (!this.#socket) {
        // Before it opened: the upgrade is abandoned, and the close comes as a separate task,
        // as a browser's does.
        this.readyState = 2;
        this.#upgrade.abort();
        setTimeout(() => this.#ended(1006, reason ?? "closed before it opened"), 0);
        return;
      }
      this.readyState = 2;
      this.#quietly(() => this.#socket?.close(code === undefined ? undefined : sendable(code), reason));
    }
  };
}

/** The first `REFUSAL_BODY` characters of a refusal's body, read a chunk at a time for
 * `REFUSAL_BODY_WAIT_MS` at most: a body with no end is not read whole; `null` when it breaks
 * off before its end, that wait or `REFUSAL_BODY`. */
async function bodyStart(answer: Response): Promise<string | null> {
  const reader = answer.body?.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let broke = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = new Promise<{ done: true; value?: undefined }>((r) => (timer = setTimeout(r, REFUSAL_BODY_WAIT_MS, { done: true })));
  try {
    for (let r; reader && text.length < REFUSAL_BODY && !(r = await Promise.race([reader.read(), waited])).done; ) text += decoder.decode(r.value, { stream: true });
  } catch {
    broke = true;
  }
  clearTimeout(timer);
  reader?.cancel().catch(() => {});
  return broke ? null : text.slice(0, REFUSAL_BODY);
}

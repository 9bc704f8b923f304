/** `fetchWebSocket(headers)`: a `WebSocket` constructor for Cloudflare Workers (workerd) that
 * opens the socket with `fetch` and `Upgrade: websocket`, so it can send headers a `WebSocket`
 * constructor cannot, such as the `Authorization: Bearer <agent key>` Switch requires. Pass it
 * as `webSocket` to `connect`; it gives the drivers the part of the `WebSocket` API they use. */
import type { WebSocketConstructor } from "./calls.js";

/** The socket workerd hands back with an upgrade's answer (its `webSocket`). */
interface WorkerSocket {
  accept(): void;
  send(data: string | ArrayBuffer | ArrayBufferView): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, listener: (event: { data?: unknown; code?: number; reason?: string; wasClean?: boolean }) => void): void;
}

type Handler = ((event: object) => void) | null;

/** A constructor for `webSocket` that opens each socket with `fetch(url, {headers})`, upgraded.
 * Workers only: other hosts' `fetch` does not upgrade. */
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

    constructor(url: string, protocols?: string | string[]) {
      const init = new Headers(headers);
      init.set("Upgrade", "websocket");
      const offered = typeof protocols === "string" ? [protocols] : (protocols ?? []);
      if (offered.length) init.set("Sec-WebSocket-Protocol", offered.join(", "));
      fetch(url.replace(/^ws/i, "http"), { headers: init }).then(
        (answer) => this.#opened(answer),
        (e: unknown) => this.#ended(1006, `the upgrade failed: ${e instanceof Error ? e.message : String(e)}`),
      );
    }

    #opened(answer: Response): void {
      const socket = (answer as Response & { webSocket?: WorkerSocket | null }).webSocket;
      if (answer.status !== 101 || !socket) {
        void answer.body?.cancel();
        this.#ended(1006, `the upgrade was refused with HTTP ${answer.status}`);
        return;
      }
      socket.accept();
      if (this.readyState !== 0) {
        // Closed while the upgrade was on its way.
        socket.close(1000, "closed before it opened");
        return;
      }
      this.#socket = socket;
      this.protocol = answer.headers.get("Sec-WebSocket-Protocol") ?? "";
      socket.addEventListener("message", (e) => this.onmessage?.({ data: e.data }));
      socket.addEventListener("close", (e) => this.#ended(e.code ?? 1005, e.reason ?? "", e.wasClean ?? false));
      socket.addEventListener("error", () => this.onerror?.({}));
      this.readyState = 1;
      this.onopen?.({});
    }

    #ended(code: number, reason: string, wasClean = false): void {
      if (this.readyState === 3) return;
      const failed = this.readyState === 0;
      this.readyState = 3;
      if (failed) this.onerror?.({});
      this.onclose?.({ code, reason, wasClean });
    }

    send(data: string | ArrayBuffer | ArrayBufferView): void {
      if (this.readyState !== 1 || !this.#socket) throw new Error("the WebSocket is not open");
      this.#socket.send(data);
    }

    close(code?: number, reason?: string): void {
      if (this.readyState >= 2) return;
      if (!this.#socket) {
        this.#ended(code ?? 1000, reason ?? "");
        return;
      }
      this.readyState = 2;
      this.#socket.close(code, reason);
    }
  };
}

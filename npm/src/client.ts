/// <reference lib="esnext.disposable" preserve="true" />
/** What the three clients share: their events (to `onEvent`, or buffered for `events()`),
 * `close()` bounded by a grace period, and `Symbol.asyncDispose`. */
import { asyncDispose, type Events } from "./calls.js";

/** The driver half a client closes. */
export interface Closing {
  /** Whether the connection is already over. */
  readonly over: boolean;
  /** Starts closing; the events end with the protocol's last event. */
  close(): void;
}

/** The clients whose connection is not over. The sockets and timers reach their driver only
 * weakly, so without this a client the app keeps no reference to (one used through `onEvent`)
 * could be garbage-collected, and its connection dropped with no event. */
const live = new Set<object>();

/** What `RktClient`, `MoltZapClient` and `SwitchClient` share. Each entry (`agentwire`,
 * `agentwire/rkt`, ...) has its own copy of these classes: `instanceof` holds only for a client
 * made through the same entry (`AgentwireError` is shared). */
export abstract class Client<E extends { type: string }> {
  readonly #events: Events<E>;
  readonly #closing: Closing;

  protected constructor(events: Events<E>, closing: Closing) {
    this.#events = events;
    this.#closing = closing;
    if (!events.closed) {
      live.add(this);
      void events.done.then(() => live.delete(this));
    }
  }

  /** The events that answer no call, as an async iterator that ends after the last one (when no
   * `onEvent` was given to `connect`). Each event goes to one reader: two loops running at once
   * share the events between them, each getting some. For several consumers, give `onEvent` and
   * fan out from it. Leaving a loop early ends that loop only; later events wait for the next
   * `events()`. It takes no `signal`: end a loop with `break`, or `close()` the client. */
  events(): AsyncIterableIterator<E> {
    return this.#events.iterator();
  }

  /** Events dropped because `events()` was not read in time. */
  get droppedEvents(): number {
    return this.#events.dropped;
  }

  /** Whether the last event has been emitted. */
  get closed(): boolean {
    return this.#events.closed;
  }

  /** Closes the connection and resolves once its last event has been emitted (or after 2 s).
   * Calls still waiting, and calls made after it, reject with kind `closed`. */
  async close(): Promise<void> {
    if (!this.#closing.over) this.#closing.close();
    await this.#events.whenClosed(2000);
  }

  [asyncDispose](): Promise<void> {
    return this.close();
  }
}

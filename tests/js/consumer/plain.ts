// The package's types with the libraries a browser app has by default (ES2022 and the DOM, no
// `esnext.disposable`) and `skipLibCheck` off: the types bring in what they need themselves.
import { AgentwireError, MoltZapClient, RktClient, SwitchClient, type SwitchOptions } from "agentwire";
import { RktClient as OwnRkt } from "agentwire/rkt";
import { mintRelayToken } from "agentwire/relay-token";

export async function plain(signal?: AbortSignal): Promise<void> {
  const rkt: RktClient | OwnRkt = await RktClient.connect("rkt://127.0.0.1", { signal });
  await rkt.request("echo", {}, { signal, timeoutMs: undefined });
  // `op` takes arguments typed with an interface, not only a record.
  interface PostArgs { body: string }
  const args: PostArgs = { body: "hi" };
  const sw = await SwitchClient.connect("http://127.0.0.1:1", { token: "t", agentId: "a", startFrom: "42" });
  await sw.op("post_message", args);
  // @ts-expect-error "haed" is neither "head" nor a sequence.
  const bad: SwitchOptions = { agentId: "a", startFrom: "haed" };
  void bad;
  const mz = await MoltZapClient.connect("ws://127.0.0.1:1/ws", { agentKey: "k" });
  const { message } = await mz.send({ agent: "bob" }, "hi");
  void message;
  await mintRelayToken("secret", { agentId: "a" });
  try {
    await rkt.ping();
  } catch (e) {
    if (e instanceof AgentwireError && e.retryable) void e.info.retryAfterS;
  }
}

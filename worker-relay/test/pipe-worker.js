// A bare pipe Worker, the bench's baseline (bench/bench.mjs): accepts the browser's WebSocket,
// opens `env.UPSTREAM` + the request's path with fetch + Upgrade, and pipes frames and closes
// both ways. No token, no origin check, no limits, no engine: what any WebSocket relay on
// Workers costs at least.
export default {
  async fetch(request, env) {
    if (request.headers.get("upgrade") !== "websocket") return new Response("WebSocket only", { status: 426 });
    const url = new URL(request.url);
    const answer = await fetch(`${env.UPSTREAM}${url.pathname}${url.search}`, { headers: { Upgrade: "websocket" } });
    const up = answer.webSocket;
    if (!up) return new Response("upstream refused", { status: 502 });
    up.accept();
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    server.accept();
    const code = (c) => (c === 1005 || c === 1006 || c === 1015 || !c ? 1011 : c);
    const close = (ws, c, r) => {
      try {
        ws.close(code(c), r);
      } catch {
        /* already closed */
      }
    };
    server.addEventListener("message", (ev) => up.send(ev.data));
    up.addEventListener("message", (ev) => server.send(ev.data));
    server.addEventListener("close", (ev) => { close(up, ev.code, ev.reason); close(server, ev.code, ev.reason); });
    up.addEventListener("close", (ev) => { close(server, ev.code, ev.reason); close(up, ev.code, ev.reason); });
    server.addEventListener("error", () => close(up, 1011, ""));
    up.addEventListener("error", () => close(server, 1011, ""));
    return new Response(null, { status: 101, webSocket: client });
  },
};

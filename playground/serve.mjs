// The playground's server (scripts/play.sh starts it): the repository as tests/js/serve.mjs serves
// it (the package is /npm/dist/browser.js), the page at `/`, and `/playground/config.json`, on
// 127.0.0.1:${PORT:-7700} (PORT=0: a free port). Prints `playground on http://127.0.0.1:PORT/`.
//
// AGENTWIRE_PLAYGROUND_CONFIG (JSON) says where the peers are:
//   rkt           "ws://127.0.0.1:7749/rkt"
//   moltzap       "ws://127.0.0.1:7750/ws"
//   moltzapKeys   {"alice": "moltzap_agent_…", "bob": "…"}   the agents the page connects as
//   moltzapIds    {"alice": "<agent id>", …}                  optional: names for senders
//   switch        "http://127.0.0.1:7751"
//   switchAgents  {"alice": {"id", "key"}, "bob": {"id", "key"}}
//   switchLobby   "<room id>"
//   switchRelay   {"url": "http://…", "tokens": {"alice": "…", "bob": "…"}}   optional: with it
//                 the Switch panel connects through the relay; without it, it shows the CLI
//   cli           the agentwire binary, for the commands the page prints (default `agentwire`)
import { readFile } from "node:fs/promises";
import { serve } from "../tests/js/serve.mjs";

const raw = process.env.AGENTWIRE_PLAYGROUND_CONFIG;
if (!raw) {
  console.error("AGENTWIRE_PLAYGROUND_CONFIG is not set: start the playground with scripts/play.sh");
  process.exit(2);
}
let config;
try {
  config = JSON.parse(raw);
} catch (e) {
  console.error(`AGENTWIRE_PLAYGROUND_CONFIG is not JSON: ${e.message}`);
  process.exit(2);
}

const index = await readFile(new URL("index.html", import.meta.url), "utf8");
const port = Number(process.env.PORT ?? 7700);
try {
  const { origin } = await serve(
    {
      "/": index,
      "/playground/": index,
      "/playground/config.json": { type: "application/json", body: JSON.stringify(config) },
    },
    port,
  );
  console.log(`playground on ${origin}/`);
} catch (e) {
  console.error(`the playground cannot listen on 127.0.0.1:${port}: ${e.message}`);
  process.exit(1);
}

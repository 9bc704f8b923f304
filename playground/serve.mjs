// The playground's server (scripts/play.sh starts it): the package (/npm/dist/browser.js) and
// playground/ as tests/js/serve.mjs serves them (nothing else of the repository), the page at
// `/`, and `/playground/config.json`, on 127.0.0.1:${PORT:-7700} (PORT=0: a free port). Prints
// `playground on http://127.0.0.1:PORT/`.
// Like every page tests/js/serve.mjs serves, it answers only to a Host of 127.0.0.1, localhost or
// [::1] with its port (anything else, such as a DNS-rebinding page's name, gets 403: config.json
// carries the local agents' keys and relay tokens), and a config.json it cannot build is a 500.
// localhost and [::1] are redirected to 127.0.0.1: the relay allows that one origin, and the
// relay tokens are bound to it.
//
// AGENTWIRE_PLAYGROUND_CONFIG (JSON) says where the peers are:
//   rkt           "ws://127.0.0.1:7749/rkt"
//   moltzap       "ws://127.0.0.1:7750/ws"
//   moltzapKeys   {"alice": "moltzap_agent_…", "bob": "…"}   the agents the page connects as
//   moltzapIds    {"alice": "<agent id>", …}                  optional: names for senders
//   switch        "http://127.0.0.1:7751"
//   switchAgents  {"alice": {"id", "key"}, "bob": {"id", "key"}}
//   switchLobby   "<room id>"
//   switchRelay   {"url": "http://…", "secret": "…"}   optional: with it the Switch panel connects
//                 through the relay; without it, it shows the CLI. This server plays the app's
//                 backend: every config.json it serves carries fresh relay tokens for alice and
//                 bob (10 minutes, bound to the page's origin), minted with the package's
//                 `agentwire/relay-token`; the secret itself is never served
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
let pageOrigin;

/** The page's config: with a relay, fresh tokens in place of the secret. */
async function pageConfig() {
  if (!config.switchRelay?.secret) return config;
  const { mintRelayToken } = await import("../npm/dist/relay-token.js");
  const { secret, ...relay } = config.switchRelay;
  const tokens = {};
  for (const [name, agent] of Object.entries(config.switchAgents ?? {})) {
    tokens[name] = await mintRelayToken(secret, { agentId: agent.id, expiresIn: 600, origin: pageOrigin });
  }
  const { switchAgents, ...rest } = config;
  // The page needs the agents' ids, never their keys.
  const agents = Object.fromEntries(Object.entries(switchAgents).map(([n, a]) => [n, { id: a.id }]));
  return { ...rest, switchAgents: agents, switchRelay: { ...relay, tokens } };
}

try {
  const { origin } = await serve(
    {
      "/": index,
      "/playground/": index,
      "/playground/config.json": async () => ({ type: "application/json", body: JSON.stringify(await pageConfig()) }),
    },
    port,
    { redirectToOrigin: true, files: ["/playground/"] },
  );
  pageOrigin = origin;
  console.log(`playground on ${origin}/`);
} catch (e) {
  console.error(`the playground cannot listen on 127.0.0.1:${port}: ${e.message}`);
  process.exit(1);
}

// Runs the relay locally in workerd (Miniflare) until killed: `node dev.mjs [--port N]`, from any
// directory, with its settings as JSON in RELAY_VARS (see wrangler.toml and
// crates/agentwire-relay/src/config.rs; secrets included, so this is for local peers only).
// Prints `listening on http://127.0.0.1:N`. `wrangler dev` works too, with the vars in
// wrangler.toml and secrets in .dev.vars.
import { startWorker } from "./miniflare.mjs";

const at = process.argv.indexOf("--port");
const port = at > 0 ? Number(process.argv[at + 1]) : 0;
let vars;
try {
  vars = JSON.parse(process.env.RELAY_VARS ?? "");
} catch {
  console.error("RELAY_VARS must be the relay's settings as a JSON object");
  process.exit(2);
}
const { mf, url } = await startWorker({ vars, port, log: (t) => process.stderr.write(t) });
console.log(`listening on ${url}`);
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, async () => {
    await mf.dispose();
    process.exit(0);
  });
}

// The relay's Worker under Miniflare (real workerd), as the tests, the playground and the bench
// run it: the module Worker in src/ with the engine's wasm as a compiled module.
import { Miniflare } from "miniflare";
import { fileURLToPath } from "node:url";
import { readFileSync } from "node:fs";
import path from "node:path";

/** This directory (worker-relay/): module paths of the relay start here, whatever the cwd. */
const HERE = path.dirname(fileURLToPath(import.meta.url));
export const RELAY_SCRIPT = path.join(HERE, "src/index.js");

/** The relay's `compatibility_date` and `compatibility_flags`, read from wrangler.toml (the one
 * place they are written: what is tested is what deploys). */
function compatibility() {
  const toml = readFileSync(path.join(HERE, "wrangler.toml"), "utf8");
  const date = toml.match(/^compatibility_date\s*=\s*"(\d{4}-\d{2}-\d{2})"/m);
  if (!date) throw new Error("wrangler.toml: no compatibility_date");
  const flags = toml.match(/^compatibility_flags\s*=\s*\[([^\]]*)\]/m);
  return {
    date: date[1],
    flags: flags ? [...flags[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]) : [],
  };
}
const RELAY = compatibility();
export const RELAY_COMPATIBILITY_DATE = RELAY.date;
export const RELAY_COMPATIBILITY_FLAGS = RELAY.flags;

/** Starts `script` (default: the relay) with `vars` as its env on 127.0.0.1:`port` (0: a free
 * one); `log(text)` gets workerd's output; `modulesRoot` is where module paths start (default:
 * worker-relay/ for a script in it, else the script's directory; a script importing modules
 * above it needs one above them; never the cwd, so this works from any directory);
 * `compatibilityDate` and `compatibilityFlags` are workerd's (default: the relay's, from
 * wrangler.toml). Resolves with `{mf, url}`. */
export async function startWorker({
  vars,
  script = RELAY_SCRIPT,
  port = 0,
  log = () => {},
  modulesRoot,
  compatibilityDate = RELAY_COMPATIBILITY_DATE,
  compatibilityFlags = RELAY_COMPATIBILITY_FLAGS,
}) {
  const mf = new Miniflare({
    scriptPath: script,
    modulesRoot: modulesRoot ?? (script.startsWith(HERE + path.sep) ? HERE : path.dirname(script)),
    modules: true,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate,
    compatibilityFlags,
    host: "127.0.0.1",
    port,
    bindings: vars,
    handleRuntimeStdio(stdout, stderr) {
      stdout.on("data", (d) => log(String(d), "stdout"));
      stderr.on("data", (d) => log(String(d), "stderr"));
    },
  });
  const url = (await mf.ready).href.replace(/\/$/, "");
  return { mf, url };
}

// Bundles the entries of `agentwire/rkt`, `agentwire/moltzap` and `agentwire/switch`
// (dist/<protocol>/{browser,node,worker}.js as tsc wrote them) with the facade modules that import
// the wasm glue, pointed at that protocol's own glue (dist/wasm-<protocol>/). The modules that
// import no glue (errors, calls, client, session, fetch-socket) stay shared imports, so `AgentwireError` is one
// class for every entry. Run by build.sh after tsc.
import { build } from "esbuild";
import { rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const dist = fileURLToPath(new URL("./dist/", import.meta.url));
const shared = new Set(["errors.js", "calls.js", "client.js", "session.js", "fetch-socket.js"]);

function redirect(protocol) {
  return {
    name: `agentwire-${protocol}`,
    setup(b) {
      b.onResolve({ filter: /^\.\.?\// }, (args) => {
        const rel = path.relative(dist, path.resolve(args.resolveDir, args.path)).split(path.sep).join("/");
        if (rel === "wasm/agentwire_wasm.js") return { path: `../wasm-${protocol}/agentwire_wasm.js`, external: true };
        if (rel.startsWith(`wasm-${protocol}/`) || shared.has(rel)) return { path: `../${rel}`, external: true };
        if (rel.startsWith("wasm")) return { errors: [{ text: `${protocol} entry imports ${rel}` }] };
        return undefined;
      });
    },
  };
}

for (const protocol of ["rkt", "moltzap", "switch"]) {
  await build({
    entryPoints: ["browser", "node", "worker"].map((e) => path.join(dist, protocol, `${e}.js`)),
    outdir: path.join(dist, protocol),
    allowOverwrite: true,
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    minify: true,
    external: ["node:*"],
    plugins: [redirect(protocol)],
    logLevel: "warning",
  });
  // Bundled into the three entries; index.d.ts stays for the types.
  rmSync(path.join(dist, protocol, "index.js"));
}

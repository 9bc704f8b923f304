/** The Node entry: reads the module beside this file synchronously. */
import { readFileSync } from "node:fs";
import { initSync } from "./wasm/agentwire_wasm.js";
import { registerErrors } from "./errors.js";

initSync({ module: readFileSync(new URL("./wasm/agentwire_wasm_bg.wasm", import.meta.url)) });
registerErrors();

export * from "./index.js";

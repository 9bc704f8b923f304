/** The Node entry: reads the module beside this file synchronously. */
import { readFileSync } from "node:fs";
import { initSync, lastPanic, setErrorFactory } from "./wasm/agentwire_wasm.js";
import { registerErrors } from "./errors.js";

initSync({ module: readFileSync(new URL("./wasm/agentwire_wasm_bg.wasm", import.meta.url)) });
registerErrors({ lastPanic, setErrorFactory });

export * from "./index.js";

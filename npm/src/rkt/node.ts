/** `agentwire/rkt` in Node: reads its module synchronously. */
import { readFileSync } from "node:fs";
import { initSync, lastPanic, setErrorFactory } from "../wasm-rkt/agentwire_wasm.js";
import { registerErrors } from "../errors.js";

initSync({ module: readFileSync(new URL("../wasm-rkt/agentwire_wasm_bg.wasm", import.meta.url)) });
registerErrors({ lastPanic, setErrorFactory });

export * from "./index.js";

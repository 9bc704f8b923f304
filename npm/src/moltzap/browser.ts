/** `agentwire/moltzap` in browsers (and the default): fetches its module. */
import init, { lastPanic, setErrorFactory } from "../wasm-moltzap/agentwire_wasm.js";
import { registerErrors } from "../errors.js";

await init({ module_or_path: new URL("../wasm-moltzap/agentwire_wasm_bg.wasm", import.meta.url) });
registerErrors({ lastPanic, setErrorFactory });

export * from "./index.js";

/** The browser (and default) entry: fetches and instantiates the module beside this file. */
import init, { lastPanic, setErrorFactory } from "./wasm/agentwire_wasm.js";
import { registerErrors } from "./errors.js";

await init({ module_or_path: new URL("./wasm/agentwire_wasm_bg.wasm", import.meta.url) });
registerErrors({ lastPanic, setErrorFactory });

export * from "./index.js";

/** The browser (and default) entry: fetches and instantiates the module beside this file. */
import init from "./wasm/agentwire_wasm.js";
import { registerErrors } from "./errors.js";

await init({ module_or_path: new URL("./wasm/agentwire_wasm_bg.wasm", import.meta.url) });
registerErrors();

export * from "./index.js";

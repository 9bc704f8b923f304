/** The Workers (workerd) entry: the bundler hands the `.wasm` import over as a compiled module. */
import { initSync, lastPanic, setErrorFactory } from "./wasm/agentwire_wasm.js";
import { registerErrors } from "./errors.js";
// @ts-ignore: a `.wasm` import is a WebAssembly.Module in workerd and wrangler.
import wasm from "./wasm/agentwire_wasm_bg.wasm";

initSync({ module: wasm as WebAssembly.Module });
registerErrors({ lastPanic, setErrorFactory });

export * from "./index.js";

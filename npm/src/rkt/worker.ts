/** `agentwire/rkt` in Workers (workerd): the bundler hands the `.wasm` over compiled. */
import { initSync, lastPanic, setErrorFactory } from "../wasm-rkt/agentwire_wasm.js";
import { registerErrors } from "../errors.js";
// @ts-ignore: a `.wasm` import is a WebAssembly.Module in workerd and wrangler.
import wasm from "../wasm-rkt/agentwire_wasm_bg.wasm";

initSync({ module: wasm as WebAssembly.Module });
registerErrors({ lastPanic, setErrorFactory });

export * from "./index.js";

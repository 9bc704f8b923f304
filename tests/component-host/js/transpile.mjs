// Transpiles the component into ESM under ./out (engine.js, engine.core.wasm, .d.ts), its WASI
// imports mapped onto @bytecodealliance/preview2-shim. Usage: node transpile.mjs [COMPONENT.wasm]
import { transpile } from '@bytecodealliance/jco-transpile';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const wasm = process.argv[2] ?? join(here, '../../../target/component/agentwire_component.wasm');
const out = join(here, 'out');
const { files } = await transpile(wasm, { name: 'engine', outDir: 'out', emitTypescriptDeclarations: true });
// jco decodes every string the component returns with `new TextDecoder()`, which drops a leading
// U+FEFF (`ignoreBOM` is false by default): an RKT body, a close reason, a MoltZap payload that
// starts with one would lose it. The component returns payloads exactly as received, so the
// decoder keeps it. Found by its text, and refused loudly when a jco update writes it otherwise.
const engine = 'out/engine.js';
const decoder = 'const TEXT_DECODER_UTF8 = new TextDecoder();';
const glue = new TextDecoder().decode(files[engine] ?? new Uint8Array());
if (glue.split(decoder).length !== 2 || glue.split('new TextDecoder(').length !== 2) {
  throw new Error(`${engine}: not one TextDecoder, "${decoder}": jco changed; keep a leading U+FEFF anew`);
}
const kept = "const TEXT_DECODER_UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });";
files[engine] = new TextEncoder().encode(glue.replace(decoder, kept));
await rm(out, { recursive: true, force: true });
for (const [name, bytes] of Object.entries(files)) {
  const path = join(here, name);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, bytes);
}
console.log(`transpiled ${wasm} into ${out} (${Object.keys(files).length} files)`);

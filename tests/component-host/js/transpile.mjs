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
await rm(out, { recursive: true, force: true });
for (const [name, bytes] of Object.entries(files)) {
  const path = join(here, name);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, bytes);
}
console.log(`transpiled ${wasm} into ${out} (${Object.keys(files).length} files)`);

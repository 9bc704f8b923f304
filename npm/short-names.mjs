// Gives the wasm module's imports (and their module) and exports short names, in the module
// and in its glue alike: wasm-bindgen names each import after its function and a hash
// (`__wbg_close_2a8b1ba07b9e0fee`: the hashes do not compress) and each export after its class
// and method (`moltzapdriver_recentMessages`), and both files spell them out. Nothing outside the
// glue sees these names. Run by build.sh on each module after wasm-opt: `node short-names.mjs
// <dir>` rewrites <dir>/agentwire_wasm_bg.wasm and <dir>/agentwire_wasm.js (as wasm-bindgen
// wrote it, before esbuild), and fails if a name is not where it is expected.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const dir = process.argv[2];
const wasmPath = path.join(dir, "agentwire_wasm_bg.wasm");
const gluePath = path.join(dir, "agentwire_wasm.js");
const wasm = readFileSync(wasmPath);
let glue = readFileSync(gluePath, "utf8");

let pos = 0;
const byte = () => wasm[pos++];
const uleb = () => {
  let value = 0;
  let shift = 0;
  let b;
  do {
    b = byte();
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
  } while (b & 0x80);
  return value;
};
const name = () => {
  const n = uleb();
  pos += n;
  return wasm.toString("utf8", pos - n, pos);
};
const limits = () => {
  const flags = byte();
  uleb();
  if (flags & 1) uleb();
};
const ulebBytes = (n) => {
  const out = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return Buffer.from(out);
};
const nameBytes = (s) => {
  const b = Buffer.from(s, "utf8");
  return Buffer.concat([ulebBytes(b.length), b]);
};

// a, b, …, Z, then aa, ab, …: valid identifiers, none a keyword.
const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
function* shortNames() {
  for (const a of letters) yield a;
  for (const a of letters) for (const b of letters) if (!["do", "if", "in"].includes(a + b)) yield a + b;
}

// The import modules (wasm-bindgen's one, `./agentwire_wasm_bg.js`): `"<module>": import0` in
// the glue's import object.
const modules = new Map();
const moduleShort = shortNames();
function moduleName(module) {
  if (!modules.has(module)) {
    const now = moduleShort.next().value;
    const key = `${JSON.stringify(module)}: `;
    if (glue.split(key).length !== 2) throw Error(`import module ${module}: not once in the glue`);
    glue = glue.replace(key, `${now}: `);
    modules.set(module, now);
  }
  return modules.get(module);
}

if (wasm.readUInt32LE(0) !== 0x6d736100) throw Error(`${wasmPath} is not a wasm module`);
const parts = [wasm.subarray(0, 8)];
pos = 8;
const renamed = { imports: 0, exports: 0 };
while (pos < wasm.length) {
  // A section is copied from its id on, as written: its size may be a padded LEB128.
  const from = pos;
  const id = byte();
  const size = uleb();
  const start = pos;
  const end = start + size;
  if (id !== 2 && id !== 7) {
    parts.push(wasm.subarray(from, end));
    pos = end;
    continue;
  }
  const short = shortNames();
  const body = [];
  const count = uleb();
  body.push(ulebBytes(count));
  for (let i = 0; i < count; i++) {
    if (id === 2) {
      // An import: module, name, what it is (a function's type; a table, memory, global or tag).
      const module = name();
      const old = name();
      const descStart = pos;
      const kind = byte();
      if (kind === 0 || kind === 4) {
        if (kind === 4) byte();
        uleb();
      } else if (kind === 1) {
        byte();
        limits();
      } else if (kind === 2) limits();
      else if (kind === 3) pos += 2;
      else throw Error(`import ${old}: unknown kind ${kind}`);
      const now = short.next().value;
      // The import object's key, once: `__wbg_…: function(` in wasm-bindgen's glue.
      const key = new RegExp(`(?<![\\w$])${old}(?=: function\\()`, "g");
      const found = glue.match(key)?.length ?? 0;
      if (found !== 1 || glue.split(old).length !== 2) throw Error(`import ${old}: ${found} keys in the glue`);
      glue = glue.replace(key, now);
      body.push(nameBytes(moduleName(module)), nameBytes(now), wasm.subarray(descStart, pos));
      renamed.imports++;
    } else {
      // An export: name, kind, index; the glue reads it as `wasm.<name>`.
      const old = name();
      const descStart = pos;
      byte();
      uleb();
      const now = short.next().value;
      const uses = new RegExp(`(?<![\\w$])wasm\\.${old.replace(/\$/g, "\\$")}(?![\\w$])`, "g");
      if (glue.includes(`"${old}"`) || glue.includes(`'${old}'`)) throw Error(`export ${old}: quoted in the glue`);
      glue = glue.replace(uses, `wasm.${now}`);
      body.push(nameBytes(now), wasm.subarray(descStart, pos));
      renamed.exports++;
    }
  }
  if (pos !== end) throw Error(`section ${id}: ${end - pos} bytes left over`);
  const content = Buffer.concat(body);
  parts.push(Buffer.from([id]), ulebBytes(content.length), content);
}
writeFileSync(wasmPath, Buffer.concat(parts));
writeFileSync(gluePath, glue);
console.log(`short names: ${renamed.imports} imports, ${renamed.exports} exports (${dir})`);

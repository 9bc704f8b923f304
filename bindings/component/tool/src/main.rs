//! `agentwire-componentize IN.wasm OUT.wasm`: encodes the engine's core module, built for
//! `wasm32-unknown-unknown` with wit-bindgen's component-type section, as a component
//! (validated). The module imports nothing but the WIT world's own imports, so no WASI adapter
//! is needed: the component's only import is `wasi:random/random`.

use anyhow::{bail, Context, Result};
use wit_component::ComponentEncoder;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        bail!("usage: agentwire-componentize IN.wasm OUT.wasm");
    };
    let module = std::fs::read(input).with_context(|| format!("reading {input}"))?;
    let component = ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .context("the module has no usable component-type section")?
        .encode()
        .context("encoding the component")?;
    std::fs::write(output, component).with_context(|| format!("writing {output}"))?;
    Ok(())
}

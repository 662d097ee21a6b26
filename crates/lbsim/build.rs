//! Turns the scheme registry of `src/lb/mod.rs` (its `pub mod` lines between `// schemes: begin`
//! and `// schemes: end`, one scheme per module) into one invocation of the `schemes!` macro
//! there, which generates the policy enums, their dispatch and `SCHEMES`. The `mod` lines stay
//! ordinary Rust, so rustfmt and every tool still see the scheme files.

use std::fmt::Write;
use std::path::Path;

const REGISTRY: &str = "src/lb/mod.rs";

fn main() {
    println!("cargo:rerun-if-changed={REGISTRY}");
    let text = std::fs::read_to_string(REGISTRY).expect("read src/lb/mod.rs");
    let block = text
        .split_once("// schemes: begin")
        .and_then(|(_, rest)| rest.split_once("// schemes: end"))
        .map(|(block, _)| block)
        .expect("src/lb/mod.rs: no `// schemes: begin` ... `// schemes: end` block");
    let mut out = String::from("schemes! {\n");
    for line in block.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let module = line
            .strip_prefix("pub mod ")
            .and_then(|l| l.strip_suffix(';'))
            .filter(|m| {
                m.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
            .unwrap_or_else(|| {
                panic!(
                    "src/lb/mod.rs: the scheme registry holds `pub mod NAME;` lines, not `{line}`"
                )
            });
        // The enum variant: the module name in CamelCase (switch_p2c -> SwitchP2c).
        let variant: String = module
            .split('_')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default()
            })
            .collect();
        let _ = writeln!(out, "    {variant} => {module},");
    }
    out.push_str("}\n");
    let dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    std::fs::write(Path::new(&dir).join("schemes.rs"), out).expect("write the registry");
}

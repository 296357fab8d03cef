//! Embeds `assets/` (the demo store and its tokenizer) in the binary, so `tokscope demo` and
//! the default store work wherever the binary is installed (`cargo install`).

use std::fmt::Write;
use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    println!("cargo::rerun-if-changed=assets");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut code =
        String::from("/// Every file of `assets/`: its path under `assets/`, and its bytes.\n");
    code.push_str("pub(crate) const ASSETS: &[(&str, &[u8])] = &[\n");
    for relative in &files {
        let absolute = root.join(relative);
        let _ = writeln!(
            code,
            "    ({relative:?}, include_bytes!({:?})),",
            absolute.display().to_string()
        );
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("assets.rs");
    std::fs::write(out, code).expect("write the assets list");
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if let Ok(relative) = path.strip_prefix(root) {
            files.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

//! The bundled assets (the demo store and its tokenizer).

use std::path::PathBuf;

/// The bundled assets: next to the sources when they are there, else (an installed binary)
/// written once from the copy embedded in the binary into a directory of the temporary
/// directory named after this version.
pub fn dir() -> PathBuf {
    let sources = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    if sources.is_dir() && std::env::var_os("TOKSCOPE_EMBEDDED_ASSETS").is_none() {
        return sources;
    }
    unpack().unwrap_or(sources)
}

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// Write the embedded assets under the temporary directory (once per version and user; files
/// already there with the same bytes are left alone).
fn unpack() -> std::io::Result<PathBuf> {
    let user = std::env::var("USER").unwrap_or_default();
    let dir = std::env::temp_dir().join(format!(
        "tokscope-assets-{}-{}",
        env!("CARGO_PKG_VERSION"),
        user
    ));
    for (relative, bytes) in ASSETS {
        let path = dir.join(relative);
        if std::fs::read(&path).is_ok_and(|existing| existing == *bytes) {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // Written aside and renamed: a reader never sees half a file.
        let partial = path.with_extension(format!("partial-{}", std::process::id()));
        std::fs::write(&partial, bytes)?;
        std::fs::rename(&partial, &path)?;
    }
    Ok(dir)
}

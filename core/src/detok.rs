//! Decoding token ids to text with a local Hugging Face `tokenizer.json` (no network).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

/// A loaded tokenizer with a cache of decoded pieces.
pub struct Detokenizer {
    tokenizer: tokenizers::Tokenizer,
    pieces: Mutex<HashMap<u32, String>>,
}

impl std::fmt::Debug for Detokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detokenizer").finish_non_exhaustive()
    }
}

/// The longest piece a token's text is kept to (bytes): a vocabulary may hold an entry of
/// megabytes, and the token pane asks for pieces every frame.
pub const MAX_PIECE: usize = 4096;

/// `piece` cut to [`MAX_PIECE`] bytes (on a character boundary), its cut marked.
fn clip_piece(mut piece: String) -> String {
    if piece.len() > MAX_PIECE {
        let mut cut = MAX_PIECE;
        while !piece.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = piece.len();
        piece.truncate(cut);
        piece.push_str(&format!("…(+{} bytes)", total - cut));
    }
    piece
}

/// The largest `tokenizer.json` read (the largest real ones are tens of MB).
pub(crate) const MAX_TOKENIZER_BYTES: u64 = 256 << 20;

/// A tokenizer file that could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("{}: not a usable tokenizer.json ({reason})", path.display())]
pub struct TokenizerError {
    /// The file.
    pub path: std::path::PathBuf,
    /// What the tokenizer library said.
    pub reason: String,
}

impl Detokenizer {
    /// Load `tokenizer.json`.
    pub fn load(path: &Path) -> Result<Detokenizer, TokenizerError> {
        let error = |reason: String| TokenizerError {
            path: path.to_path_buf(),
            reason,
        };
        // A regular file of sane size only: never a FIFO, a device or a disk image.
        let bytes = crate::store::open::read_argument_file(path, MAX_TOKENIZER_BYTES)
            .map_err(|e| error(e.to_string()))?;
        // Nesting the JSON reader refuses (serde_json's limit) is refused here, with its own
        // words, before the tokenizer library sees it.
        serde_json::from_slice::<serde::de::IgnoredAny>(&bytes)
            .map_err(|e| error(e.to_string()))?;
        // The tokenizer library panics on some crafted files (decoders nested deep): caught,
        // quietly, and said as one line. Loading happens before any other thread starts, so
        // the quiet panic hook is this thread's alone.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let loaded = std::panic::catch_unwind(|| {
            let tokenizer = tokenizers::Tokenizer::from_bytes(bytes)?;
            // A decoder that fails on the first ids fails on any: tried now, not mid-screen.
            let probe: Vec<u32> = (0..tokenizer.get_vocab_size(true).min(256) as u32).collect();
            for id in &probe {
                let _ = tokenizer.decode(std::slice::from_ref(id), false);
            }
            let _ = tokenizer.decode(&probe, false);
            Ok::<_, tokenizers::Error>(tokenizer)
        });
        std::panic::set_hook(previous);
        let tokenizer = match loaded {
            Ok(Ok(tokenizer)) => tokenizer,
            Ok(Err(e)) => return Err(error(e.to_string())),
            Err(_) => return Err(error("the tokenizer library failed on it".to_owned())),
        };
        Ok(Detokenizer {
            tokenizer,
            pieces: Mutex::new(HashMap::new()),
        })
    }

    /// The cache of decoded pieces (still usable after a panic elsewhere poisoned it).
    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<u32, String>> {
        self.pieces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The text of one token (ids outside the vocabulary read as `⟨id⟩`).
    pub fn piece(&self, id: crate::store::TokenValue) -> String {
        let Ok(id) = u32::try_from(id) else {
            return format!("⟨{id}⟩");
        };
        if let Some(piece) = self.cache().get(&id) {
            return piece.clone();
        }
        let piece = match self.tokenizer.id_to_token(id) {
            None => format!("⟨{id}⟩"),
            Some(_) => clip_piece(
                self.tokenizer
                    .decode(&[id], false)
                    .unwrap_or_else(|_| format!("⟨{id}⟩")),
            ),
        };
        self.cache().insert(id, piece.clone());
        piece
    }

    /// The text of a token sequence.
    pub fn decode(&self, ids: &[crate::store::TokenValue]) -> String {
        let fits: Option<Vec<u32>> = ids.iter().map(|&id| u32::try_from(id).ok()).collect();
        fits.and_then(|ids| self.tokenizer.decode(&ids, false).ok())
            .unwrap_or_else(|| ids.iter().map(|&id| self.piece(id)).collect())
    }

    /// Encode text (used to generate the demo store).
    pub fn encode(&self, text: &str) -> Vec<u64> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().iter().map(|&id| u64::from(id)).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bundled tokenizer with its decoder wrapped in `depth` nested `Sequence` decoders.
    fn nested(depth: usize) -> std::path::PathBuf {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/tokenizer.json");
        let mut json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).expect("bundled")).expect("json");
        let mut decoder = json["decoder"].take();
        for _ in 0..depth {
            decoder = serde_json::json!({"type": "Sequence", "decoders": [decoder]});
        }
        json["decoder"] = decoder;
        let out = std::env::temp_dir().join(format!(
            "tokscope-nested-{depth}-{}.json",
            std::process::id()
        ));
        std::fs::write(&out, json.to_string()).expect("write");
        out
    }

    #[test]
    fn a_huge_vocabulary_entry_is_kept_short() {
        let piece = clip_piece("é".repeat(3 << 20));
        assert!(piece.len() <= MAX_PIECE + 32, "{}", piece.len());
        assert!(piece.ends_with(" bytes)"), "the cut is marked");
        assert_eq!(clip_piece("short".into()), "short");
    }

    #[test]
    fn a_crafted_tokenizer_is_refused_not_a_panic() {
        // 64 deep: past the JSON reader's limit; 30 deep: the tokenizer library's own panic.
        for depth in [64, 30, 2] {
            let path = nested(depth);
            let loaded = Detokenizer::load(&path);
            let _ = std::fs::remove_file(&path);
            match loaded {
                Err(error) => {
                    assert!(depth > 2, "a plain nesting loads: {error}");
                    assert!(error.to_string().contains("not a usable"), "{error}");
                }
                Ok(detok) => assert!(!detok.decode(&[72, 105]).is_empty()),
            }
        }
    }
}

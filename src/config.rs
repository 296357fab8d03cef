//! The user's configuration file and the state remembered between sessions, both small.
//!
//! - **Configuration**: `config.toml` in the platform's configuration directory
//!   (`$XDG_CONFIG_HOME/tokscope`, else `~/.config/tokscope`; on macOS
//!   `~/Library/Application Support/tokscope`), or the file `$TOKSCOPE_CONFIG` names. A
//!   theme, key overrides and default flags; flags on the command line win.
//! - **State**: `state.json` in the platform's state directory (`$XDG_STATE_HOME/tokscope`,
//!   else `~/.local/state/tokscope`; on macOS the configuration directory), or the file
//!   `$TOKSCOPE_STATE` names: per set of stores, the selected rollout, the bottom-right tab
//!   and the token pane's mode. Never inside a store.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::app::{Action, Remembered};

/// The configuration file.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Colors.
    #[serde(default)]
    pub theme: ThemeConfig,
    /// Flags used when the command line does not give them.
    #[serde(default)]
    pub defaults: Defaults,
    /// Extra keys: action name (`zoom`, `next_pane`, …) to key (`Z`, `Ctrl-N`, `F5`, …).
    #[serde(default)]
    pub keys: BTreeMap<String, String>,
}

/// `[theme]`.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ThemeConfig {
    /// `false`: no colors (as `NO_COLOR`, which still wins when set).
    pub color: Option<bool>,
}

/// `[defaults]`.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// `--tokenizer` of the explorer and replay.
    pub tokenizer: Option<PathBuf>,
    /// `--poll` of the explorer and `check --follow`.
    pub poll: Option<u64>,
    /// `--max-mask-fraction` of the explorer and `check --follow`.
    pub max_mask_fraction: Option<f64>,
    /// `--min-frozen`.
    pub min_frozen: Option<usize>,
    /// Generated tokens below this probability are "low" (default 0.1).
    pub low_probability: Option<f64>,
}

/// A configuration that cannot be used, and where.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConfigError {
    /// The file.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

/// A small file given by the user, read as the store's files are (never blocking on a FIFO).
fn read_small(path: &Path) -> std::io::Result<String> {
    let bytes = tokscope_core::store::open::read_argument_file(path, 1 << 20)?;
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// A `[keys]` entry that names no action or no key.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// `$VAR/tokscope` when `VAR` is set, else `~/fallback/tokscope` (macOS: Application Support).
fn platform_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(var).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("tokscope"));
    }
    let home = home()?;
    if cfg!(target_os = "macos") {
        return Some(home.join("Library/Application Support/tokscope"));
    }
    Some(home.join(fallback).join("tokscope"))
}

/// Where the configuration file is looked for.
pub fn config_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TOKSCOPE_CONFIG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    Some(platform_dir("XDG_CONFIG_HOME", ".config")?.join("config.toml"))
}

/// Where the remembered state is kept.
pub fn state_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TOKSCOPE_STATE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    Some(platform_dir("XDG_STATE_HOME", ".local/state")?.join("state.json"))
}

impl Config {
    /// The configuration at `path`; none when there is no such file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let error = |message: String| ConfigError {
            path: path.display().to_string(),
            message,
        };
        let text = match read_small(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(error(e.to_string())),
        };
        // Each part is a table: `[[theme]]` (an array of tables) is named for what it is, not
        // for the first field serde happened to expect.
        if let Ok(table) = toml::from_str::<toml::Table>(&text) {
            for (name, value) in &table {
                if !value.is_table() {
                    let written = if value.is_array() {
                        format!("[[{name}]] (an array of tables)")
                    } else {
                        format!("{name} = … (a {})", value.type_str())
                    };
                    return Err(error(format!(
                        "{written}: `{name}` is a table; write it as [{name}]"
                    )));
                }
            }
        }
        let config: Config = toml::from_str(&text).map_err(|e| {
            // One line: where, and what (the error's own text draws a multi-line diagram).
            let at = e.span().map(|span| {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                format!("line {line}, column {column}: ")
            });
            error(format!("{}{}", at.unwrap_or_default(), e.message().trim()))
        })?;
        config.keys().map_err(|KeyError(message)| error(message))?;
        if let Some(p) = config.defaults.low_probability
            && !(p > 0.0 && p < 1.0)
        {
            return Err(error(format!(
                "low_probability = {p}: a probability between 0 and 1"
            )));
        }
        if let Some(f) = config.defaults.max_mask_fraction
            && !(0.0..=1.0).contains(&f)
        {
            return Err(error(format!(
                "max_mask_fraction = {f}: a fraction between 0 and 1"
            )));
        }
        if config
            .defaults
            .poll
            .is_some_and(|ms| !(50..=3_600_000).contains(&ms))
        {
            return Err(error("poll: between 50 ms and an hour (3600000)".into()));
        }
        if config
            .defaults
            .tokenizer
            .as_ref()
            .is_some_and(|t| t.as_os_str().is_empty())
        {
            return Err(error(
                "tokenizer = \"\": name a tokenizer.json, or leave the line out".into(),
            ));
        }
        Ok(config)
    }

    /// The key overrides, checked: `(key, action)`.
    pub fn keys(&self) -> Result<Vec<(String, Action)>, KeyError> {
        self.keys
            .iter()
            .map(|(name, key)| {
                let action = Action::named(name).ok_or_else(|| {
                    KeyError(format!(
                        "[keys] {name}: no such action (one of: {})",
                        Action::all().map(Action::name).collect::<Vec<_>>().join(", ")
                    ))
                })?;
                // Arrows by name too, as the help writes them (↑ ↓ ← →).
                let key = match key.as_str() {
                    "Up" => "↑",
                    "Down" => "↓",
                    "Left" => "←",
                    "Right" => "→",
                    other => other,
                }
                .to_owned();
                if !crate::ui::keys::is_key_name(&key) {
                    return Err(KeyError(format!(
                        "[keys] {name} = {key:?}: not a key (a character, Ctrl-X, F1…F24, Space, Tab, Enter, Esc, PgUp, PgDn, Home, End, Up, Down, Left, Right)"
                    )));
                }
                Ok((key, action))
            })
            .collect()
    }

    /// The theme: the file's choice, unless `NO_COLOR` says otherwise.
    pub fn theme(&self) -> crate::ui::Theme {
        let mut theme = crate::ui::Theme::from_env();
        theme.color &= self.theme.color.unwrap_or(true);
        theme
    }
}

/// The state file: what is remembered, by set of stores, the most recent last.
#[derive(Debug, Default, Deserialize, Serialize)]
pub struct State {
    /// The stores' canonical paths (one a line) and what was shown of them.
    pub stores: Vec<(String, Remembered)>,
    /// The file at the path could not be read as a state (too large, not JSON, not a file):
    /// it is left as it is, never replaced.
    #[serde(skip)]
    pub unreadable: bool,
}

/// Why the state was not written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The state's directory is (inside) a store.
    #[error("state file {path}: {refusal}")]
    InStore {
        /// The state file.
        path: String,
        /// Why the directory is refused.
        refusal: crate::app::output::Refusal,
    },
    /// The file there is not a state tokscope wrote: kept as it is.
    #[error(
        "state file {0}: not a state tokscope can read (too large, not JSON or not a file); left as it is"
    )]
    Unreadable(String),
    /// Writing failed.
    #[error("state file {path}: {source}")]
    Io {
        /// The state file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
}

/// The key of a set of stores in the state file.
pub fn stores_key(stores: &[PathBuf]) -> String {
    stores
        .iter()
        .map(|s| {
            s.canonicalize()
                .unwrap_or_else(|_| s.clone())
                .display()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// At most this many sets of stores are remembered (the state stays small).
const REMEMBERED: usize = 64;

impl State {
    /// The state at `path` (empty when missing; empty and [`State::unreadable`] when the
    /// file there cannot be read as one: it is only a convenience).
    pub fn load(path: &Path) -> State {
        match read_small(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => State::default(),
            read => read
                .ok()
                .and_then(|text| serde_json::from_str(&text).ok())
                .unwrap_or(State {
                    unreadable: true,
                    ..State::default()
                }),
        }
    }

    /// Write the state to `path` whole: never into a store (`stores`, or a directory that
    /// holds token files), never over a file it could not read, under a fresh name (created
    /// exclusively, never through a symlink), synced, then renamed over.
    pub fn save(&self, path: &Path, stores: &[PathBuf]) -> Result<(), StateError> {
        let shown = || tokscope_core::text::path(path);
        let io = |source| StateError::Io {
            path: shown(),
            source,
        };
        if self.unreadable {
            return Err(StateError::Unreadable(shown()));
        }
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(io(std::io::Error::other("no file name")));
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        // Checked before anything is made: the nearest directory that exists is where the
        // state would go (a directory made under a store is inside it).
        let refused = |refusal| StateError::InStore {
            path: shown(),
            refusal,
        };
        if let Some(existing) = dir.ancestors().find(|d| d.is_dir()) {
            let existing = existing.canonicalize().map_err(io)?;
            crate::app::output::check_outside_stores(&existing, stores).map_err(refused)?;
        }
        // Directories made now are new and empty: neither a store nor inside one.
        std::fs::create_dir_all(dir).map_err(io)?;
        let dir = dir.canonicalize().map_err(io)?;
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| io(e.into()))?;
        crate::app::output::replace(&dir, &name.to_string_lossy(), &bytes, None)
            .map(drop)
            .map_err(io)
    }

    /// What is remembered of the stores `key` names.
    pub fn get(&self, key: &str) -> Option<&Remembered> {
        self.stores.iter().find(|(k, _)| k == key).map(|(_, r)| r)
    }

    /// Remember `what` for `key` as the most recent, forgetting the least recent sets
    /// beyond the limit.
    pub fn remember(&mut self, key: String, what: Remembered) {
        self.stores.retain(|(k, _)| *k != key);
        self.stores.push((key, what));
        let excess = self.stores.len().saturating_sub(REMEMBERED);
        self.stores.drain(..excess);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        Config::load(&path)
    }

    #[test]
    fn mistakes_are_named_for_what_they_are() {
        let message = |text: &str| parse(text).expect_err("refused").to_string();
        let theme = message("[[theme]]\ncolor = false\n");
        assert!(
            theme.contains("[[theme]] (an array of tables): `theme` is a table"),
            "{theme}"
        );
        let tokenizer = message("[defaults]\ntokenizer = \"\"\n");
        assert!(
            tokenizer.contains("config.toml") && tokenizer.contains("tokenizer = \"\""),
            "{tokenizer}"
        );
        assert!(message("[defaults]\npoll = 99999999999\n").contains("an hour"));
        assert!(message("keys = 3\n").contains("keys = … (a integer): `keys` is a table"));
    }

    #[test]
    fn a_full_configuration_reads() {
        let config = parse(
            r#"
            [theme]
            color = false
            [defaults]
            tokenizer = "/models/tokenizer.json"
            poll = 500
            max_mask_fraction = 0.2
            min_frozen = 5
            low_probability = 0.05
            [keys]
            zoom = "Z"
            next_pane = "Ctrl-N"
            quit = "F10"
            page_up = "Up"
            "#,
        )
        .unwrap();
        assert_eq!(config.theme.color, Some(false));
        assert!(!config.theme().color);
        assert_eq!(config.defaults.poll, Some(500));
        assert_eq!(config.defaults.min_frozen, Some(5));
        let keys = config.keys().unwrap();
        assert!(keys.contains(&("Z".to_owned(), Action::Zoom)));
        assert!(keys.contains(&("Ctrl-N".to_owned(), Action::NextPane)));
        assert!(keys.contains(&("F10".to_owned(), Action::Quit)));
        assert!(keys.contains(&("↑".to_owned(), Action::PageUp)));
    }

    #[test]
    fn mistakes_are_named_with_the_file() {
        for (text, says) in [
            ("[keys]\nfly = \"x\"", "no such action"),
            ("[keys]\nzoom = \"Hyper-Z\"", "not a key"),
            ("[defaults]\nlow_probability = 2.0", "between 0 and 1"),
            ("[defaults]\npoll = 5", "50 ms"),
            ("[defaults]\ncolour = true", "unknown field"),
            ("not toml at all [", "line 1, column"),
        ] {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains("config.toml"), "{error}");
            assert!(!error.contains('\n'), "one line: {error}");
            assert!(error.contains(says), "{text}: {error}");
        }
        // No file: the defaults.
        let missing = Config::load(Path::new("/nonexistent/tokscope/config.toml")).unwrap();
        assert_eq!(missing, Config::default());
    }

    #[test]
    fn state_round_trips_and_stays_small() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/state.json");
        let mut state = State::load(&path);
        assert!(state.stores.is_empty());
        let what = Remembered {
            rollout: Some("0-3-a1".into()),
            tab: Some("gaps".into()),
            tokens: Some("prose".into()),
        };
        state.remember("a".into(), what.clone());
        for n in 0..100 {
            state.remember(format!("z{n:03}"), Remembered::default());
        }
        state.remember("a".into(), what.clone());
        state.save(&path, &[]).unwrap();
        let again = State::load(&path);
        assert!(again.stores.len() <= REMEMBERED);
        assert_eq!(again.get("a"), Some(&what));
        assert_eq!(again.get("z000"), None, "the least recent is forgotten");
        std::fs::write(&path, "{garbage").unwrap();
        assert!(State::load(&path).stores.is_empty());
    }

    #[test]
    fn the_state_never_goes_into_a_store_nor_over_a_file_it_cannot_read() {
        let dir = tempfile::tempdir().unwrap();
        // Inside a store: named, or found by its token files.
        let store = dir.path().join("store");
        std::fs::create_dir(&store).unwrap();
        std::fs::write(store.join("r.tokens.jsonl"), b"").unwrap();
        let inside = store.join("state.json");
        let state = State::default();
        assert!(matches!(
            state.save(&inside, std::slice::from_ref(&store)),
            Err(StateError::InStore { .. })
        ));
        assert!(matches!(
            state.save(&inside, &[]),
            Err(StateError::InStore { .. })
        ));
        assert!(!inside.exists(), "nothing was created in the store");
        // A symlink planted where a temporary file would go is never followed: the
        // temporary name is fresh, and the target is replaced by rename.
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let victim = store.join("r.tokens.jsonl");
        std::os::unix::fs::symlink(
            &victim,
            home.join(format!("state.json.{}", std::process::id())),
        )
        .unwrap();
        state
            .save(&home.join("state.json"), std::slice::from_ref(&store))
            .unwrap();
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"",
            "the store file is untouched"
        );
        // A state file over 1 MiB (or not JSON) is left as it is.
        let big = home.join("big.json");
        std::fs::write(&big, vec![b' '; (1 << 20) + 1]).unwrap();
        let loaded = State::load(&big);
        assert!(loaded.unreadable);
        assert!(matches!(
            loaded.save(&big, &[]),
            Err(StateError::Unreadable(_))
        ));
        assert_eq!(std::fs::metadata(&big).unwrap().len(), (1 << 20) + 1);
        // A directory at the path: an error, and no litter.
        let taken = home.join("taken");
        std::fs::create_dir(&taken).unwrap();
        assert!(State::default().save(&taken, &[]).is_err());
        let litter = std::fs::read_dir(&home)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("tokscope-"))
            .count();
        assert_eq!(litter, 0);
    }
}

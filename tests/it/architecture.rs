//! The shape of the code, checked:
//!
//! - **crates**: `tokscope-core` (the domain) cannot reach a terminal: ratatui, crossterm and
//!   clap are not among its dependencies, and it never names the front end;
//! - **layers**: in each crate, every dependency between top-level modules points down;
//! - **no circle** anywhere: among the modules of one parent (at every depth), the uses form
//!   no circle, whether they are written `crate::…`, `super::…` or `self::…` (a use of a
//!   module's descendant counts as a use of the module);
//! - **no reaching back**: a `pub use` re-exports only the module's own descendants, never
//!   `crate::`, `super::` or another crate's items, so no alias hides a use;
//! - no source file grows past 800 lines, errors are typed (no `Result<_, String>`, `anyhow`
//!   only in the binary), and test writers stay out of the libraries.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate of the workspace: its directory and its top-level layers, lowest first. A module
/// may use only modules of a lower layer (and its own).
struct Crate {
    dir: &'static str,
    layers: &'static [(&'static str, usize)],
}

const CORE: Crate = Crate {
    dir: "core",
    layers: &[
        ("text", 0),
        ("pool", 0),   // the worker pool of every parallel pass
        ("work", 0),   // the work counters
        ("hash", 0),   // the fast hasher of the hot maps
        ("memory", 0), // what the process does with the memory it frees
        ("store", 1),
        ("detok", 2), // decodes ids (store::TokenValue), reads its file through store::open
        ("rebuild", 2), // chains records of the store
        ("observe", 3), // rows, records and joins
        ("verdict", 4),
        ("gaps", 5),
        ("causes", 5), // a run's masked rollouts grouped by cause signature
        ("health", 6), // store-wide counts of summaries, the causes among them
        ("graph", 6),  // the observation graph, above judging
        ("report", 7),
        ("compare", 7),  // two runs side by side
        ("timeline", 7), // a run over time
        ("table", 7),
        ("load", 8),
        ("live", 9),
        ("follow", 9), // the kill switch's judge
    ],
};

const FRONT: Crate = Crate {
    dir: ".",
    layers: &[
        ("app", 0),
        ("ui", 1),
        ("term", 2),
        ("config", 2),   // the user's file and state: themes, keys, what to restore
        ("commands", 3), // the binary's commands (beside `main.rs` and `cli.rs`)
    ],
};

/// Dependencies the domain crate must never have.
const TERMINAL_CRATES: &[&str] = &[
    "ratatui",
    "crossterm",
    "clap",
    "clap_complete",
    "clap_mangen",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Source files of a crate with their module paths (`src/observe/rows.rs` → `observe::rows`;
/// `lib.rs` and `main.rs` are the root, "").
fn source_files(krate: &Crate) -> Vec<(PathBuf, String)> {
    let src = root().join(krate.dir).join("src");
    let mut files = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(&src).unwrap().with_extension("");
                let module = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .filter(|c| c != "mod" && c != "lib" && c != "main")
                    .collect::<Vec<_>>()
                    .join("::");
                files.push((path, module));
            }
        }
    }
    files.sort();
    files
}

fn read(krate: &Crate) -> Vec<(String, String)> {
    source_files(krate)
        .into_iter()
        .map(|(path, module)| (module, std::fs::read_to_string(path).unwrap()))
        .collect()
}

/// The code before the file's unit tests, without comment lines (doc links are no use).
fn non_test_code(text: &str) -> String {
    let code = text
        .find("#[cfg(test)]\nmod tests")
        .map_or(text, |at| &text[..at]);
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The path written right after each occurrence of `prefix` (`crate::a::b` → `a::b`).
fn paths_after(code: &str, prefix: &str) -> Vec<(usize, String)> {
    let mut paths = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find(prefix) {
        let at = from + found;
        let starts_word = code[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'));
        let tail = &code[at + prefix.len()..];
        let path: String = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        if starts_word {
            paths.push((at, path.trim_end_matches(':').to_owned()));
        }
        from = at + prefix.len() + path.len();
    }
    paths
}

/// The module paths `code` of `module` names, absolute: `crate::a::b`, `super::…` chains
/// (each one level up from the file's module), and `self::…`.
fn used_paths(module: &str, code: &str) -> Vec<String> {
    let own: Vec<&str> = if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").collect()
    };
    let mut used: Vec<String> = paths_after(code, "crate::")
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    for (_, path) in paths_after(code, "self::") {
        used.push(join(&own, &path));
    }
    for (at, path) in paths_after(code, "super::") {
        // Count the chain `super::super::…` once, from its first link.
        if code[..at].ends_with("super::") {
            continue;
        }
        let mut rest = path.as_str();
        let mut up = 1;
        while let Some(next) = rest.strip_prefix("super::") {
            rest = next;
            up += 1;
        }
        if rest == "super" {
            rest = "";
            up += 1;
        }
        let base = &own[..own.len().saturating_sub(up)];
        used.push(join(base, rest));
    }
    used
}

fn join(base: &[&str], path: &str) -> String {
    let mut parts: Vec<&str> = base.to_vec();
    parts.extend(path.split("::").filter(|p| !p.is_empty()));
    parts.join("::")
}

/// The module (among `modules`) a path names: its longest prefix that is a module.
fn module_of(modules: &BTreeSet<String>, path: &str) -> String {
    let parts: Vec<&str> = path.split("::").collect();
    (0..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|candidate| modules.contains(candidate))
        .unwrap_or_default()
}

/// Every `pub use` of `code` (a `pub(…) use` too): the path up to its `;`.
fn pub_uses(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for prefix in ["pub use ", "pub(crate) use ", "pub(super) use "] {
        for (at, _) in code.match_indices(prefix) {
            let starts_line = code[..at]
                .chars()
                .rev()
                .take_while(|c| *c != '\n')
                .all(char::is_whitespace);
            let rest = &code[at + prefix.len()..];
            if starts_line && let Some(end) = rest.find(';') {
                found.push(rest[..end].split_whitespace().collect::<Vec<_>>().join(" "));
            }
        }
    }
    found
}

/// The names a module re-exports from its own children: (module, name) → the child module.
fn reexported(files: &[(String, String)]) -> BTreeMap<(String, String), String> {
    let modules: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut names = BTreeMap::new();
    for (module, text) in files {
        let own: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        for used in pub_uses(&non_test_code(text)) {
            let used = used.strip_prefix("self::").unwrap_or(&used);
            let (path, items) = match used.split_once("::{") {
                Some((path, items)) => (path.to_owned(), items.trim_end_matches('}').to_owned()),
                None => match used.rsplit_once("::") {
                    Some((path, item)) => (path.to_owned(), item.to_owned()),
                    None => continue,
                },
            };
            let child = module_of(&modules, &join(&own, &path));
            if child == *module || !modules.contains(&child) {
                continue;
            }
            for item in items.split(',') {
                // `a as b` is known as `b`.
                let name = item.split(" as ").last().unwrap_or_default().trim();
                if !name.is_empty() {
                    names.insert((module.clone(), name.to_owned()), child.clone());
                }
            }
        }
    }
    names
}

/// Module → the modules it uses, for `files` of (module path, text). A name a module
/// re-exports from a child counts as a use of the child (no alias hides a use).
fn uses(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let names = reexported(files);
    let resolve = |path: &str| {
        let module = module_of(&modules, path);
        let depth = module.split("::").filter(|s| !s.is_empty()).count();
        let item = path.split("::").nth(depth).unwrap_or_default();
        names
            .get(&(module.clone(), item.to_owned()))
            .cloned()
            .unwrap_or(module)
    };
    files
        .iter()
        .map(|(module, text)| {
            let code = non_test_code(text);
            let used = used_paths(module, &code)
                .iter()
                .map(|path| resolve(path))
                .filter(|used| used != module)
                .collect();
            (module.clone(), used)
        })
        .collect()
}

/// For a use `from → to`, the two siblings it joins: the children of their deepest common
/// ancestor on each side (none when one contains the other).
fn siblings(from: &str, to: &str) -> Option<(String, String)> {
    let a: Vec<&str> = from.split("::").filter(|s| !s.is_empty()).collect();
    let b: Vec<&str> = to.split("::").filter(|s| !s.is_empty()).collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    (common < a.len() && common < b.len())
        .then(|| (a[..=common].join("::"), b[..=common].join("::")))
}

/// Every circle among siblings, each as the modules on it.
fn circles(uses: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, used) in uses {
        for to in used {
            if let Some((a, b)) = siblings(from, to) {
                graph.entry(a).or_default().insert(b);
            }
        }
    }
    // A module is on a circle when it reaches itself.
    let reach = |start: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = graph.get(start).into_iter().flatten().collect();
        while let Some(next) = stack.pop() {
            if seen.insert(next.clone()) {
                stack.extend(graph.get(next).into_iter().flatten());
            }
        }
        seen
    };
    let mut found: Vec<Vec<String>> = Vec::new();
    for module in graph.keys() {
        let reached = reach(module);
        if reached.contains(module) {
            let mut circle: Vec<String> = reached
                .into_iter()
                .filter(|other| reach(other).contains(module))
                .collect();
            circle.sort();
            if !found.contains(&circle) {
                found.push(circle);
            }
        }
    }
    found
}

/// The layer of a module path like `graph::text` (by its first component).
fn layer(krate: &Crate, module: &str) -> Option<(&'static str, usize)> {
    let top = module.split("::").next().unwrap_or_default();
    krate.layers.iter().find(|(name, _)| *name == top).copied()
}

/// Uses of a higher (or unknown) layer.
fn layer_violations(krate: &Crate, files: &[(String, String)]) -> Vec<String> {
    let mut violations = Vec::new();
    for (module, used) in uses(files) {
        if module.is_empty() || module == "cli" {
            continue; // the crate root and the binary's argument definitions
        }
        let Some((own_name, own)) = layer(krate, &module) else {
            violations.push(format!("{module}: not in any layer (add it to the layers)"));
            continue;
        };
        for used in used {
            let Some((name, rank)) = layer(krate, &used) else {
                if !used.is_empty() && used != "cli" {
                    violations.push(format!("{module} uses {used}, which is in no layer"));
                }
                continue;
            };
            if name != own_name && rank >= own {
                violations.push(format!("{module} (layer {own}) uses {used} (layer {rank})"));
            }
        }
    }
    violations
}

/// `pub use` items that are not the module's own descendants.
fn reexports_reaching_out(files: &[(String, String)]) -> Vec<String> {
    let modules: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut found = Vec::new();
    for (module, text) in files {
        let code = non_test_code(text);
        for line in code.lines() {
            let line = line.trim_start();
            let Some(rest) = ["pub use ", "pub(crate) use ", "pub(super) use "]
                .iter()
                .find_map(|p| line.strip_prefix(p))
            else {
                continue;
            };
            let path = rest.strip_prefix("self::").unwrap_or(rest);
            let first = path
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default();
            let child = join(
                &module
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>(),
                first,
            );
            if !modules.contains(&child) {
                found.push(format!("{module}: pub use {}", rest.trim_end()));
            }
        }
    }
    found
}

/// The names in a manifest's `[dependencies]` table.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && let Some((name, _)) = line.split_once('=') {
            names.push(name.trim().replace('-', "_"));
        }
    }
    names
}

#[test]
fn the_core_crate_cannot_reach_a_terminal() {
    let manifest = std::fs::read_to_string(root().join("core/Cargo.toml")).unwrap();
    let deps = dependencies(&manifest);
    let found: Vec<&String> = deps
        .iter()
        .filter(|d| TERMINAL_CRATES.contains(&d.as_str()))
        .collect();
    assert!(found.is_empty(), "tokscope-core depends on {found:?}");
    assert!(
        deps.contains(&"serde".to_owned()),
        "the table was read: {deps:?}"
    );
    for (module, text) in read(&CORE) {
        assert!(
            !non_test_code(&text).contains("tokscope::"),
            "core module {module} names the front end"
        );
    }
}

#[test]
fn every_dependency_points_down() {
    for krate in [&CORE, &FRONT] {
        let violations = layer_violations(krate, &read(krate));
        assert!(violations.is_empty(), "{}", violations.join("\n"));
    }
}

#[test]
fn no_circle_anywhere() {
    for krate in [&CORE, &FRONT] {
        let found = circles(&uses(&read(krate)));
        assert!(found.is_empty(), "{}: circles {found:?}", krate.dir);
    }
}

#[test]
fn no_reexport_reaches_back() {
    for krate in [&CORE, &FRONT] {
        let found = reexports_reaching_out(&read(krate));
        assert!(found.is_empty(), "{}", found.join("\n"));
    }
}

#[test]
fn the_checks_can_fail() {
    let file = |module: &str, text: &str| (module.to_owned(), text.to_owned());
    assert_eq!(
        used_paths(
            "rebuild::merge",
            "use super::memo::X; use super::super::store::Y;"
        ),
        vec!["rebuild::memo::X", "store::Y"]
    );
    assert_eq!(used_paths("a::b", "use self::c::D;"), vec!["a::b::c::D"]);
    // Layers: a use of a higher layer, not hidden by a comment or a test module.
    let found = layer_violations(
        &CORE,
        &[
            file("verdict", "use crate::graph::summary;"),
            file("text", "// crate::live in a comment is fine"),
            file("gaps", "use crate::verdict::Analysis;"),
            file("graph", ""),
            file(
                "store::read",
                "fn f() {}\n#[cfg(test)]\nmod tests {\n use crate::live::X;\n}",
            ),
        ],
    );
    assert_eq!(found.len(), 1, "{found:?}");
    // Circles: siblings through `super::`, and through a descendant.
    let found = circles(&uses(&[
        file("rebuild", ""),
        file("rebuild::merge", "use super::output::BuildOutput;"),
        file("rebuild::output", "use crate::rebuild::merge::deep::Memo;"),
        file("rebuild::merge::deep", ""),
        file("store", "use crate::rebuild::X;"),
    ]));
    assert_eq!(found, vec![vec!["rebuild::merge", "rebuild::output"]]);
    assert!(
        circles(&uses(&[
            file("a", "use b::X;"),
            file("a::b", "use super::Y;")
        ]))
        .is_empty()
    );
    // Re-exports: an alias of another module's item, or of another crate's, is refused.
    let found = reexports_reaching_out(&[
        file(
            "rebuild",
            "pub use crate::store::seq;\npub use merge::prefix;",
        ),
        file("rebuild::merge", "pub use super::memo::DigestMemo;"),
        file("ui", "pub use tokscope_core::graph::text::line_text;"),
        file("ui::theme", ""),
        file("ui::x", "pub use self::y::Z;"),
        file("ui::x::y", ""),
    ]);
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(
        dependencies(
            "[package]\nname = \"x\"\n[dependencies]\nratatui = \"1\"\n[dev-dependencies]\nclap = \"1\""
        ),
        vec!["ratatui"]
    );
}

#[test]
fn source_files_stay_short() {
    let long: Vec<String> = [&CORE, &FRONT]
        .into_iter()
        .flat_map(source_files)
        .filter_map(|(path, _)| {
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            (lines > 800).then(|| format!("{}: {lines} lines", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these files: {long:?}");
}

/// Whether `path` is a module its parent declares for tests only (`#[cfg(test)]` then
/// `mod <name>;`).
fn is_test_module(path: &Path) -> bool {
    let (Some(dir), Some(name)) = (path.parent(), path.file_stem().and_then(|s| s.to_str())) else {
        return false;
    };
    let declared = format!("#[cfg(test)]\nmod {name};");
    let parents = [
        dir.with_extension("rs"),
        dir.join("mod.rs"),
        dir.join("lib.rs"),
    ];
    parents
        .iter()
        .any(|parent| std::fs::read_to_string(parent).is_ok_and(|text| text.contains(&declared)))
}

#[test]
fn errors_are_typed() {
    let mut found = Vec::new();
    for (krate, binary) in [(&CORE, false), (&FRONT, true)] {
        for (path, _) in source_files(krate) {
            let text = std::fs::read_to_string(&path).unwrap();
            for (number, line) in text.lines().enumerate() {
                let line: String = line.split_whitespace().collect();
                if line.contains("Result<") && line.contains(",String>") {
                    found.push(format!("{}:{}", path.display(), number + 1));
                }
            }
            let in_binary = binary && is_binary_source(&path);
            if !in_binary && text.contains("anyhow") {
                found.push(format!("{}: anyhow outside the binary", path.display()));
            }
            if text.contains("tokscope_testkit")
                && !text.contains("#[cfg(test)]")
                && !is_test_module(&path)
            {
                found.push(format!("{}: a test writer in the library", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "{found:?}");
}

/// The binary's own sources: `main.rs` and the command modules it declares.
fn is_binary_source(path: &Path) -> bool {
    let src = root().join("src");
    path == src.join("main.rs") || path.starts_with(src.join("commands"))
}

/// The libc items used outside Linux-gated code: each of them is in the libc crate's macOS
/// (apple) module too (checked against libc 0.2.191's sources), so the crates build on macOS.
const PORTABLE_LIBC: &[&str] = &[
    "localtime_r",
    "time_t",
    "tm",
    "ELOOP",
    "ENOSPC",
    "EPERM",
    "FD_CLOEXEC",
    "F_GETFD",
    "F_GETFL",
    "F_SETFD",
    "F_SETFL",
    "O_CLOEXEC",
    "O_NOFOLLOW",
    "O_NONBLOCK",
    "POLLERR",
    "POLLHUP",
    "POLLIN",
    "POLLNVAL",
    "STDIN_FILENO",
    "dup2",
    "fcntl",
    "mkfifo",
    "off_t",
    "pipe",
    "poll",
    "pollfd",
    "pread",
    "read",
    "tcgetattr",
    "termios",
];

/// `libc::` items (and `std::os::linux`) used where no `#[cfg(target_os = "linux")]` (or
/// `cfg!`) gates them, in `files` of (module, text); a test module counts as gated only by
/// its own attribute.
fn ungated_platform_calls(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (module, text) in files {
        let lines: Vec<&str> = text.lines().collect();
        for (number, line) in lines.iter().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let gated = lines[number.saturating_sub(12)..=number]
                .iter()
                .any(|l| l.contains("target_os = \"linux\""));
            let mut names: Vec<String> = paths_after(line, "libc::")
                .into_iter()
                .map(|(_, p)| p)
                .filter(|name| !PORTABLE_LIBC.contains(&name.as_str()))
                .collect();
            if line.contains("std::os::linux") {
                names.push("std::os::linux".to_owned());
            }
            for name in names.into_iter().filter(|_| !gated) {
                found.push(format!("{module}:{}: {name} is not portable", number + 1));
            }
        }
    }
    found
}

#[test]
fn linux_only_calls_are_gated() {
    for krate in [&CORE, &FRONT] {
        let found = ungated_platform_calls(&read(krate));
        assert!(found.is_empty(), "{}", found.join("\n"));
    }
    let file = |text: &str| vec![("m".to_owned(), text.to_owned())];
    assert_eq!(
        ungated_platform_calls(&file("let f = libc::O_NOATIME | libc::O_NONBLOCK;")).len(),
        1
    );
    assert!(
        ungated_platform_calls(&file(
            "#[cfg(target_os = \"linux\")]\nconst A: i32 = libc::O_NOATIME;"
        ))
        .is_empty()
    );
}

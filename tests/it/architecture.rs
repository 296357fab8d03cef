//! The shape of the code, checked: every dependency points down the layers (so no circle of
//! modules can form), no source file grows past 800 lines, errors are typed (no
//! `Result<_, String>`, `anyhow` only in the binary), and test writers stay out of the library.

use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may use only modules of a lower layer (and its own).
const LAYERS: &[(&str, usize)] = &[
    ("text", 0),
    ("detok", 8), // decodes ids (rebuild::TokenValue), reads its file through store::open
    ("store", 1),
    ("rebuild", 2),
    ("observe", 3), // rows, records and joins (the graph is above judging)
    ("verdict", 4),
    ("gaps", 5),
    ("observe::graph", 6),
    ("report", 7),
    ("table", 8),
    ("load", 9),
    ("live", 10),
    ("app", 11),
    ("ui", 12),
    ("term", 13),
    ("config", 13), // the user's file and state: themes, keys, what to restore
];

/// The layer of a module path like `observe::graph` or `app` (the longest match wins).
fn layer(path: &str) -> Option<(&'static str, usize)> {
    LAYERS
        .iter()
        .filter(|(name, _)| path == *name || path.starts_with(&format!("{name}::")))
        .max_by_key(|(name, _)| name.len())
        .copied()
}

/// Library source files with their module paths (`src/observe/graph.rs` → `observe::graph`).
fn library_files() -> Vec<(PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
                    .filter(|c| c != "mod")
                    .collect::<Vec<_>>()
                    .join("::");
                files.push((path, module));
            }
        }
    }
    files.sort();
    files
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

/// Every `crate::a::b` path the code names.
fn crate_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let tail = &rest[at + "crate::".len()..];
        let path: String = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        paths.push(path.trim_end_matches(':').to_owned());
        rest = &tail[path.len()..];
    }
    paths
}

/// Uses of a higher (or unknown) layer in `files` of (module path, text).
fn violations(files: &[(String, String)]) -> Vec<String> {
    let mut violations = Vec::new();
    for (module, text) in files {
        if matches!(module.as_str(), "main" | "cli" | "lib") {
            continue;
        }
        let Some((own_name, own)) = layer(module) else {
            violations.push(format!("{module}: not in any layer (add it to LAYERS)"));
            continue;
        };
        for used in crate_paths(&non_test_code(text)) {
            let Some((name, rank)) = layer(&used) else {
                violations.push(format!("{module} uses crate::{used}, which is in no layer"));
                continue;
            };
            if name != own_name && rank >= own {
                violations.push(format!(
                    "{module} (layer {own}) uses crate::{used} (layer {rank})"
                ));
            }
        }
    }
    violations
}

#[test]
fn every_dependency_points_down() {
    let files: Vec<(String, String)> = library_files()
        .into_iter()
        .map(|(path, module)| (module, std::fs::read_to_string(path).unwrap()))
        .collect();
    let violations = violations(&files);
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn the_layer_check_can_fail() {
    assert_eq!(crate_paths("use crate::app::{App};"), vec!["app"]);
    assert_eq!(
        crate_paths("x: crate::observe::graph::GraphLine"),
        vec!["observe::graph::GraphLine"]
    );
    assert_eq!(layer("observe::graph::GraphLine").map(|l| l.1), Some(6));
    assert_eq!(layer("observe::Rows").map(|l| l.1), Some(3));
    assert_eq!(layer("ui::strings").map(|l| l.1), Some(12));
    let file = |module: &str, text: &str| (module.to_owned(), text.to_owned());
    let found = violations(&[
        file("verdict", "use crate::observe::graph::summary;"),
        file(
            "app::list",
            "use crate::ui::strings;\n// crate::term in a comment is fine",
        ),
        file("gaps", "use crate::verdict::Analysis;"),
        file(
            "store::read",
            "fn f() {}\n#[cfg(test)]\nmod tests {\n use crate::app::App;\n}",
        ),
    ]);
    assert_eq!(found.len(), 2, "{found:?}");
}

#[test]
fn source_files_stay_short() {
    let long: Vec<String> = library_files()
        .into_iter()
        .filter_map(|(path, _)| {
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            (lines > 800).then(|| format!("{}: {lines} lines", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these files: {long:?}");
}

#[test]
fn errors_are_typed() {
    let mut found = Vec::new();
    for (path, module) in library_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let compact: String = text.split_whitespace().collect();
        if compact.contains(",String>") && compact.contains("Result<") {
            for (number, line) in text.lines().enumerate() {
                let line: String = line.split_whitespace().collect();
                if line.contains("Result<") && line.contains(",String>") {
                    found.push(format!("{}:{}", path.display(), number + 1));
                }
            }
        }
        if module != "main" && text.contains("anyhow") {
            found.push(format!("{}: anyhow outside the binary", path.display()));
        }
        if text.contains("tokscope_testkit") && !text.contains("#[cfg(test)]") {
            found.push(format!("{}: a test writer in the library", path.display()));
        }
    }
    assert!(found.is_empty(), "{found:?}");
}

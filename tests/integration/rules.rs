//! CONTRIBUTING's rules that a grep can check: a report never imports
//! `detect`, and no function returns `Result<_, String>` (errors are typed).

use crate::util::root;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The lines of code (not comments) of a file, numbered from 1.
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

#[test]
fn reports_never_import_detect() {
    let mut found = Vec::new();
    for f in rust_files(&root().join("src/report")) {
        for (n, l) in code_lines(&f) {
            let uses = l.trim_start().starts_with("use ") && l.contains("detect");
            if l.contains("detect::") || uses {
                found.push(format!("{}:{n}: {}", f.display(), l.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a report imports detect:\n{}",
        found.join("\n")
    );
}

/// The last top-level type argument of each `Result<...>` on a line.
fn result_errors(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("Result<") {
        let args = &rest[at + "Result<".len()..];
        let (mut depth, mut last, mut end) = (0i32, 0usize, None);
        for (i, c) in args.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' if depth == 0 => {
                    end = Some(i);
                    break;
                }
                '>' | ')' | ']' => depth -= 1,
                ',' if depth == 0 => last = i + 1,
                _ => {}
            }
        }
        if let Some(end) = end {
            if last > 0 {
                out.push(args[last..end].trim().to_string());
            }
        }
        rest = args;
    }
    out
}

#[test]
fn no_result_with_a_string_error() {
    assert_eq!(
        result_errors("fn f() -> Result<(Vec<String>, bool), String> {"),
        ["String"]
    );
    assert_eq!(
        result_errors("-> Result<(BTreeMap<String, L>, BTreeMap<String, String>)>"),
        Vec::<String>::new()
    );
    assert_eq!(
        result_errors("std::result::Result<Map<String, Value>, RecordError>"),
        ["RecordError"]
    );
    let mut found = Vec::new();
    for dir in ["src", "crates", "tests", "benches"] {
        // This file spells the pattern it looks for.
        for f in rust_files(&root().join(dir))
            .into_iter()
            .filter(|f| !f.ends_with("tests/integration/rules.rs"))
        {
            for (n, l) in code_lines(&f) {
                if result_errors(&l)
                    .iter()
                    .any(|e| e == "String" || e == "std::string::String")
                {
                    found.push(format!("{}:{n}: {}", f.display(), l.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "Result<_, String>:\n{}", found.join("\n"));
}

/// The core crate builds with none of the command line's dependencies: no
/// crate `looptune-core` depends on, directly or not, is one of them. Read
/// off `Cargo.lock` (its edges include dev-dependencies: the core's only
/// one, proptest, is left out), so it needs no network and no `cargo tree`.
#[test]
fn the_core_depends_on_no_cli_crate() {
    let lock: toml::Value =
        toml::from_str(&std::fs::read_to_string(root().join("Cargo.lock")).unwrap()).unwrap();
    let packages = lock["package"].as_array().unwrap();
    let deps_of = |name: &str| -> Vec<String> {
        packages
            .iter()
            .filter(|p| p["name"].as_str() == Some(name))
            .flat_map(|p| {
                p.get("dependencies")
                    .and_then(|d| d.as_array())
                    .cloned()
                    .unwrap_or_default()
            })
            // "name version" when several versions are locked.
            .map(|d| d.as_str().unwrap().split(' ').next().unwrap().to_string())
            .collect()
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut todo: Vec<String> = deps_of("looptune-core")
        .into_iter()
        .filter(|d| d != "proptest")
        .collect();
    while let Some(d) = todo.pop() {
        if seen.insert(d.clone()) {
            todo.extend(deps_of(&d));
        }
    }
    assert!(
        seen.contains("serde_json") && seen.contains("rayon"),
        "{seen:?}"
    );
    for cli in [
        "clap",
        "ratatui",
        "crossterm",
        "plotters",
        "indicatif",
        "parquet",
        "pyo3",
    ] {
        assert!(!seen.contains(cli), "looptune-core depends on {cli}");
    }
}

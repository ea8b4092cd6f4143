//! What the README promises about setting up: the minimum Rust version is
//! the locked tree's, and the install command keeps the lock.

use crate::util::root;

/// `1.88` as comparable numbers (`1.88` = `1.88.0`).
fn version(v: &str) -> Vec<u32> {
    let mut n: Vec<u32> = v.split('.').map(|p| p.parse().unwrap_or(0)).collect();
    n.resize(3, 0);
    n
}

fn stated_msrv() -> String {
    let toml = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = toml
        .lines()
        .find(|l| l.starts_with("rust-version"))
        .expect("Cargo.toml states a rust-version");
    line.split('"').nth(1).unwrap().to_string()
}

#[test]
fn the_minimum_rust_version_is_the_locked_trees_and_the_readme_says_it() {
    let msrv = stated_msrv();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("Rust toolchain ({msrv} or newer")),
        "the README's Quick start states {msrv}"
    );
    assert!(readme.contains(&format!("cargo +{msrv} check --locked")));
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.contains("cargo \"+$msrv\" check --locked"),
        "CI checks it"
    );
    // No locked dependency asks for a newer Rust than the one stated.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(root())
        .args(["metadata", "--format-version", "1", "--locked"])
        .output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        crate::util::skipped("cargo metadata did not run (no registry?)");
        return;
    };
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut newest = (version("0"), String::new());
    for p in m["packages"].as_array().unwrap() {
        if let Some(v) = p["rust_version"].as_str() {
            if p["name"] != "looptune" && version(v) > newest.0 {
                newest = (
                    version(v),
                    format!("{} {} needs {v}", p["name"], p["version"]),
                );
            }
        }
    }
    assert!(
        newest.0 <= version(&msrv),
        "{}, but Cargo.toml says {msrv}",
        newest.1
    );
    // The stated version is the locked tree's minimum, not an older guess.
    assert_eq!(newest.0, version(&msrv), "{}", newest.1);
}

#[test]
fn every_install_command_in_the_readme_keeps_the_lock() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let installs: Vec<&str> = readme
        .lines()
        .filter(|l| l.contains("cargo install") && l.contains("--path"))
        .collect();
    assert!(!installs.is_empty());
    for l in installs {
        assert!(l.contains("--locked"), "{l}");
    }
}

/// stderr of a run that must fail with a usage or configuration error.
fn refused(args: &[&str]) -> String {
    let r = crate::util::run(args);
    assert_eq!(r.status.code(), Some(2), "{args:?}");
    String::from_utf8_lossy(&r.stderr).to_string()
}

#[test]
fn a_mistyped_name_gets_a_did_you_mean_wherever_it_is_looked_up() {
    let fx = root().join("fixtures/sessions");
    let fx = fx.to_str().unwrap();
    let d = tempfile::tempdir().unwrap();
    let grid = crate::util::write(
        d.path(),
        "g.toml",
        "family = \"gemini\"\n[axes]\ntool_call_treshold = [1]\n",
    );
    let out = d.path().join("out");
    let out = out.to_str().unwrap();
    for (args, want) in [
        (
            vec!["replay", fx, "--set", "tool_call_treshold=3"],
            "(did you mean `tool_call_threshold`?)",
        ),
        (
            vec!["replay", fx, "--set", "gemni.tool_call_threshold=3"],
            "(did you mean `gemini.tool_call_threshold`?)",
        ),
        (
            vec!["replay", fx, "--require", "recal>=0.5"],
            "(did you mean `recall`?)",
        ),
        (
            vec!["diff", fx, fx, "--require", "new_missed_lops==0"],
            "(did you mean `new_missed_loops`?)",
        ),
        (
            vec!["sweep", fx, "-q", "--out", out, "--config", "gemini-lates"],
            "(did you mean `gemini-latest`?)",
        ),
        (
            vec!["sweep", fx, "-q", "--out", out, "--baseline", "opencod"],
            "(did you mean `opencode`?)",
        ),
        (
            vec![
                "sweep",
                fx,
                "-q",
                "--out",
                out,
                "--grid",
                grid.to_str().unwrap(),
            ],
            "(did you mean `tool_call_threshold`?)",
        ),
        (
            vec!["replay", fx, "--profile", "gemini-lates"],
            "'gemini-latest'",
        ),
    ] {
        let err = refused(&args);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn profiles_take_commas_as_detectors_do() {
    let fx = root().join("fixtures/sessions");
    let fx = fx.to_str().unwrap();
    let last = |args: &[&str]| {
        let r = crate::util::run(args);
        crate::util::assert_ok(&r);
        String::from_utf8_lossy(&r.stdout)
            .lines()
            .last()
            .unwrap()
            .to_string()
    };
    let commas = last(&["replay", fx, "--profile", "gemini-latest,opencode"]);
    assert!(commas.ends_with("[gemini-latest, opencode]"), "{commas}");
    let repeated = last(&[
        "replay",
        fx,
        "--profile",
        "gemini-latest",
        "--profile",
        "opencode",
    ]);
    assert_eq!(commas, repeated);
    // Gates too: `a,b` is `--require a --require b`.
    let r = crate::util::run(&[
        "replay",
        fx,
        "--labels",
        root().join("fixtures/labels.csv").to_str().unwrap(),
        "--require",
        "recall>=0,false_positives<=1000",
    ]);
    crate::util::assert_ok(&r);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("gate ok   recall>=0") && err.contains("gate ok   false_positives<=1000"),
        "{err}"
    );
}

/// The long help of a subcommand.
fn help(sub: &str) -> String {
    let r = crate::util::run(&[sub, "--help"]);
    crate::util::assert_ok(&r);
    String::from_utf8_lossy(&r.stdout).to_string()
}

#[test]
fn options_sit_under_headings_and_each_subcommand_describes_its_own() {
    let headings = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
            .map(|l| l.trim_end_matches(':').to_string())
            .collect()
    };
    let sweep = help("sweep");
    let h = headings(&sweep);
    for want in ["Input", "Detectors", "Scoring", "Outputs", "CI gates"] {
        assert!(h.iter().any(|x| x == want), "sweep: {want} in {h:?}");
    }
    // The lines from `heading:` to the next heading.
    let under = |text: &str, heading: &str, option: &str| {
        let section: Vec<&str> = text
            .lines()
            .skip_while(|l| *l != format!("{heading}:"))
            .skip(1)
            .take_while(|l| l.is_empty() || l.starts_with(' '))
            .collect();
        assert!(
            section.iter().any(|l| l.contains(option)),
            "{option} not under {heading}: {section:?}"
        );
    };
    under(&sweep, "Input", "--lenient");
    under(&sweep, "Scoring", "--labels");
    under(&sweep, "Scoring", "--strict-labels");
    under(&sweep, "Scoring", "--group-by");
    under(&sweep, "Scoring", "--guard");
    under(&sweep, "Input", "--test");
    under(&sweep, "CI gates", "--require");
    under(&sweep, "Outputs", "--markdown");
    let replay = help("replay");
    under(&replay, "Detectors", "--profile");
    under(&replay, "CI gates", "--fail-on-detection");
    // diff and detectors describe their own --format values, not replay's.
    for sub in ["diff", "detectors"] {
        let text = help(sub);
        assert!(!text.contains("sorted by session id"), "{sub}: {text}");
    }
    assert!(help("diff").contains("One JSON object per changed verdict"));
    assert!(help("detectors").contains("One JSON object per family"));
}

#[test]
fn one_count_of_configurations_in_the_terminal_and_the_report() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    // A grid whose gemini configurations miss a loop another family catches
    // (Goose's error streak; not looptune's, which catches every fixture
    // loop alone): --combine finds a union, one more row in the tables.
    let grid = crate::util::write(
        d.path(),
        "grid.toml",
        "family = \"gemini\"\nprofile = \"gemini-latest\"\nstock_profiles = false\n[axes]\ncontent_chunk_size = [50]\n[[extra]]\nprofile = \"goose\"\n",
    );
    let r = crate::util::run(&[
        "sweep",
        "-q",
        root().join("fixtures/sessions").to_str().unwrap(),
        "--labels",
        root().join("fixtures/labels.csv").to_str().unwrap(),
        "--grid",
        grid.to_str().unwrap(),
        "--combine",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    crate::util::assert_ok(&r);
    let stdout = String::from_utf8_lossy(&r.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains(" configurations x "))
        .unwrap();
    let n: usize = line.split(' ').next().unwrap().parse().unwrap();
    assert!(stdout.contains("\nunion "), "{stdout}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let said =
        format!("{n} configurations (plus one row for the best union of detectors, --combine)");
    assert_eq!(html.matches(&said).count(), 2, "{said}");
    assert!(!html.contains(&format!("{} configurations", n + 1)));
}

#[test]
fn best_means_best_under_the_rule_and_the_report_says_which_rule() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let r = crate::util::run(&[
        "sweep",
        "-q",
        root().join("fixtures/sessions").to_str().unwrap(),
        "--labels",
        root().join("fixtures/labels.csv").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        // Pooled: under the per-group guard no other family has a best on
        // the fixtures, and this is about how a best is named.
        "--guard",
        "pooled",
    ]);
    crate::util::assert_ok(&r);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(!html.contains("by F1"), "one meaning of best");
    let rule = summary["objective"]
        .as_str()
        .unwrap()
        .replace('\'', "&#39;");
    assert!(html.contains(&format!("follow one rule: {rule}.")));
    // Each family's tagged best is the family_best the terminal prints.
    let bests: Vec<&str> = summary["family_best"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["best"]["label"].as_str())
        .collect();
    assert!(!bests.is_empty());
    assert_eq!(
        html.matches("best under the rule</span>").count(),
        bests.len()
    );
}

#[test]
fn the_reports_rule_box_names_the_guard_it_chose_under() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let r = crate::util::run(&[
        "sweep",
        "-q",
        root().join("fixtures/sessions").to_str().unwrap(),
        "--labels",
        root().join("fixtures/labels.csv").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    crate::util::assert_ok(&r);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains(", and no agent worse off than with the baseline (fewer of its loops caught or more false positives).</p>"),
        "the per-group guard is part of the rule"
    );
}

/// Each package of `cargo tree` (`{p} [{f}]` lines) and the feature sets
/// it is resolved with.
fn resolved(args: &[&str]) -> Option<std::collections::BTreeMap<String, Vec<String>>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(root())
        .args(["tree", "--locked", "--prefix", "none", "-f", "{p} [{f}]"])
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let mut m = std::collections::BTreeMap::<String, Vec<String>>::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let line = line.trim_end_matches(" (*)");
        let (Some(open), true) = (line.rfind(" ["), line.ends_with(']')) else {
            continue;
        };
        // `name vX.Y.Z (path)`: the name and version.
        let pkg: Vec<&str> = line[..open].split(' ').take(2).collect();
        let features = line[open + 2..line.len() - 1].to_string();
        let e = m.entry(pkg.join(" ")).or_default();
        if !e.contains(&features) {
            e.push(features);
            e.sort();
        }
    }
    Some(m)
}

/// CI builds the Python wheel (maturin, debug) right after the test
/// command: every crate the wheel shares with the tests must resolve with
/// the same features, or it is compiled again with everything above it
/// (most of the tree: ten minutes of CI). The test command is `cargo test
/// --workspace`, which resolves the Python crate's features too.
#[test]
fn the_wheel_resolves_every_shared_crate_as_the_tests_do() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains("\ncargo test --workspace\n"),
        "README's test command"
    );
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(ci.contains("\ncargo test --workspace\n"), ".ci/run runs it");
    let tests = resolved(&["--workspace", "-e", "normal,build,dev"]);
    let wheel = resolved(&["-p", "looptune-python", "-e", "normal,build"]);
    let (Some(tests), Some(wheel)) = (tests, wheel) else {
        crate::util::skipped("cargo tree did not run (no registry?)");
        return;
    };
    let differ: Vec<String> = wheel
        .iter()
        .filter(|(p, f)| tests.get(*p).is_some_and(|t| t != *f))
        .map(|(p, f)| format!("{p}: wheel {f:?}, tests {:?}", tests[p]))
        .collect();
    assert!(
        differ.is_empty(),
        "give crates/python/Cargo.toml the tests' features:\n{}",
        differ.join("\n")
    );
}

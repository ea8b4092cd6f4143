//! The output folder as a list (`looptune::outputs`): a fifth output needs
//! nothing but its own definition (here, in this file) and a place in the
//! list, and `report DIR` re-renders every output.

use crate::util::{looptune, root};
use looptune::outputs::{report_outputs, Kind, Output, OutputOptions, Outputs};
use looptune::score::SweepResult;
use std::io::Write;
use std::path::Path;

/// A sweep of the fixtures under a small grid into `out`, with extra arguments.
fn sweep(dir: &Path, out: &Path, extra: &[&str]) {
    let grid = crate::util::write(
        dir,
        "grid.toml",
        "family = \"gemini\"\nstock_profiles = false\n[axes]\ntool_call_threshold = [2, 3, 5]\n[[extra]]\nprofile = \"opencode\"\n",
    );
    looptune()
        .current_dir(root())
        .args(["sweep", "fixtures/", "--labels", "fixtures/labels.csv"])
        .args(["--quiet", "--combine", "2", "--grid"])
        .arg(&grid)
        .arg("--out")
        .arg(out)
        .args(extra)
        .assert()
        .success();
}

/// Every file of a folder, by name.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            (name, std::fs::read(e.path()).unwrap_or_default())
        })
        .collect();
    v.sort();
    v
}

/// The fifth output, defined here and nowhere else: the sessions and their
/// labels, one a line.
struct SessionsTxt;

impl Output for SessionsTxt {
    fn name(&self) -> &str {
        "sessions.txt"
    }
    fn cost(&self) -> u32 {
        1
    }
    fn render(&self, r: &SweepResult, w: &mut (dyn Write + Send)) -> std::io::Result<()> {
        for s in &r.record.sessions {
            let label = match s.label() {
                Some(l) if l.is_loop => "loop",
                Some(_) => "clean",
                None => "-",
            };
            writeln!(w, "{} {label}", s.id)?;
        }
        Ok(())
    }
}

/// A report that cannot be drawn.
struct Broken;

impl Output for Broken {
    fn name(&self) -> &str {
        "broken.html"
    }
    fn kind(&self) -> Kind {
        Kind::Report
    }
    fn cost(&self) -> u32 {
        1
    }
    fn render(&self, _: &SweepResult, w: &mut (dyn Write + Send)) -> std::io::Result<()> {
        w.write_all(b"<html>half")?;
        Err(std::io::Error::other("the chart would not draw"))
    }
}

fn run(dir: &Path, list: &Outputs) -> (i32, String) {
    let mut err = Vec::new();
    let code = report_outputs(dir, list, &mut err).unwrap_or_else(|e| e.exit_code());
    (code, String::from_utf8(err).unwrap())
}

#[test]
fn a_fifth_output_needs_only_its_file_and_a_place_in_the_list() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    sweep(d.path(), &out, &[]);
    let before = snapshot(&out);
    let list = Outputs::standard(&OutputOptions::default()).with(Box::new(SessionsTxt));

    // Written with the rest, staged and committed as one set; the others
    // are re-rendered from summary.json to the same bytes.
    let (code, err) = run(&out, &list);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("wrote {}", out.join("sessions.txt").display())),
        "{err}"
    );
    let after = snapshot(&out);
    let text = String::from_utf8(
        after
            .iter()
            .find(|(n, _)| n == "sessions.txt")
            .unwrap()
            .1
            .clone(),
    )
    .unwrap();
    assert!(
        text.contains(" loop\n") && text.contains(" clean\n"),
        "{text}"
    );
    let rest: Vec<_> = after
        .into_iter()
        .filter(|(n, _)| n != "sessions.txt")
        .collect();
    assert_eq!(rest, before, "report DIR re-renders the same bytes");

    // The guard covers it: a link from it to the summary.json read is refused.
    #[cfg(unix)]
    {
        let link = out.join("sessions.txt");
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(out.join("summary.json"), &link).unwrap();
        let (code, err) = run(&out, &list);
        assert_eq!(code, 2, "{err}");
        std::fs::remove_file(&link).unwrap();
        assert_eq!(snapshot(&out), before, "nothing written");
    }

    // A report that fails: exit 3, named as its target, nothing replaced.
    std::fs::write(out.join("sweep.csv"), "old").unwrap();
    let before = snapshot(&out);
    let (code, err) = run(&out, &list.with(Box::new(Broken)));
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(&format!(
            "failed to write {}: the chart would not draw",
            out.join("broken.html").display()
        )),
        "{err}"
    );
    assert!(err.contains("nothing was replaced"), "{err}");
    assert_eq!(snapshot(&out), before);
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".looptune"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn report_dir_rewrites_every_output() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    sweep(d.path(), &out, &[]);
    let names: Vec<String> = snapshot(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "detections.csv",
            "groups.csv",
            "report.html",
            "summary.json",
            "sweep.csv"
        ]
    );
    let before = snapshot(&out);
    for f in ["sweep.csv", "groups.csv", "detections.csv", "report.html"] {
        std::fs::remove_file(out.join(f)).unwrap();
    }
    looptune().arg("report").arg(&out).assert().success();
    assert_eq!(snapshot(&out), before);
}

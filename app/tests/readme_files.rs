//! The README's files, made and read as printed: its block that makes
//! `trace.pcapng` and `trace.pcap` (the simulator's recording, the bundled
//! sample, a lesson's export), then every README command that reads them;
//! its block that makes `sim_dump.vcd` and `.fst` with the Icarus Verilog
//! testbench the tests use, then every README command that reads those.
//! Each line runs through `sh` in a folder of its own (with the
//! repository's `assets` beside it), `rocescope` on the PATH and
//! `./target/release/rocescope` read as `rocescope`. The commands that need
//! a terminal or a display (`open`, `gui`) are left out. The waveform part
//! is skipped without iverilog unless ROCESCOPE_REQUIRE_IVERILOG is set.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn readme() -> String {
    support::user_docs()
}

/// The lines of the code block after the comment that starts `marker`.
fn block(readme: &str, marker: &str) -> Vec<String> {
    readme
        .lines()
        .skip_while(|l| !l.starts_with(marker))
        .skip(1)
        .skip_while(|l| l.starts_with("```"))
        .take_while(|l| !l.starts_with("```"))
        .map(str::to_owned)
        .collect()
}

/// A fresh work folder `name` with the README's block marked `marker` run
/// in it line by line; the folder and the block's lines.
fn run_block(readme: &str, name: &str, marker: &str) -> (PathBuf, Vec<String>) {
    let dir = workdir(name);
    let lines = block(readme, marker);
    for line in &lines {
        sh(&dir, line);
    }
    (dir, lines)
}

/// The README's `rocescope` commands (in any block) that name one of
/// `files` and need neither a terminal nor a display.
fn commands_reading(readme: &str, files: &[&str]) -> Vec<String> {
    readme
        .lines()
        .map(|l| l.replace("./target/release/rocescope ", "rocescope "))
        .filter(|l| l.starts_with("rocescope "))
        .filter(|l| {
            let words: Vec<&str> = support::command_words(l).collect();
            files.iter().any(|f| words.contains(f))
        })
        .filter(|l| !l.starts_with("rocescope open ") && !l.starts_with("rocescope gui "))
        .collect()
}

/// A folder with the repository's `assets` beside what the lines write.
fn workdir(name: &str) -> PathBuf {
    let dir = support::out_dir("readme-files", name);
    let assets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets");
    std::os::unix::fs::symlink(assets.canonicalize().unwrap(), dir.join("assets")).unwrap();
    dir
}

/// Run `line` as printed; its stdout, or a failure naming it.
fn sh(dir: &Path, line: &str) -> String {
    let out = rocescope_testkit::run_ok(
        Command::new("sh")
            .args(["-c", line])
            .current_dir(dir)
            .env("PATH", support::path_with_rocescope())
            .env("ROCESCOPE_STATE_DIR", dir.join("state")),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_readme_makes_its_captures_and_reads_them_as_printed() {
    let readme = readme();
    let (dir, make) = run_block(&readme, "captures", "<!-- captures:");
    assert_eq!(make.len(), 3, "{make:?}");
    for f in ["trace.pcapng", "trace.pcap", "lesson/teaching-basic.pcapng"] {
        assert!(dir.join(f).is_file(), "the README makes {f}");
    }
    let reading = commands_reading(&readme, &["trace.pcap", "trace.pcapng"]);
    assert!(reading.len() >= 8, "{reading:?}");
    for line in &reading {
        let out = sh(&dir, line);
        assert!(
            !out.is_empty() || line.contains(" --to "),
            "README: {line}: no output"
        );
    }
    for f in ["packets.parquet", "episodes.csv", "annotated.pcapng"] {
        assert!(dir.join(f).is_file(), "the README writes {f}");
    }
}

#[test]
fn the_readme_makes_sim_dump_with_the_tests_testbench_and_reads_it_as_printed() {
    if !rocescope_testkit::available(&[rocescope_testkit::IVERILOG]) {
        return;
    }
    let readme = readme();
    let (dir, make) = run_block(&readme, "waveforms", "<!-- waveforms:");
    assert!(make.iter().any(|l| l.starts_with("iverilog ")), "{make:?}");
    for f in ["sim_dump.vcd", "sim_dump.fst", "capture.pcap"] {
        assert!(dir.join(f).is_file(), "the README makes {f}");
    }
    let reading = commands_reading(&readme, &["sim_dump.vcd", "sim_dump.fst"]);
    assert_eq!(reading.len(), 8, "{reading:?}");
    for line in &reading {
        let out = sh(&dir, line);
        assert!(
            !out.is_empty() || line.contains(" --to "),
            "README: {line}: no output"
        );
        if line.contains("--wave") {
            // The sample on wall-clock time beside a waveform from 0: when
            // that 0 was, not a 19-digit count of ns.
            assert!(
                out.contains(
                    "waveform: 15 matched, 0 capture / 0 waveform frames unmatched, \
                     waveform time 0 = capture time 2025-11-29 07:06:39.999999986 UTC \
                     (the capture on wall-clock time; spread 888 ns)"
                ),
                "README: {line}: {out}"
            );
        }
    }
    // The frames come back out as the sample has them.
    let decoded = sh(&dir, "rocescope decode frames.pcapng");
    assert_eq!(decoded.lines().count(), 15, "{decoded}");
}

/// The README's live capture points: the simulator's captures, an agent
/// per point started as printed (the lines ending in `&`), then `attach
/// --point` as printed: each point's link and the losses placed.
#[test]
fn the_readme_attaches_to_an_agent_per_point_as_printed() {
    let readme = readme();
    let (dir, _) = run_block(&readme, "points-live", "<!-- points:");
    let live = block(&readme, "<!-- points-live:");
    assert_eq!(live.len(), 4, "{live:?}");
    let path = support::path_with_rocescope();
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut agents = Vec::new();
    for line in live.iter().filter(|l| l.ends_with(" &")) {
        let line = line.trim_end_matches(" &");
        let mut child = std::process::Command::new("sh")
            .args(["-c", &format!("exec {line}")])
            .current_dir(&dir)
            .env("PATH", &path)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Listening before attach tries (its log says so).
        let err = child.stderr.take().unwrap();
        let mut log = std::io::BufRead::lines(std::io::BufReader::new(err));
        assert!(
            log.by_ref()
                .map_while(Result::ok)
                .any(|l| l.contains(" listening on ")),
            "{line}"
        );
        std::thread::spawn(move || log.for_each(drop));
        agents.push(Killed(child));
    }
    assert_eq!(agents.len(), 3);
    let attach = live
        .iter()
        .find(|l| l.starts_with("rocescope attach "))
        .unwrap();
    let out = sh(&dir, attach);
    for part in [
        "point a tcp://127.0.0.1:4801: 7",
        "point b tcp://127.0.0.1:4803: ",
        "clocks, against a's",
        "losses by segment:",
        "a>sw",
    ] {
        assert!(
            out.contains(part),
            "README: {attach}: lacks {part:?}: {out}"
        );
    }
}

/// The README's capture points: its block that writes each point's
/// capture with the simulator, then every command with `--point`.
#[test]
fn the_readme_places_losses_between_its_points_as_printed() {
    let readme = readme();
    let (dir, make) = run_block(&readme, "points", "<!-- points:");
    assert_eq!(make.len(), 1, "{make:?}");
    let with_points: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("rocescope ") && l.contains(" --point "))
        // The workbenches need a terminal or a display (points_tui.rs runs
        // `open --point` in tmux).
        .filter(|l| !l.starts_with("rocescope open ") && !l.starts_with("rocescope gui "))
        // Live points need their agents: the next test.
        .filter(|l| !l.starts_with("rocescope attach "))
        .collect();
    assert_eq!(with_points.len(), 4, "{with_points:?}");
    for line in &with_points {
        let out = sh(&dir, line);
        if line.contains("--json") {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            let m = &v["multipoint"];
            assert_eq!(m["points"].as_array().unwrap().len(), 3, "{line}");
            // lossy-link loses requests on the wire before the switch.
            assert!(
                m["losses"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|l| l["segment"] == "a>sw"),
                "{line}"
            );
        } else if line.starts_with("rocescope stats") {
            for part in [
                "clocks, against a's",
                "one-way latency per segment:",
                "a>sw",
            ] {
                assert!(out.contains(part), "README: {line}: lacks {part:?}: {out}");
            }
        }
    }
    let losses = std::fs::read_to_string(dir.join("losses.csv")).unwrap();
    assert!(losses.lines().count() > 1, "{losses}");
    let page = std::fs::read_to_string(dir.join("points-report/index.html")).unwrap();
    assert!(
        page.contains("id=\"points\""),
        "the report has its capture points section"
    );
}

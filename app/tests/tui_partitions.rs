//! The terminal workbench writing partitions as its session goes: the real
//! binary in tmux, on the README's `rocescope sim ... --partitions` line.
//! The partitions appear while it runs and the status line counts them;
//! after `q` they read back to the recording's `rocescope stats`; a
//! workbench killed with SIGKILL leaves only whole Parquet files. Skipped
//! where tmux is missing, unless ROCESCOPE_REQUIRE_TMUX is set (as in
//! .ci/run).
#![allow(clippy::unwrap_used)]

mod support;

use support::{tmux, tmux_session, wait_for};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

/// The README's line that starts so, without `rocescope` and its comment.
fn readme_command(starts: &str) -> String {
    let cmd = support::docs_command(starts);
    cmd.strip_prefix("rocescope ").unwrap().to_owned()
}

/// `rocescope query` over a partitions folder: the first row, as CSV.
fn query_row(dir: &Path, sql: &str) -> Vec<u64> {
    let lines = support::query_csv(dir, sql);
    let row = lines.get(1).unwrap_or_else(|| panic!("{lines:?}"));
    row.split(',').map(|x| x.parse().unwrap()).collect()
}

/// Files under `dir` a reader sees (hidden and `_` folders are not read).
fn visible_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name.starts_with('_') {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The README's command, run in tmux in `dir` with its stderr kept and
/// its exit status written to `dir/status`.
fn start(session: &str, dir: &Path, extra: &str) {
    let cmd = format!(
        "cd {} && {BIN} {} {extra} 2>stderr; echo $? > status",
        dir.display(),
        readme_command("rocescope sim --scenario default --pace 0.0003 --partitions"),
    );
    tmux_session(session, 220, 30, &cmd);
}

#[test]
fn the_workbench_writes_partitions_as_it_runs() {
    if !rocescope_testkit::available(&[rocescope_testkit::TMUX]) {
        return;
    }
    let folder = rocescope_testkit::temp_dir("tui-parts");
    let dir = folder.path().to_path_buf();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fleet = dir.join("fleet");
    let session = format!("rocescope-parts-{}", std::process::id());
    start(&session, &dir, "--record run.pcapng");
    // Windows are written while it runs, and the status line counts them.
    let t0 = Instant::now();
    while visible_files(&fleet).len() < 3 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no partitions while the workbench runs: {}",
            tmux(&["capture-pane", "-t", &session, "-p"])
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let screen = wait_for(&session, "windows (", 20);
    assert!(screen.contains("(capture=sim-1):"), "{screen}");
    assert!(screen.contains("windows ("), "{screen}");
    tmux(&["send-keys", "-t", &session, "q"]);
    assert_eq!(
        support::exit_status(&session, &dir.join("status"), 120),
        "0"
    );
    let said = std::fs::read_to_string(dir.join("stderr")).unwrap();
    assert!(
        said.contains("(capture=sim-1):") && said.contains(", done"),
        "{said}"
    );
    // Every packet of the session is in the partitions, once: the
    // recording's stats, the packets table and the qps table agree.
    let stats = Command::new(BIN)
        .args(["stats", dir.join("run.pcapng").to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    let qps = stats["qps"].as_array().unwrap();
    let packets: u64 = qps.iter().map(|q| q["packets"].as_u64().unwrap()).sum();
    let retx = stats["counters"]["retransmitted_packets"].as_u64().unwrap();
    assert!(packets > 1000, "{packets} packets recorded");
    let got = query_row(
        &fleet,
        "SELECT count(*) AS n, sum(CAST(retransmission AS BIGINT)) AS r, \
         count(DISTINCT window_start_ns) AS w FROM packets WHERE capture = 'sim-1'",
    );
    assert_eq!(got[..2], [packets, retx], "{got:?}");
    assert!(got[2] >= 3, "{got:?}");
    let got = query_row(&fleet, "SELECT count(*) AS n, sum(packets) AS p FROM qps");
    assert_eq!(got, [qps.len() as u64, packets]);

    // A crash: the workbench killed with SIGKILL loses at most its open
    // window, and a reader sees whole files only.
    let crash = dir.join("crash");
    std::fs::create_dir_all(&crash).unwrap();
    start(&session, &crash, "");
    let fleet = crash.join("fleet");
    let t0 = Instant::now();
    while visible_files(&fleet).len() < 3 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no partitions");
        std::thread::sleep(Duration::from_millis(200));
    }
    let pid = tmux(&["list-panes", "-t", &session, "-F", "#{pane_pid}"]);
    let shell: u32 = pid.trim().parse().unwrap();
    // The workbench is the shell's child.
    let children =
        std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap_or_default();
    let child = children.split_whitespace().next().unwrap().to_owned();
    assert!(
        Command::new("kill")
            .args(["-9", &child])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(
        support::exit_status(&session, &crash.join("status"), 20),
        "137"
    );
    let files = visible_files(&fleet);
    assert!(files.len() >= 3, "{files:?}");
    assert!(
        files
            .iter()
            .all(|f| f.extension().is_some_and(|e| e == "parquet")),
        "{files:?}"
    );
    let got = query_row(
        &fleet,
        "SELECT count(*) AS n, count(DISTINCT window_start_ns) AS w FROM packets",
    );
    assert!(got[0] > 0 && got[1] >= 3, "{got:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

//! What the integration tests share (`mod support;` in a test file).
#![allow(dead_code)]

use std::path::Path;

/// The user's documentation as one text: README.md, then the guide's
/// pages under docs/ in name order. Tests that run "the README's commands"
/// find them wherever a page of the guide shows them.
pub fn user_docs() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut text = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let mut pages: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    for page in pages {
        text.push('\n');
        text.push_str(&std::fs::read_to_string(&page).expect("a page of docs/"));
    }
    text
}

/// The words of a command line in the docs, its trailing `# comment`
/// left out.
pub fn command_words(line: &str) -> impl Iterator<Item = &str> {
    line.split(" #")
        .next()
        .unwrap_or_default()
        .split_whitespace()
}

/// The user docs' line that starts with `starts`, its ` # comment` cut off.
pub fn docs_command(starts: &str) -> String {
    let docs = user_docs();
    let line = docs
        .lines()
        .find(|l| l.starts_with(starts))
        .unwrap_or_else(|| panic!("the docs have no line starting {starts:?}"));
    command_words(line).collect::<Vec<_>>().join(" ")
}

/// Types `line` on the command line of the workbench in tmux `session`:
/// `:`, the line, Enter.
pub fn tmux_command_line(session: &str, line: &str) {
    tmux(&["send-keys", "-t", session, ":", line, "Enter"]);
}

/// The `rocescope` binary this test build made, ready for arguments.
pub fn bin() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_rocescope"))
}

/// `rocescope ARGS` run to its end.
pub fn rocescope(args: &[&str]) -> std::process::Output {
    bin().args(args).output().expect("rocescope runs")
}

/// `rocescope ARGS` run to its end, failing the test (with its stderr)
/// unless it exits 0.
pub fn rocescope_ok(args: &[&str]) -> std::process::Output {
    let out = rocescope(args);
    assert!(
        out.status.success(),
        "rocescope {args:?}: {}",
        text(&out.stderr)
    );
    out
}

/// `rocescope ARGS` run to success, what it printed read as JSON.
pub fn rocescope_json(args: &[&str]) -> serde_json::Value {
    let out = rocescope_ok(args);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("rocescope {args:?}: not JSON ({e}): {}", text(&out.stdout)))
}

/// A finished run as (exit 0, stdout, stderr), for tests that read all
/// three.
pub fn outcome(cmd: &mut std::process::Command) -> (bool, String, String) {
    let out = cmd.output().expect("rocescope runs");
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// `rocescope ARGS` run to its end as (exit 0, stdout, stderr).
pub fn rocescope_outcome(args: &[&str]) -> (bool, String, String) {
    outcome(bin().args(args))
}

/// Output bytes as text, for asserts and their messages.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The bundled sample capture (a WRITE and a READ with a retransmission).
pub fn sample() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/captures/sample-write-read.pcap")
}

/// An empty folder `GROUP/NAME` under the test build's temporary folder,
/// left there after the run for a look.
pub fn out_dir(group: &str, name: &str) -> std::path::PathBuf {
    rocescope_testkit::out_dir(group, name)
}

/// `NAME` in this test binary's one folder for its files
/// (`tmp/LABEL` under the test build's temporary folder, emptied on first
/// use; every test of the file shares it, so names differ). Inside the
/// build folder, not the system's: a folder held for the whole run is never
/// dropped, and would be left behind there.
pub fn tmp(label: &str, name: &str) -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| out_dir("tmp", label)).join(name)
}

/// `tmux ARGS`, its stdout as text.
pub fn tmux(args: &[&str]) -> String {
    let out = std::process::Command::new("tmux")
        .args(args)
        .output()
        .expect("tmux runs");
    text(&out.stdout)
}

/// A detached tmux `session` of `width` x `height` running the shell
/// command `cmd`.
pub fn tmux_session(session: &str, width: u16, height: u16, cmd: &str) {
    let (w, h) = (width.to_string(), height.to_string());
    tmux(&["new-session", "-d", "-s", session, "-x", &w, "-y", &h, cmd]);
}

/// A detached tmux `session` of `width` x `height` running `rocescope
/// ARGS` (`args`, as a shell reads them), its exit status then written to
/// `status_file` (read back with [`exit_status`]).
pub fn rocescope_in_tmux(session: &str, width: u16, height: u16, args: &str, status_file: &Path) {
    let cmd = format!(
        "{} {args}; echo $? > {}",
        env!("CARGO_BIN_EXE_rocescope"),
        status_file.display()
    );
    tmux_session(session, width, height, &cmd);
}

/// [`rocescope_in_tmux`] in a session named `rocescope-LABEL-PID`, its
/// exit status written to `dir/status`: the session's name and that file.
pub fn rocescope_in_tmux_named(
    label: &str,
    dir: &Path,
    (width, height): (u16, u16),
    args: &str,
) -> (String, std::path::PathBuf) {
    let session = format!("rocescope-{label}-{}", std::process::id());
    let status_file = dir.join("status");
    rocescope_in_tmux(&session, width, height, args, &status_file);
    (session, status_file)
}

/// The tmux `session`'s screen once it holds `needle` (or after `secs`).
pub fn wait_for(session: &str, needle: &str, secs: u64) -> String {
    let t0 = std::time::Instant::now();
    loop {
        let screen = tmux(&["capture-pane", "-t", session, "-p"]);
        if screen.contains(needle) || t0.elapsed() > std::time::Duration::from_secs(secs) {
            return screen;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The exit status the tmux `session`'s command wrote to `status_file`
/// (`...; echo $? > FILE`), once written or after `secs` ("" where none
/// was); the session is ended either way.
pub fn exit_status(session: &str, status_file: &Path, secs: u64) -> String {
    let t0 = std::time::Instant::now();
    while !status_file.exists() && t0.elapsed() < std::time::Duration::from_secs(secs) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    tmux(&["kill-session", "-t", session]);
    let status = std::fs::read_to_string(status_file).unwrap_or_default();
    status.trim().to_owned()
}

/// In the Packets view of a TUI session, presses End and waits until the
/// list shows the frame numbered `last` (1-based, the capture's last):
/// whether it did, and the screen last read.
pub fn end_shows_frame(session: &str, last: u64) -> (bool, String) {
    tmux(&["send-keys", "-t", session, "2"]);
    wait_for(session, "RC WRITE", 20);
    tmux(&["send-keys", "-t", session, "End"]);
    let t0 = std::time::Instant::now();
    let needle = format!("{last} ");
    let (mut screen, mut shown) = (String::new(), false);
    while !shown && t0.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        screen = tmux(&["capture-pane", "-t", session, "-p"]);
        shown = screen
            .lines()
            .any(|l| l.trim_start_matches(['│', ' ', '>']).starts_with(&needle));
    }
    (shown, screen)
}

/// `rocescope sim --scenario SCENARIO --duration DURATION --headless
/// --record TO`, which must succeed.
pub fn record_sim(scenario: &str, duration: &str, to: &Path) {
    let run = ["sim", "--scenario", scenario, "--duration", duration];
    rocescope_ok(&[&run[..], &["--headless", "--record", arg(to)]].concat());
}

/// `rocescope agent --listen ADDR --sim SCENARIO` on a free loopback port,
/// ready for more arguments: the command and its `ADDR`.
pub fn sim_agent(scenario: &str) -> (std::process::Command, String) {
    let port = rocescope_testkit::free_port().expect("a free port");
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = bin();
    cmd.args(["agent", "--listen", &listen, "--sim", scenario]);
    (cmd, listen)
}

/// `rocescope query FROM SQL --format FORMAT` run to success, what it
/// printed.
pub fn query(from: &Path, sql: &str, format: &str) -> String {
    let from = from.to_str().expect("a UTF-8 path");
    text(&rocescope_ok(&["query", from, sql, "--format", format]).stdout)
}

/// [`query`] as CSV, its lines (header first).
pub fn query_csv(from: &Path, sql: &str) -> Vec<String> {
    query(from, sql, "csv").lines().map(str::to_owned).collect()
}

/// The one QP of the sample's exchange (QP 0x11 writing to 0x12, a NAK and
/// its Go-Back-N resend of 3 packets), as `stats --json` shows it in `v`,
/// its endpoints named `src` and `dst` (addresses or LIDs): checked, and
/// returned for more.
pub fn sample_qp<'a>(v: &'a serde_json::Value, src: &str, dst: &str) -> &'a serde_json::Value {
    let qps = v["qps"].as_array().expect("stats --json has qps");
    assert_eq!(qps.len(), 1, "{v}");
    let q = &qps[0];
    assert_eq!(q["src_ip"], src);
    assert_eq!(q["dst_ip"], dst);
    assert_eq!(q["dest_qp"], 0x12);
    assert_eq!(q["requester_qp"], 0x11);
    assert_eq!(q["retransmitted_packets"], 3);
    assert_eq!(q["episodes_by_cause"]["nak_seq_err"], 1);
    assert_eq!(v["episodes"][0]["packets_resent"], 3);
    q
}

/// `PATH` with this test build's `rocescope` first, for a shell that runs
/// the docs' commands as printed.
pub fn path_with_rocescope() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_rocescope"))
        .parent()
        .expect("the binary's folder");
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{}:{path}", bin.display())
}

/// `rocescope ARGS` fails, saying `says` on stderr; the stderr, for more.
pub fn rocescope_fails(args: &[&str], says: &str) -> String {
    let out = rocescope(args);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "rocescope {args:?} succeeded: {err}");
    assert!(
        err.contains(says),
        "rocescope {args:?}: no {says:?} in {err}"
    );
    err
}

/// `rocescope decode FILE --format jsonl` run to success, a value a row.
pub fn decode_jsonl(file: &Path) -> Vec<serde_json::Value> {
    let file = file.to_str().expect("a UTF-8 path");
    let out = rocescope_ok(&["decode", file, "--format", "jsonl"]);
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The analysis' flags on the sample's exchange (see [`sample_qp`]) in
/// `decode --format jsonl` rows: frame 3 out of sequence, 4 the NAK, 6 to
/// 8 the resends.
pub fn sample_flags(rows: &[serde_json::Value]) {
    let resent: Vec<u64> = rows
        .iter()
        .filter(|r| r["rocescope.retransmission"] == true)
        .filter_map(|r| r["frame"].as_u64())
        .collect();
    assert_eq!(resent, vec![6, 7, 8]);
    assert_eq!(rows[2]["rocescope.out_of_sequence"], true);
    assert_eq!(rows[3]["rocescope.nak"], "psn_seq_err");
}

/// A path as the `&str` a command line takes.
pub fn arg(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// What the commands that read every row say of capture `cap`, run once
/// with `extra` arguments (a cap, a kept index) and once without, the same
/// byte for byte: `stats --json`, each table in `tables` exported to CSV
/// (in `folder`), and `sql` over the packets. Returns `stats --json`.
pub fn same_with_and_without(
    folder: &Path,
    cap: &str,
    extra: &[&str],
    tables: &[&str],
    sql: &str,
) -> Vec<u8> {
    let with = |args: &[&str]| rocescope_ok(&[args, extra].concat()).stdout;
    let stats = with(&["stats", cap, "--json"]);
    assert_eq!(stats, rocescope_ok(&["stats", cap, "--json"]).stdout);
    for table in tables {
        let a = folder.join(format!("with-{table}.csv"));
        let b = folder.join(format!("without-{table}.csv"));
        with(&["export", cap, "--table", table, "--to", arg(&a)]);
        rocescope_ok(&["export", cap, "--table", table, "--to", arg(&b)]);
        let read = |p: &Path| std::fs::read(p).expect("the exported table");
        let (a, b) = (read(&a), read(&b));
        assert!(a.len() > 100, "{table}");
        assert_eq!(a, b, "{table}");
    }
    let q = with(&["query", cap, sql, "--format", "csv"]);
    assert_eq!(
        q,
        rocescope_ok(&["query", cap, sql, "--format", "csv"]).stdout
    );
    assert!(!text(&q).contains("\n0,"), "{}", text(&q));
    stats
}

//! The real binary in tmux at 80x24 and at 160x45, on a recording of the
//! `lossy-link` scenario (made as the README makes one, `sim --record`):
//! every view keeps its cells whole (a QP, an address, a state, a time),
//! the throughput legend stays off the data, `r` in the ladder stays in the
//! ladder, an invalid command line changes nothing, and an empty packet
//! list says why. Skipped where tmux is missing, unless
//! ROCESCOPE_REQUIRE_TMUX is set (as in .ci/run).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

/// tmux on a server of this test's own (its own socket), so that nothing
/// else's sessions are touched.
struct Tmux {
    socket: String,
    session: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-t", &self.session, "-p"])
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.run(&["send-keys", "-t", &self.session, k]);
        }
    }

    fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", &self.session, "-l", text]);
    }

    /// The screen once it holds every needle (or after 20 s, as it is).
    fn wait_for(&self, needles: &[&str]) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.screen();
            if needles.iter().all(|n| s.contains(n)) || t0.elapsed() > Duration::from_secs(20) {
                return s;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn have_tmux() -> bool {
    rocescope_testkit::available(&[rocescope_testkit::TMUX])
}

/// `rocescope sim --headless --scenario lossy-link --duration 2ms --record
/// FILE`, once per test process.
fn recording() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tui-layout");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("lossy-{}.pcapng", std::process::id()));
        rocescope_testkit::run_ok(
            Command::new(BIN)
                .args([
                    "sim",
                    "--headless",
                    "--scenario",
                    "lossy-link",
                    "--duration",
                    "2ms",
                ])
                .arg("--record")
                .arg(&path),
        );
        path
    })
}

fn start(w: u16, h: u16) -> Tmux {
    let t = Tmux {
        socket: format!("rocescope-layout-{}-{w}x{h}", std::process::id()),
        session: "layout".into(),
    };
    // Opened by its file name (the status line shows it as given).
    let rec = recording();
    let cmd = format!(
        "cd {} && {BIN} open {}; sleep 60",
        rec.parent().unwrap().display(),
        rec.file_name().unwrap().to_string_lossy()
    );
    t.run(&[
        "new-session",
        "-d",
        "-s",
        &t.session,
        "-x",
        &w.to_string(),
        "-y",
        &h.to_string(),
        &cmd,
    ]);
    t
}

/// The lines of the throughput chart's box: from its top border to its
/// bottom border.
fn chart_box(screen: &str) -> Vec<&str> {
    let lines: Vec<&str> = screen.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.starts_with("┌ Throughput per QP"))
        .unwrap_or_else(|| panic!("no chart: {screen}"));
    let bottom = top
        + lines[top..]
            .iter()
            .position(|l| l.starts_with('└'))
            .unwrap();
    lines[top..=bottom].to_vec()
}

/// Every item is checked and every problem told, not only the first.
fn check_layout(w: u16, h: u16) {
    let t = start(w, h);
    let mut problems: Vec<String> = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            problems.push(what);
        }
    };
    let overview = t.wait_for(&["6166 RoCE", "QP 0x000100"]);
    // The legend is on the chart's bottom border, nothing is drawn over
    // the data inside it.
    let chart = chart_box(&overview);
    let inner = &chart[1..chart.len() - 1];
    for l in inner {
        let body: String = l
            .chars()
            .skip(1)
            .take(l.chars().count().saturating_sub(2))
            .collect();
        check(
            !body.contains('┌') && !body.contains('┐') && !body.contains("QP 0x"),
            format!("a box or legend over the data at {w}x{h}: {l}\n{overview}"),
        );
    }
    let border = chart.last().unwrap();
    check(
        border.contains("QP 0x000100") && border.contains("time cursor"),
        format!("the legend on the border at {w}x{h}: {overview}"),
    );

    // QPs: the QP, its route and its state whole.
    t.keys(&["3"]);
    // The state is the analysis' at the cursor: wait for the report of the
    // whole capture (a loaded machine draws a frame or two before it):
    // its window at the end ("sending" alone is in the states' legend).
    let qps = t.wait_for(&["QP conversations", "15/16"]);
    let row = qps.lines().find(|l| l.contains("0x000100")).unwrap_or("");
    check(!row.is_empty(), format!("no whole QP at {w}x{h}: {qps}"));
    check(
        row.contains("10.0.0.1 > 10.0.0.2"),
        format!("{w}x{h}: {qps}"),
    );
    // Its state at the end: 15 of 16 outstanding, sending.
    check(row.contains("sending"), format!("{w}x{h}: {qps}"));

    // Retransmissions: times whole.
    t.keys(&["5"]);
    let retx = t.wait_for(&["Retransmission episodes: 38"]);
    check(retx.contains("0.000037624"), format!("{w}x{h}: {retx}"));
    check(retx.contains("recovery"), format!("{w}x{h}: {retx}"));

    // The ladder: r moves to the next resend and stays.
    t.keys(&["4", "Home"]);
    let ladder = t.wait_for(&["Ladder: QP 0x000100", "r next retransmission"]);
    check(
        ladder.contains("r next retransmission"),
        format!("the key is offered at {w}x{h}: {ladder}"),
    );
    t.keys(&["r"]);
    let after = t.wait_for(&["[RETX]"]);
    check(
        after.contains("Ladder: QP 0x000100"),
        format!("r left the ladder at {w}x{h}: {after}"),
    );
    check(
        !after.contains("filter: "),
        format!("the packet list opened: {after}"),
    );

    // Packets: whole headings; an invalid goto changes nothing.
    t.keys(&["2"]);
    let packets = t.wait_for(&["of 6166"]);
    let heading = packets.lines().find(|l| l.contains("No.")).unwrap_or("");
    for word in ["Time", "Opcode", "QP", "PSN", "Len", "Analysis"] {
        check(
            heading.contains(word),
            format!("{word} at {w}x{h}: {heading}"),
        );
    }
    t.keys(&[":"]);
    t.type_text("goto -5");
    t.keys(&["Enter"]);
    let refused = t.wait_for(&["usage: goto"]);
    check(refused.contains("usage: goto"), refused.clone());
    check(
        refused.contains("of 6166") && refused.contains("paused"),
        format!("goto -5 moved the cursor at {w}x{h}: {refused}"),
    );
    // A filter nothing matches says so.
    t.keys(&["/"]);
    t.type_text("bth.psn == 1");
    t.keys(&["Enter"]);
    let empty = t.wait_for(&["Packets: no packet matches the filter"]);
    check(
        empty.contains("Packets: no packet matches the filter"),
        format!("{w}x{h}: {empty}"),
    );
    check(!empty.contains("1-0 of 0"), empty.clone());
    t.keys(&["q"]);
    assert!(
        problems.is_empty(),
        "at {w}x{h}:\n{}",
        problems.join("\n\n")
    );
}

#[test]
fn every_view_keeps_its_cells_whole_at_80x24() {
    if have_tmux() {
        check_layout(80, 24);
    }
}

#[test]
fn every_view_keeps_its_cells_whole_at_160x45() {
    if have_tmux() {
        check_layout(160, 45);
    }
}

//! `attach --point`: several capture points live, real processes on
//! loopback. `sim --points a,sw,b` writes each point's capture; a
//! `rocescope agent` per point serves it; `attach` takes one point from
//! each, the points analysis running as frames arrive. Headless, the
//! analysis of what arrived equals `stats --point` on the files, and an
//! agent going away is said (on stderr and in the JSON) while the others'
//! analysis goes on; in tmux, the workbench shows each point's link, the
//! points' Overview and the Losses view, and a point whose agent went away.
#![allow(clippy::unwrap_used)]

mod support;

use support::{out_dir, tmux, wait_for};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");
const POINTS: [&str; 3] = ["a", "sw", "b"];

/// A child process, ended with the test if it is still running.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// lossy-link's three points' captures, written by the simulator.
fn captures(name: &str) -> PathBuf {
    let dir = out_dir("points-live", name);
    let out = Command::new(BIN)
        .args(["sim", "--scenario", "lossy-link", "--duration", "3ms"])
        .args(["--points", "a,sw,b", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    dir
}

/// An agent per point serving its capture (from the start, once a client
/// is attached), and each one's port.
fn agents(dir: &Path) -> Vec<(Proc, u16)> {
    POINTS
        .iter()
        .map(|n| {
            let port = rocescope_testkit::free_port().unwrap();
            let child = Command::new(BIN)
                .args(["agent", "--listen", &format!("127.0.0.1:{port}")])
                .arg("--follow")
                .arg(dir.join(format!("{n}.pcapng")))
                .args(["--wait-for-client", "--log-level", "info"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // Listening before the client tries (its log says so: a
            // connection to find out would be the client it waits for).
            let mut child = child;
            let mut log = BufReader::new(child.stderr.take().unwrap()).lines();
            let listening = log
                .by_ref()
                .map_while(Result::ok)
                .any(|l| l.contains(" listening on "));
            assert!(listening, "agent {n} not up");
            std::thread::spawn(move || log.for_each(drop));
            (Proc(child), port)
        })
        .collect()
}

fn point_args(ports: &[u16]) -> Vec<String> {
    POINTS
        .iter()
        .zip(ports)
        .flat_map(|(n, p)| ["--point".to_owned(), format!("{n}=tcp://127.0.0.1:{p}")])
        .collect()
}

/// `attach --point ... --headless --json` started, its stderr lines as
/// they come.
fn attach(ports: &[u16], duration: &str) -> (Proc, Receiver<String>) {
    let mut child = Command::new(BIN)
        .arg("attach")
        .args(point_args(ports))
        .args(["--headless", "--json", "--duration", duration])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (Proc(child), rx)
}

fn json_of(p: Proc) -> serde_json::Value {
    let mut p = p;
    let out = std::mem::replace(&mut p.0, Command::new("true").spawn().unwrap())
        .wait_with_output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", support::text(&out.stdout)))
}

/// (segment, DestQP, PSN, opcode) of each loss.
fn losses(mp: &serde_json::Value) -> Vec<(String, u64, u64, u64)> {
    let mut v: Vec<_> = mp["losses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["segment"].as_str().unwrap().to_owned(),
                l["dest_qp"].as_u64().unwrap(),
                l["psn"].as_u64().unwrap(),
                l["opcode"].as_u64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn attach_to_an_agent_per_point_places_the_losses_as_the_files_do() {
    let dir = captures("same");
    let agents = agents(&dir);
    let ports: Vec<u16> = agents.iter().map(|a| a.1).collect();
    let (p, err) = attach(&ports, "6s");
    let v = json_of(p);
    let said: Vec<String> = err.try_iter().collect();
    // The files' analysis.
    let mut stats = Command::new(BIN);
    stats.arg("stats");
    for n in POINTS {
        stats
            .arg("--point")
            .arg(format!("{n}={}", dir.join(format!("{n}.pcapng")).display()));
    }
    let files: serde_json::Value =
        serde_json::from_slice(&rocescope_testkit::run_ok(stats.arg("--json")).stdout).unwrap();
    let links = v["links"].as_array().unwrap();
    assert_eq!(links.len(), 3, "{v}");
    for (l, n) in links.iter().zip(POINTS) {
        assert_eq!(l["name"], n, "{l}");
        assert_eq!(l["frames_dropped"], 0, "{l}");
        assert!(
            said.iter()
                .any(|s| s.starts_with(&format!("rocescope attach: point {n}: connected to"))),
            "{said:?}"
        );
    }
    let live = &v["multipoint"];
    let want = &files["multipoint"];
    for (lp, fp) in live["points"]
        .as_array()
        .unwrap()
        .iter()
        .zip(want["points"].as_array().unwrap())
    {
        // Every frame arrived; the clocks the same.
        assert_eq!(lp["frames"], fp["frames"], "{lp} {fp}");
        assert_eq!(lp["offset_ns"], fp["offset_ns"], "{lp} {fp}");
    }
    let got = losses(live);
    assert!(got.iter().filter(|l| l.0 == "a>sw").count() > 10, "{got:?}");
    assert_eq!(got, losses(want));
    assert_eq!(live["segments"], want["segments"]);
}

#[test]
fn an_agent_going_away_is_said_and_the_others_go_on() {
    let dir = captures("away");
    let mut agents = agents(&dir);
    let ports: Vec<u16> = agents.iter().map(|a| a.1).collect();
    let (p, err) = attach(&ports, "8s");
    let mut said = Vec::new();
    let t0 = Instant::now();
    while said
        .iter()
        .filter(|s: &&String| s.contains(": connected to"))
        .count()
        < 3
    {
        assert!(t0.elapsed() < Duration::from_secs(30), "{said:?}");
        if let Ok(l) = err.recv_timeout(Duration::from_millis(200)) {
            said.push(l);
        }
    }
    // b's agent goes away once its capture is served.
    std::thread::sleep(Duration::from_secs(2));
    let _ = agents[2].0.0.kill();
    let _ = agents[2].0.0.wait();
    let v = json_of(p);
    said.extend(err.try_iter());
    assert!(
        said.iter()
            .any(|s| s.starts_with("rocescope attach: point b: connection lost")),
        "{said:?}"
    );
    let links = v["links"].as_array().unwrap();
    let b = &links[2];
    assert!(
        b["state"].as_str().unwrap().starts_with("connection lost"),
        "{b}"
    );
    assert_eq!(links[0]["state"], "connected", "{v}");
    // What b received before it went is analysed with the others'.
    let mp = &v["multipoint"];
    assert!(mp["points"][2]["frames"].as_u64().unwrap() > 1000, "{mp}");
    assert!(losses(mp).iter().any(|l| l.0 == "a>sw"), "{mp}");
}

#[test]
fn the_workbench_shows_each_point_live_and_one_going_away() {
    if !rocescope_testkit::available(&[rocescope_testkit::TMUX]) {
        return;
    }
    let dir = captures("tui");
    let mut agents = agents(&dir);
    let ports: Vec<u16> = agents.iter().map(|a| a.1).collect();
    let args = format!("attach {}", point_args(&ports).join(" "));
    let (session, status_file) =
        support::rocescope_in_tmux_named("points-live", &dir, (180, 45), &args);
    let screen = wait_for(&session, "losses: a>sw ", 40);
    tmux(&["send-keys", "-t", &session, "0"]);
    let losses = wait_for(&session, "Losses by segment: a>sw ", 10);
    tmux(&["send-keys", "-t", &session, "1"]);
    let _ = agents[2].0.0.kill();
    let _ = agents[2].0.0.wait();
    let away = wait_for(&session, "link b: connection lost", 20);
    tmux(&["send-keys", "-t", &session, "q"]);
    let status = support::exit_status(&session, &status_file, 10);
    assert!(screen.contains("Capture points a > sw > b"), "{screen}");
    for n in POINTS {
        rocescope_testkit::assert_contains(&screen, &format!("link {n}: connected,"));
    }
    assert!(screen.contains("attach:a,sw,b"), "{screen}");
    assert!(losses.contains(" 0:Losses "), "{losses}");
    rocescope_testkit::assert_contains(&losses, "lost on the wire between the points of a>sw");
    // Said in the Overview and on the status line.
    assert!(away.contains("link b: connection lost"), "{away}");
    assert!(away.contains("point b: connection lost"), "{away}");
    assert_eq!(status, "0", "{away}");
}

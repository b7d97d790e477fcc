//! The agent, a long-running server, logs through `tracing` at
//! `--log-level`: clients coming and going, refused tokens, every request
//! at debug (the token never), its source.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

/// Runs an agent serving the simulator at `level` (with a token), lets two
/// clients talk to it (one with the wrong token, one that subscribes and
/// leaves), stops it and returns what it logged.
fn agent_log(level: &str) -> String {
    let folder = rocescope_testkit::temp_dir(&format!("agent-log-{level}"));
    let dir = folder.path();
    let token = "s3cret-token-0123456789";
    std::fs::write(dir.join("token"), token).unwrap();
    let (mut cmd, listen) = support::sim_agent("default");
    let mut agent = cmd
        .args(["--sim-pace", "0.0001"])
        .args([
            "--token-file",
            dir.join("token").to_str().unwrap(),
            "--log-level",
            level,
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read on a thread: at warn the agent says nothing until a client errs.
    let err = BufReader::new(agent.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut log = String::new();
        for line in err.lines() {
            log.push_str(&line.unwrap());
            log.push('\n');
        }
        log
    });
    // The agent binds before it logs or serves: a second is plenty.
    std::thread::sleep(Duration::from_secs(1));
    let talk = |lines: &str| {
        let mut s = TcpStream::connect(&listen).unwrap();
        s.write_all(lines.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(400));
    };
    talk("HELLO 1 test\nAUTH wrong-token-0123456789\n");
    talk(&format!(
        "HELLO 1 test\nAUTH {token}\nSUBSCRIBE probes=none\nBYE\n"
    ));
    std::thread::sleep(Duration::from_millis(300));
    agent.kill().unwrap();
    agent.wait().unwrap();
    reader.join().unwrap()
}

#[test]
fn the_agent_logs_at_its_level() {
    let info = agent_log("info");
    for want in [
        " INFO listening on 127.0.0.1:",
        "client 1 from 127.0.0.1:",
        " WARN client 1: wrong token, closing",
        "client 2 authenticated",
        "client 2 from 127.0.0.1:",
    ] {
        assert!(info.contains(want), "{want:?} in\n{info}");
    }
    assert!(!info.contains("DEBUG"), "{info}");
    let debug = agent_log("debug");
    rocescope_testkit::assert_contains(&debug, "DEBUG client 2: SUBSCRIBE probes=none");
    assert!(debug.contains("DEBUG client 2: AUTH"), "{debug}");
    assert!(
        !debug.contains("s3cret"),
        "the token is never logged: {debug}"
    );
    let warn = agent_log("warn");
    assert!(warn.contains("wrong token"), "{warn}");
    assert!(!warn.contains("INFO"), "{warn}");
}

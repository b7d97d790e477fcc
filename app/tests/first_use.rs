//! What a first-time user meets (issue 53): careless input gets one clear
//! error and a non-zero exit, never a hang, a repeated cause or an empty
//! success. Each test runs the real binary.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::TcpListener;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use support::{bin, rocescope as run};

fn stderr(o: &Output) -> String {
    support::text(&o.stderr)
}

/// A child ended with the test, however the test ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits for a child to exit, killing it (and failing) past `limit`.
fn wait_exit(child: &mut Reaped, limit: Duration) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            return status;
        }
        assert!(t0.elapsed() < limit, "still running after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A port in use: the cause said once ("Address already in use (os error
/// 98): Address already in use (os error 98)" before).
#[test]
fn a_port_in_use_is_said_once() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = run(&["agent", "--listen", &addr, "--sim", "default"]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains(&format!("listen on {addr}")), "{err}");
    assert_eq!(err.matches("in use").count(), 1, "{err}");
}

/// An unknown scenario names the shipped ones ("nosuch:?: (file): No such
/// file or directory" before).
#[test]
fn an_unknown_scenario_names_the_shipped_ones() {
    let o = run(&["sim", "--scenario", "nosuch", "--headless"]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("nosuch: neither a shipped scenario (default, "),
        "{err}"
    );
    assert!(err.contains("window-stall"), "{err}");
    assert!(!err.contains(":?:") && !err.contains("(file)"), "{err}");
}

/// `cmd` run with no input, its stdout dropped, failing the test (not
/// hanging it) past a minute: its exit status and stderr.
fn run_bounded(mut cmd: std::process::Command) -> (std::process::ExitStatus, String) {
    let mut child = Reaped(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Read while it runs: a full pipe would stop it.
    let mut stderr = child.0.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut err = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut err).map(|_| err)
    });
    let status = wait_exit(&mut child, Duration::from_secs(60));
    (status, reader.join().unwrap().unwrap())
}

/// Attaching to a port nobody listens on is an error at once ("connection
/// lost" and exit 0 with 0 frames before).
#[test]
fn attach_to_a_closed_port_fails() {
    let url = format!(
        "tcp://127.0.0.1:{}",
        rocescope_testkit::free_port().unwrap()
    );
    let t0 = Instant::now();
    let o = run(&["attach", &url, "--headless", "--duration", "10s"]);
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert_eq!(
        err.matches("cannot connect to 127.0.0.1:").count(),
        1,
        "said once: {err}"
    );
    assert!(!err.contains("connection lost"), "{err}");
    assert!(
        t0.elapsed() < Duration::from_secs(8),
        "it waited for --duration"
    );
}

/// `cat trace | agent --pcap-stdin` keeps the stream for its first client
/// (it published the whole file to nobody and served 0 clients before).
#[test]
fn a_stdin_agent_waits_for_its_first_client() {
    let sample = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/captures/sample-write-read.pcap"
    );
    let mut reader = rocescope_replay::CaptureReader::open(std::path::Path::new(sample)).unwrap();
    let mut frames = 0u64;
    while reader.next_frame().unwrap().is_some() {
        frames += 1;
    }
    let port = rocescope_testkit::free_port().unwrap();
    let listen = format!("127.0.0.1:{port}");
    let mut agent = Reaped(
        bin()
            .args(["agent", "--listen", &listen, "--pcap-stdin"])
            .stdin(std::fs::File::open(sample).unwrap())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Long enough for the whole file to go, were it read at once.
    std::thread::sleep(Duration::from_millis(1500));
    let o = run(&[
        "attach",
        &format!("tcp://{listen}"),
        "--headless",
        "--json",
        "--duration",
        "20s",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["frames_received"], frames, "{v}");
    assert_eq!(v["source_ended"], true, "{v}");
    assert!(wait_exit(&mut agent, Duration::from_secs(10)).success());
}

/// A capture cut mid-record: every command that reads it says what it
/// could not read, on stderr and in `--json` (`stats` printed its summary
/// with nothing on stderr before; `export` and `query` were silent too).
#[test]
fn a_cut_capture_is_told_by_every_command() {
    let sample = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/captures/sample-write-read.pcap"
    );
    let dir_tmp = rocescope_testkit::temp_dir("first-use-cut");
    let dir = dir_tmp.path();
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &std::fs::read(sample).unwrap()[..5000]).unwrap();
    let cut = cut.to_str().unwrap();
    let csv = dir.join("p.csv");
    let html = dir.join("report");
    for args in [
        vec!["info", cut],
        vec!["stats", cut],
        vec!["stats", cut, "--json"],
        vec![
            "export",
            cut,
            "--table",
            "packets",
            "--to",
            csv.to_str().unwrap(),
        ],
        vec!["query", cut, "SELECT count(*) FROM packets"],
        vec!["report", cut, "-o", html.to_str().unwrap()],
    ] {
        let o = run(&args);
        let err = stderr(&o);
        assert!(o.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("cut.pcap: file cut mid-record: the record at byte 4588"),
            "{args:?}: {err}"
        );
    }
    let o = run(&["stats", cut, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["warnings"][0]["offset"], 4588, "{v}");
    assert!(v["error"].is_null());
    assert_eq!(v["qps"][0]["packets"], 6, "the whole frames before the cut");
}

/// Files under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.push(p.clone());
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `attach --partitions --duration` ends on time however far the writer
/// is behind the source (it never ended before, leaving
/// `.tmp-live-*/part-*.parquet.partial`), says what it did not write, and
/// leaves only whole files, which read back.
#[test]
fn attach_with_partitions_ends_on_time() {
    let port = rocescope_testkit::free_port().unwrap();
    let listen = format!("127.0.0.1:{port}");
    let _agent = Reaped(
        bin()
            .args(["agent", "--listen", &listen, "--sim", "default"])
            .args(["--sim-pace", "max", "--wait-for-client"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(500));
    let folder = rocescope_testkit::temp_dir("first-use-fleet");
    let dir = folder.path().to_path_buf();
    let _ = std::fs::remove_dir_all(&dir);
    let t0 = Instant::now();
    let o = bin()
        .args(["attach", &format!("tcp://{listen}"), "--headless", "--json"])
        .args(["--partitions", dir.to_str().unwrap(), "--window", "10ms"])
        .args(["--capture", "rack-7", "--duration", "3s"])
        .output()
        .unwrap();
    let wall = t0.elapsed();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    // 3 s, the client's 2 s to stop, the writer's 2 s grace, the tables.
    assert!(wall < Duration::from_secs(10), "took {wall:?}: {err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["partitions"];
    let (written, unwritten) = (
        p["rows_written"].as_u64().unwrap(),
        p["rows_unwritten"].as_u64().unwrap(),
    );
    assert!(written > 0, "{v}");
    assert_eq!(
        written + unwritten + p["rows_missed"].as_u64().unwrap(),
        v["store_rows"].as_u64().unwrap(),
        "every row written or counted: {v}"
    );
    if unwritten > 0 {
        assert!(err.contains("NOT written"), "{err}");
    }
    let leftovers: Vec<_> = files_under(&dir)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".partial") || name.starts_with(".tmp")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let n: u64 = support::query_csv(&dir, "SELECT count(*) AS n FROM packets")[1]
        .trim()
        .parse()
        .unwrap();
    assert_eq!(n, written, "the files read back whole");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pipe, `-` or a folder where a capture file belongs: every command
/// that reads one says what it is and what to do, at once (each waited
/// forever on a pipe nobody wrote to; a pipe with a writer was "unknown
/// magic 0x02000400 at byte 0", its magic read, then the pipe opened
/// again past it).
#[cfg(unix)]
#[test]
fn a_pipe_or_a_folder_is_told_not_waited_on() {
    let dir_tmp = rocescope_testkit::temp_dir("first-use-pipe");
    let dir = dir_tmp.path();
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    let fifo = fifo.to_str().unwrap();
    let folder = dir.to_str().unwrap();
    let csv = dir.join("q.csv");
    let html = dir.join("report");
    for (path, says) in [
        (fifo, "a pipe, not a file"),
        (
            "-",
            "no file of that name (standard input is not read here)",
        ),
        (folder, "a folder, not a capture file"),
    ] {
        for args in [
            vec!["decode", path],
            vec!["info", path],
            vec!["stats", path],
            vec![
                "export",
                path,
                "--table",
                "qps",
                "--to",
                csv.to_str().unwrap(),
            ],
            vec!["report", path, "-o", html.to_str().unwrap()],
            vec!["whatif", path, "--set", "window_packets=32"],
            vec!["signals", path],
            vec!["query", path, "SELECT count(*) FROM packets"],
            vec!["open", path],
        ] {
            // A folder is what `query` reads partitions from.
            if path == folder && args[0] == "query" {
                continue;
            }
            let mut cmd = bin();
            cmd.args(&args);
            let (status, err) = run_bounded(cmd);
            assert!(!status.success(), "{args:?}: {err}");
            assert!(err.contains(says), "{args:?}: {err}");
        }
    }
    // A pipe with a writer, as `<(zcat trace.pcap.gz)` or `| rocescope
    // stats /dev/stdin` give: the advice names both ways on.
    let sample = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/captures/sample-write-read.pcap"
    );
    let mut cat = Reaped(
        std::process::Command::new("cat")
            .arg(sample)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let o = bin()
        .args(["stats", "/dev/stdin"])
        .stdin(cat.0.stdout.take().unwrap())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("a pipe, not a file"), "{err}");
    assert!(err.contains("save the stream to a file first"), "{err}");
    assert!(err.contains("rocescope attach - --headless"), "{err}");
}

/// The terminal workbench where the process has no terminal at all (cron,
/// `ssh` without -t: run here under `setsid`, which leaves it none) says
/// so and what prints text instead ("No such device or address (os error
/// 6)" alone before).
#[cfg(unix)]
#[test]
fn the_workbench_without_a_terminal_says_so() {
    let sample = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/captures/sample-write-read.pcap"
    );
    let mut cmd = std::process::Command::new("setsid");
    cmd.arg(env!("CARGO_BIN_EXE_rocescope"))
        .args(["open", sample]);
    let (status, err) = run_bounded(cmd);
    assert!(!status.success(), "{err}");
    assert!(
        err.contains("the terminal workbench needs a terminal, and this process has none"),
        "{err}"
    );
}

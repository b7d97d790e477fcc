//! A live session under a memory cap, with the real binaries on loopback:
//! `agent --sim SCENARIO` serving, `attach --headless --max-memory CAP`
//! attached for a while. Prints frames received and dropped, the client's
//! peak RSS against the cap, and the disk written a second.
//!
//! cargo bench -p rocescope --bench long_session -- [SECONDS] [CAP] [SCENARIO] [MAX_DISK]
//! (defaults: 60, 512MiB, line-rate, no disk cap)

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

fn main() {
    let args: Vec<String> = rocescope_testkit::bench_args();
    let seconds: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(60);
    let cap = args.get(1).cloned().unwrap_or_else(|| "512MiB".into());
    let scenario = args.get(2).cloned().unwrap_or_else(|| "line-rate".into());
    let max_disk = args.get(3).cloned();
    let cap_bytes = rocescope_decoders::units::parse_size_bytes(&cap).unwrap_or_else(|e| {
        eprintln!("long_session: {e}");
        std::process::exit(2)
    });
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(47_900);
    let listen = format!("127.0.0.1:{port}");
    let mut agent = Command::new(BIN)
        .args(["agent", "--listen", &listen, "--sim", &scenario])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the agent: {e}"));
    std::thread::sleep(Duration::from_secs(1));
    let session =
        std::env::temp_dir().join(format!("rocescope-bench-session-{}", std::process::id()));
    let url = format!("tcp://{listen}");
    let duration = format!("{seconds}s");
    let mut attach_args = vec![
        "attach",
        &url,
        "--headless",
        "--json",
        "--duration",
        &duration,
        "--max-memory",
        &cap,
        "--session-dir",
        session.to_str().unwrap_or("/tmp/rocescope-bench-session"),
    ];
    if let Some(d) = &max_disk {
        attach_args.extend(["--max-disk", d.as_str()]);
    }
    let start = Instant::now();
    let mut client = Command::new(BIN)
        .args(&attach_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the client: {e}"));
    // Its summary read as it comes: a long session's findings outgrow the
    // pipe's buffer, and a client blocked writing them would never exit.
    let summary = client.stdout.take().map(|mut o| {
        std::thread::spawn(move || {
            let mut out = String::new();
            let _ = o.read_to_string(&mut out);
            out
        })
    });
    // The client's RSS over time, sampled every second.
    let pid = client.id();
    let mut rss_mib = Vec::new();
    while client.try_wait().ok().flatten().is_none() {
        std::thread::sleep(Duration::from_secs(1));
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        if let Some(kib) = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        {
            rss_mib.push(kib / 1024);
        }
    }
    let wall_s = start.elapsed().as_secs_f64();
    let out = summary.and_then(|t| t.join().ok()).unwrap_or_default();
    let _ = agent.kill();
    let _ = agent.wait();
    // The segments are the bench's, not a recording to keep (tens of GB a
    // minute at line rate).
    let _ = std::fs::remove_dir_all(&session);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| {
        eprintln!("long_session: the client printed no summary ({e}): {out:?}");
        std::process::exit(1)
    });
    let get = |k: &str| v[k].as_u64().unwrap_or(0);
    let peak = get("peak_rss_bytes");
    let received = get("frames_received");
    let dropped = get("frames_dropped");
    let written = get("disk_written_bytes");
    let duration_s = v["duration_s"].as_f64().unwrap_or(wall_s);
    println!(
        "scenario {scenario}, {seconds} s, cap {cap}{}",
        max_disk
            .map(|d| format!(", disk ring {d}"))
            .unwrap_or_default()
    );
    println!(
        "frames received {received} ({:.2} Mpps), dropped {dropped} (agent {}, client {}), stored {}",
        received as f64 / duration_s / 1e6,
        get("frames_dropped_agent"),
        get("frames_dropped_client"),
        get("store_rows")
    );
    println!(
        "client peak RSS {:.1} MiB = {:.2} of the cap (target <= 1.20); store memory {:.1} MiB",
        peak as f64 / (1 << 20) as f64,
        peak as f64 / cap_bytes as f64,
        get("memory_bytes") as f64 / (1 << 20) as f64
    );
    println!(
        "disk written {:.1} MiB ({:.1} MiB/s), on disk {:.1} MiB, rows on disk {}, rows deleted {}, segments deleted {}, records deleted {}",
        written as f64 / (1 << 20) as f64,
        written as f64 / (1 << 20) as f64 / duration_s,
        get("disk_bytes") as f64 / (1 << 20) as f64,
        get("rows_on_disk"),
        get("rows_deleted"),
        get("segments_deleted"),
        get("records_deleted"),
    );
    let every_minute: Vec<String> = rss_mib
        .iter()
        .step_by(60.min(rss_mib.len().max(1)))
        .map(|m| m.to_string())
        .collect();
    println!(
        "client RSS MiB, a sample a minute: {}",
        every_minute.join(" ")
    );
    println!(
        "every frame stored or counted: {}",
        get("store_rows") == received && v["error"].is_null()
    );
}

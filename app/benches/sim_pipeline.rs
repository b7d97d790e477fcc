//! The simulator pipeline, whole process: `rocescope sim --scenario S
//! --duration D --headless --json` (simulate, decode, RC analysis, store,
//! report) timed from spawn to exit, as simulated seconds per wall second.
//! With a second binary, the two run in turn (A B A B, after one warm-up
//! run of each) and each pair's ratio is printed, then the medians.
//!
//! cargo bench -p rocescope --bench sim_pipeline -- [SCENARIOS] [DURATION] [RUNS] [OTHER_BINARY]
//! (defaults: default,line-rate, 500ms, 5; SCENARIOS comma-separated)

use std::process::{Command, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");

/// One finished run: simulated ns, whole-process wall seconds, the
/// in-process figure and peak RSS the command printed.
struct Run {
    sim_ns: u64,
    wall_s: f64,
    in_process: f64,
    peak_rss_bytes: u64,
}

impl Run {
    fn speed(&self) -> f64 {
        self.sim_ns as f64 / 1e9 / self.wall_s.max(1e-9)
    }
}

fn run(bin: &str, scenario: &str, duration: &str) -> Run {
    let start = Instant::now();
    let out = Command::new(bin)
        .args([
            "sim",
            "--scenario",
            scenario,
            "--duration",
            duration,
            "--headless",
            "--json",
        ])
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {bin}: {e}"));
    let wall_s = start.elapsed().as_secs_f64();
    assert!(out.status.success(), "{bin} sim {scenario}: {}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{bin} sim {scenario}: not JSON: {e}"));
    let num = |k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or_else(|| panic!("{bin} sim {scenario}: no {k} in its JSON"))
    };
    Run {
        sim_ns: num("sim_time_ns") as u64,
        wall_s,
        in_process: num("sim_seconds_per_wall_second"),
        peak_rss_bytes: num("peak_rss_bytes") as u64,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn show(label: &str, r: &Run) {
    println!(
        "  {label}: {:.3} s wall, {:.2} simulated s per wall s (in-process {:.2}), peak {} MiB",
        r.wall_s,
        r.speed(),
        r.in_process,
        r.peak_rss_bytes >> 20
    );
}

fn main() {
    let args: Vec<String> = rocescope_testkit::bench_args();
    let scenarios = args.first().map_or("default,line-rate", String::as_str);
    let duration = args.get(1).map_or("500ms", String::as_str);
    let runs: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let other = args.get(3);
    for scenario in scenarios.split(',').filter(|s| !s.is_empty()) {
        println!(
            "{scenario}, {duration}, {runs} runs{}",
            other.map_or(String::new(), |b| format!(", A = {BIN}, B = {b}"))
        );
        // Warm-up: the binaries and the scenario in the page cache.
        run(BIN, scenario, duration);
        if let Some(b) = other {
            run(b, scenario, duration);
        }
        let (mut a_speed, mut b_speed, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..runs {
            let a = run(BIN, scenario, duration);
            show(&format!("run {i} A"), &a);
            a_speed.push(a.speed());
            if let Some(b) = other {
                let rb = run(b, scenario, duration);
                show(&format!("run {i} B"), &rb);
                ratios.push(a.speed() / rb.speed());
                b_speed.push(rb.speed());
            }
        }
        let range = |v: &[f64]| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            format!("{lo:.2}-{hi:.2}")
        };
        println!(
            "{scenario}: A median {:.2} simulated s per wall s ({}), whole process",
            median(a_speed.clone()),
            range(&a_speed)
        );
        if other.is_some() {
            println!(
                "{scenario}: B median {:.2} ({}); A/B per pair: median {:.2} ({})",
                median(b_speed.clone()),
                range(&b_speed),
                median(ratios.clone()),
                range(&ratios)
            );
        }
    }
}

//! Damaged waveforms: mutated copies of a small Icarus Verilog VCD and FST
//! and of an ILA capture's CSV and VCD as ChipScoPy writes them
//! (the fuzz target's seeds in `decoders/fuzz/corpus/wave/`: bit flips,
//! cut spans, truncation, repeated spans, extreme lengths and values, from
//! fixed seeds) through the real binary, `rocescope stats FILE --json` and
//! `rocescope decode FILE`. Each must end on its own (no panic, no abort,
//! no hang, under a 2 GiB address-space limit): either a result, or a
//! non-zero exit whose error names the file, and the two commands must
//! agree on which. No tool is needed beyond the binary.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rocescope");
const CASES: usize = 300;
/// How a truncated mutant is described: its frames are the seed's first.
const TRUNCATED: &str = "truncated at";
/// Words that say where in a file reading stopped.
const WHERE: [&str; 8] = [
    " ns ",
    "byte ",
    "header",
    "hierarchy",
    "no AXI4-Stream interface",
    "no clock",
    "is empty",
    "line",
];

// The mutants are the same on every run.
use rocescope_testkit::Rng;

/// Start of the line holding byte `at` (VCD) or `at` itself (FST).
fn line_start(bytes: &[u8], at: usize, text: bool) -> usize {
    if !text {
        return at;
    }
    bytes[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1)
}

/// One mutant of `seed`, and what was done to it.
fn mutate(seed: &[u8], rng: &mut Rng, text: bool) -> (Vec<u8>, String) {
    let mut b = seed.to_vec();
    let n = b.len();
    match rng.below(7) {
        0 => {
            let flips = 1 + rng.below(8);
            for _ in 0..flips {
                let at = rng.below(n);
                b[at] ^= 1 << rng.below(8);
            }
            (b, format!("{flips} bits flipped"))
        }
        1 => {
            let at = rng.below(n);
            let len = 1 + rng.below(n / 8);
            b.drain(at..(at + len).min(n));
            (b, format!("{len} bytes cut at {at}"))
        }
        2 => {
            let at = rng.below(n);
            b.truncate(at);
            (b, format!("{TRUNCATED} {at}"))
        }
        3 => {
            let at = rng.below(n);
            let len = 1 + rng.below(n / 4);
            let span = b[at..(at + len).min(n)].to_vec();
            let to = rng.below(n);
            b.splice(to..to, span);
            (b, format!("{len} bytes from {at} repeated at {to}"))
        }
        4 => {
            let at = rng.below(n);
            let len = 1 + rng.below(16);
            for x in &mut b[at..(at + len).min(n)] {
                *x = rng.next_u64() as u8;
            }
            (b, format!("{len} random bytes at {at}"))
        }
        _ if text => {
            // Extreme values where a VCD has numbers and vectors.
            let at = line_start(&b, rng.below(n), true);
            let line: Vec<u8> = match rng.below(6) {
                0 => b"#18446744073709551615\n".to_vec(),
                1 => b"#99999999999999999999999999\n".to_vec(),
                2 => {
                    let mut v = b"b".to_vec();
                    v.extend(std::iter::repeat_n(b'1', 1 << 16));
                    v.extend(b" &\n");
                    v
                }
                3 => b"$var wire 4294967295 ~ huge [4294967294:0] $end\n".to_vec(),
                4 => b"$var reg 0 ~ empty $end\n".to_vec(),
                _ => b"#5\n#3\n".to_vec(),
            };
            let what = String::from_utf8_lossy(&line[..line.len().min(40)]).into_owned();
            b.splice(at..at, line);
            (b, format!("{:?} inserted at {at}", what.trim_end()))
        }
        _ => {
            // Extreme lengths where an FST has lengths and counts: big-endian
            // u64 block lengths, LEB128 varints.
            let at = rng.below(n);
            let word: &[u8] = match rng.below(5) {
                0 => &[0xff; 8],
                1 => &[0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
                2 => &[0, 0, 0x01, 0, 0, 0, 0, 0],
                3 => &[0, 0, 0, 0, 0, 0, 0, 0],
                _ => &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
            };
            for (k, w) in word.iter().enumerate() {
                if let Some(x) = b.get_mut(at + k) {
                    *x = *w;
                }
            }
            (b, format!("{:02x?} written at {at}", word))
        }
    }
}

/// How one run ended.
struct Run {
    /// `None` when a signal ended it or it ran past the limit.
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the binary under a 2 GiB address-space limit, killed after 20 s
/// (a whole run takes some 20 ms).
fn run(args: &[&str]) -> Run {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2097152; exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rocescope runs");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let stdout = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    Run {
        code,
        stdout,
        stderr,
    }
}

/// What is wrong with one mutant's runs, if anything. `whole`: the seed's
/// frames as `decode` prints them, when the mutant is the seed cut short.
fn judge(path: &Path, whole: Option<&str>) -> Option<String> {
    let p = path.to_str().expect("utf-8 path");
    let stats = run(&["stats", p, "--json"]);
    let decode = run(&["decode", p]);
    for (cmd, r) in [("stats", &stats), ("decode", &decode)] {
        let Some(code) = r.code else {
            return Some(format!(
                "{cmd}: killed by a signal or hung: {}",
                first_line(&r.stderr)
            ));
        };
        for bad in [
            "panicked",
            "RUST_BACKTRACE",
            "memory allocation",
            "stack overflow",
        ] {
            if r.stderr.contains(bad) {
                return Some(format!("{cmd}: {bad}: {}", first_line(&r.stderr)));
            }
        }
        if code != 0 {
            // The error is the last line: `rocescope: FILE: ...`.
            let error = r
                .stderr
                .lines()
                .rev()
                .find(|l| !l.is_empty())
                .unwrap_or_default();
            if !error.starts_with("rocescope: ") || !error.contains(p) {
                return Some(format!(
                    "{cmd}: exit {code}, the error does not name the file: {}",
                    first_line(&r.stderr)
                ));
            }
            if !WHERE.iter().any(|w| error.contains(w)) {
                return Some(format!(
                    "{cmd}: exit {code}, the error does not say where: {error}"
                ));
            }
        }
    }
    // A cut file keeps the frames before the cut: the seed's first ones.
    if let Some(whole) = whole
        && !whole.starts_with(&decode.stdout)
    {
        return Some(format!(
            "decode of a cut file printed frames the whole one does not begin with: {}",
            decode.stdout.lines().next().unwrap_or_default()
        ));
    }
    let (stats_ok, decode_ok) = (stats.code == Some(0), decode.code == Some(0));
    if stats_ok != decode_ok {
        return Some(format!(
            "stats {} but decode {}: stats: {} decode: {}",
            if stats_ok { "succeeded" } else { "failed" },
            if decode_ok { "succeeded" } else { "failed" },
            first_line(&stats.stderr),
            first_line(&decode.stderr)
        ));
    }
    if stats_ok {
        let v: serde_json::Value = match serde_json::from_str(&stats.stdout) {
            Ok(v) => v,
            Err(e) => return Some(format!("stats exit 0 without its JSON: {e}")),
        };
        if v.get("qps").is_none() || v.get("error").is_some_and(|e| !e.is_null()) {
            return Some(format!("stats exit 0 with a failed source: {v}"));
        }
    }
    None
}

fn first_line(s: &str) -> String {
    let l = s
        .lines()
        .find(|l| l.contains("panicked") || l.contains("error") || l.contains("failed"))
        .or_else(|| s.lines().next())
        .unwrap_or_default();
    l.chars().take(300).collect()
}

/// Every mutant of one seed, on two threads; the failures, described.
fn mutants(seed_name: &str, rng_seed: u64) -> (usize, Vec<String>) {
    let seed_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../decoders/fuzz/corpus/wave")
        .join(seed_name);
    let seed = std::fs::read(&seed_path).expect("the committed seed");
    let text = !seed_name.ends_with(".fst");
    let folder = rocescope_testkit::temp_dir(&format!("mutants-{seed_name}"));
    let dir: PathBuf = folder.path().to_path_buf();
    let seed_run = run(&["decode", seed_path.to_str().expect("utf-8")]);
    assert_eq!(
        seed_run.code,
        Some(0),
        "the seed decodes: {}",
        seed_run.stderr
    );
    assert!(seed_run.stdout.lines().count() >= 3, "{}", seed_run.stdout);
    let whole = seed_run.stdout;
    let mut rng = Rng(rng_seed);
    let cases: Vec<(PathBuf, String)> = (0..CASES)
        .map(|i| {
            let (bytes, what) = mutate(&seed, &mut rng, text);
            let path = dir.join(format!("m{i:03}-{seed_name}"));
            std::fs::write(&path, bytes).expect("mutant written");
            (path, what)
        })
        .collect();
    let failures = std::sync::Mutex::new(Vec::new());
    let ok = std::sync::atomic::AtomicUsize::new(0);
    let (failures_ref, ok_ref, whole) = (&failures, &ok, &whole);
    std::thread::scope(|s| {
        for part in cases.chunks(CASES.div_ceil(2)) {
            s.spawn(move || {
                for (path, what) in part {
                    let cut = what.starts_with(TRUNCATED).then_some(whole.as_str());
                    match judge(path, cut) {
                        Some(why) => failures_ref
                            .lock()
                            .expect("lock")
                            .push(format!("{} ({what}): {why}", path.display())),
                        None => {
                            ok_ref.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().expect("lock");
    failures.sort();
    if failures.is_empty() && std::env::var_os("KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    (ok.into_inner(), failures)
}

fn check(seed_name: &str, rng_seed: u64) {
    let (ok, failures) = mutants(seed_name, rng_seed);
    assert!(
        failures.is_empty(),
        "{} of {CASES} mutants of {seed_name} went wrong ({ok} held):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn mutated_vcds_fail_cleanly_or_read() {
    check("icarus.vcd", 0x49_0001);
}

#[test]
fn mutated_fsts_fail_cleanly_or_read() {
    check("icarus.fst", 0x49_0002);
}

/// A Vivado ILA capture as ChipScoPy writes it, CSV and VCD.
#[test]
fn mutated_ila_captures_fail_cleanly_or_read() {
    check("chipscopy-ila.csv", 0x49_0003);
    check("chipscopy-ila.vcd", 0x49_0004);
}

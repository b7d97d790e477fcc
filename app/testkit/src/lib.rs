//! What rocescope's tests and benches share, as a dev-dependency of every
//! crate: the outside tools a test needs (tshark, tmux, Icarus Verilog,
//! Python packages), found one way, temporary folders that clean up after
//! themselves, and smaller helpers (a deterministic Rng, pcap bytes, the
//! process's memory figures).

use std::process::Command;

pub use tempfile::TempDir;

/// An outside program a test needs, and how to tell it is there.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// What a reader calls it ("tshark", "python3 with pyarrow").
    pub name: &'static str,
    /// The command that succeeds (exit 0) when it is there.
    pub probe: &'static [&'static str],
    /// Set, the test fails where the tool is missing instead of skipping
    /// (`.ci/run` sets it where it installs the tool).
    pub require: &'static str,
    /// How to install it.
    pub install: &'static str,
}

pub const TSHARK: Tool = Tool {
    name: "tshark",
    probe: &["tshark", "--version"],
    require: "ROCESCOPE_REQUIRE_TSHARK",
    install: "apt-get install tshark",
};
/// Wireshark's editcap, in the same package as tshark.
pub const EDITCAP: Tool = Tool {
    name: "editcap",
    probe: &["editcap", "--version"],
    require: "ROCESCOPE_REQUIRE_TSHARK",
    install: "apt-get install tshark",
};
pub const TMUX: Tool = Tool {
    name: "tmux",
    probe: &["tmux", "-V"],
    require: "ROCESCOPE_REQUIRE_TMUX",
    install: "apt-get install tmux",
};
pub const IVERILOG: Tool = Tool {
    name: "Icarus Verilog",
    probe: &["iverilog", "-V"],
    require: "ROCESCOPE_REQUIRE_IVERILOG",
    install: "apt-get install iverilog",
};
pub const CHIPSCOPY: Tool = Tool {
    name: "python3 with chipscopy",
    probe: &["python3", "-c", "import chipscopy"],
    require: "ROCESCOPE_REQUIRE_CHIPSCOPY",
    install: "pip install chipscopy",
};
pub const PYARROW: Tool = Tool {
    name: "python3 with pyarrow",
    probe: &["python3", "-c", "import pyarrow"],
    require: "ROCESCOPE_REQUIRE_PYARROW",
    install: "pip install pyarrow",
};
pub const PYSPARK: Tool = Tool {
    name: "python3 with pyspark",
    probe: &["python3", "-c", "import pyspark"],
    require: "ROCESCOPE_REQUIRE_SPARK",
    install: "pip install pyspark",
};
pub const DATAFUSION: Tool = Tool {
    name: "python3 with datafusion",
    probe: &["python3", "-c", "import datafusion"],
    require: "ROCESCOPE_REQUIRE_DATAFUSION",
    install: "pip install datafusion",
};
pub const JAVA: Tool = Tool {
    name: "java",
    probe: &["java", "-version"],
    require: "ROCESCOPE_REQUIRE_SPARK",
    install: "apt-get install default-jre-headless",
};

/// Fails, showing `text`, unless it starts with `prefix`.
#[track_caller]
pub fn assert_starts_with(text: &str, prefix: &str) {
    assert!(text.starts_with(prefix), "not starting {prefix:?}: {text}");
}

/// Fails, showing `text`, unless it holds `part`.
#[track_caller]
pub fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} missing: {text}");
}

/// Whether every one of `tools` is there. A missing one is said on stderr
/// ("skipped: ...") and the caller skips; it panics instead where the
/// tool's `require` variable is set.
pub fn available(tools: &[Tool]) -> bool {
    let mut all = true;
    for t in tools {
        let (program, args) = t.probe.split_first().expect("a probe names its program");
        let found = Command::new(program)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            assert!(
                std::env::var_os(t.require).is_none(),
                "{} is required ({} is set) but was not found ({})",
                t.name,
                t.require,
                t.install
            );
            eprintln!(
                "skipped: {} not found ({}; set {} to make this fail)",
                t.name, t.install, t.require
            );
            all = false;
        }
    }
    all
}

/// A fresh folder under the system's temporary one, named for the test,
/// removed when dropped.
pub fn temp_dir(label: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("rocescope-{label}-"))
        .tempdir()
        .expect("a temporary folder")
}

/// The shared real captures (`shared/captures/`, beside the checkout on
/// developer machines and in CI); `None`, said on stderr, where absent.
pub fn shared_captures() -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: {} is absent (shared/ lies beside the project checkout only on \
             developer machines and CI)",
            dir.display()
        );
        None
    }
}

/// The benches' data folder, the workspace's `target/bench-data/`, made
/// if missing: captures and waveforms written once, read by every run.
pub fn bench_data() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    std::fs::create_dir_all(&dir).expect("target/bench-data");
    dir
}

/// A bench's own arguments: those after the program's name, without the
/// flags cargo passes it (`--bench`).
pub fn bench_args() -> Vec<String> {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect()
}

/// A bench's first argument that is a number (a count or a size), else
/// `default`.
pub fn number_arg(default: u64) -> u64 {
    std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(default)
}

/// Remove a test's output folder, unless `KEEP` is set (to look at what
/// the test wrote).
pub fn remove_unless_keep(dir: &std::path::Path) {
    if std::env::var_os("KEEP").is_none() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The test build's temporary folder (`target/tmp`, beside the test
/// binary's `target/debug/deps`), made if missing: for files a test leaves
/// for a look, or a folder a whole run holds (one in a static is never
/// dropped, so a system temporary folder would be left behind). The
/// system's temporary folder where the binary is elsewhere.
pub fn build_tmp() -> std::path::PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.join("tmp")))
        .filter(|d| std::fs::create_dir_all(d).is_ok())
        .unwrap_or_else(std::env::temp_dir)
}

/// An empty folder `GROUP/NAME` in the test build's temporary folder
/// ([`build_tmp`]), left there after the run for a look.
pub fn out_dir(group: &str, name: &str) -> std::path::PathBuf {
    let d = build_tmp().join(group).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("an output folder");
    d
}

/// Runs `cmd` to its end and returns what it printed; a failure is the
/// test's, with the command's stderr.
pub fn run_ok(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A microsecond pcap file's bytes: `frames` as (time in µs, bytes),
/// each whole, under `linktype` (1 Ethernet, 101 raw IP, 147 a private DLT,
/// 197 ERF).
pub fn pcap_bytes<F: AsRef<[u8]>>(
    linktype: u32,
    frames: impl IntoIterator<Item = (u64, F)>,
) -> Vec<u8> {
    pcap_file(0xa1b2_c3d4, 1_000_000, linktype, frames)
}

/// [`pcap_bytes`] with the nanosecond magic: `frames` as (time in ns, bytes).
pub fn pcap_ns_bytes<F: AsRef<[u8]>>(
    linktype: u32,
    frames: impl IntoIterator<Item = (u64, F)>,
) -> Vec<u8> {
    pcap_file(0xa1b2_3c4d, 1_000_000_000, linktype, frames)
}

/// A classic pcap file, version 2.4, snap length 65535, whose record times
/// are `ticks_per_s` a second (the magic says which).
fn pcap_file<F: AsRef<[u8]>>(
    magic: u32,
    ticks_per_s: u64,
    linktype: u32,
    frames: impl IntoIterator<Item = (u64, F)>,
) -> Vec<u8> {
    let mut out = Vec::new();
    for v in [magic, 0x0004_0002, 0, 0, 65535, linktype] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (ts, f) in frames {
        let f = f.as_ref();
        for v in [
            (ts / ticks_per_s) as u32,
            (ts % ticks_per_s) as u32,
            f.len() as u32,
            f.len() as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(f);
    }
    out
}

/// A field as `tshark -T fields` prints it, as a number: `0x` hex,
/// `True`/`False`, decimal, else bare hex; `None` for anything else.
pub fn tshark_number(v: &str) -> Option<u64> {
    match v {
        "True" => Some(1),
        "False" => Some(0),
        _ => match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => v.parse().ok().or_else(|| u64::from_str_radix(v, 16).ok()),
        },
    }
}

/// A TCP port on loopback no one listens on now (the kernel's pick), for
/// a server process the test starts.
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A field of `/proc/self/status` in KiB (`"VmRSS:"`, `"RssAnon:"`,
/// `"VmHWM:"`), for the benches' memory figures; 0 where the system does
/// not tell it.
pub fn proc_status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// CPU time (user, system) in clock ticks of 10 ms, from a `/proc` stat
/// file: `/proc/self/stat` for the process (every thread, ended ones too),
/// `/proc/thread-self/stat` for the calling thread; zeros where the system
/// does not tell it.
pub fn proc_cpu_ticks(stat_file: &str) -> (u64, u64) {
    let stat = std::fs::read_to_string(stat_file).unwrap_or_default();
    // The name may hold spaces and parentheses; the fields after it do not.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let mut f = after_name.split_whitespace().skip(11);
    let mut tick = || f.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    // Fields 14 and 15 of stat (utime, stime): 12 and 13 after the name.
    (tick(), tick())
}

/// xorshift64*: numbers that are the same on every run from one seed, for
/// mutants and fuzzing without a dependency.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next number of the stream.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// The next number below `n` (0 where `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// The start of a simulator scenario (TOML) of two BALBOA cards, `alice`
/// and `bob`, and one `[[qp]]` from alice to bob whose keys come next.
pub fn alice_to_bob(name: &str, seed: u64, duration_ns: u64) -> String {
    format!(
        "name = \"{name}\"\nseed = {seed}\nduration_ns = {duration_ns}\n\
         [[node]]\nname = \"alice\"\nkind = \"balboa\"\n\
         [[node]]\nname = \"bob\"\nkind = \"balboa\"\n\
         [[qp]]\nfrom = \"alice\"\nto = \"bob\"\n"
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_program_that_is_not_there_is_missing_and_one_that_fails_too() {
        let absent = Tool {
            name: "absent",
            probe: &["rocescope-no-such-program"],
            require: "ROCESCOPE_TESTKIT_NEVER_SET",
            install: "nowhere",
        };
        let failing = Tool {
            probe: &["sh", "-c", "exit 3"],
            ..absent
        };
        let present = Tool {
            probe: &["sh", "-c", "exit 0"],
            ..absent
        };
        assert!(!available(&[absent]));
        assert!(!available(&[present, failing]));
        assert!(available(&[present]));
    }

    #[test]
    fn a_temp_dir_goes_when_dropped() {
        let d = temp_dir("testkit");
        let path = d.path().to_owned();
        assert!(path.is_dir());
        assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("rocescope-testkit-")
        );
        drop(d);
        assert!(!path.exists());
    }
}

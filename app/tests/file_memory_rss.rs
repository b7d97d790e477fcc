//! The process stays within `--max-memory` (+20%) on a capture whose
//! index alone is past the cap: 3 M header-only packets, 72 MB of index,
//! indexed by the real binary under a 64 MiB cap (its own file: one
//! process, one capture of 230 MB, removed at the end).
#![allow(clippy::unwrap_used)]

mod support;

use support::rocescope_ok;

const FRAMES: u64 = 3_000_000;
const CAP_BYTES: u64 = 64 << 20;

fn info(capture: &str, extra: &[&str]) -> serde_json::Value {
    let out = rocescope_ok(&[&["info", capture, "--json"][..], extra].concat());
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn indexing_a_capture_past_the_cap_stays_within_it() {
    let folder = rocescope_testkit::temp_dir("file-memory-rss");
    let capture = folder.path().join("3m.pcap");
    rocescope_replay::synth::write_header_only_pcap(&capture, FRAMES).unwrap();
    let capture = capture.to_str().unwrap();

    let whole = info(capture, &[]);
    let whole_rss = whole["peak_rss_bytes"].as_u64().unwrap();
    assert!(
        whole_rss as f64 > CAP_BYTES as f64 * 1.2,
        "the whole index ({whole_rss} B of RSS) must be past the cap for the test to say anything"
    );

    let capped = info(capture, &["--max-memory", "64MiB"]);
    assert_eq!(capped["packets"], FRAMES);
    assert!(capped["index_rows_on_disk"].as_u64().unwrap() > FRAMES * 9 / 10);
    let rss = capped["peak_rss_bytes"].as_u64().unwrap();
    assert!(
        rss as f64 <= CAP_BYTES as f64 * 1.2,
        "peak RSS {:.1} MiB under a 64 MiB cap (uncapped: {:.1} MiB)",
        rss as f64 / 1048576.0,
        whole_rss as f64 / 1048576.0
    );
}

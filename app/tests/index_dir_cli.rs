//! `--index-dir`: the first open of a capture keeps its index there, the
//! second reads it back instead of indexing (`info` says so), and every
//! command's output is the same byte for byte as with a fresh index; a
//! stale index (the file touched or grown, a damaged manifest or rows
//! file) is said in one line and rebuilt; a folder that cannot hold the
//! index is an error naming it.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::PathBuf;

use support::{arg as s, rocescope, rocescope_ok, same_with_and_without, text};

/// Three whole index chunks (of 65,536 rows) and part of a fourth.
const FRAMES: u64 = 200_000;

/// A folder holding `resends.pcap` ([`FRAMES`] frames, resends among
/// them) and the path its indexes are to be kept under.
fn resends(folder: &str) -> (rocescope_testkit::TempDir, PathBuf, PathBuf) {
    let folder = rocescope_testkit::temp_dir(folder);
    let capture = folder.path().join("resends.pcap");
    rocescope_replay::synth::write_resending_header_only_pcap(&capture, FRAMES, 1_000).unwrap();
    let dir = folder.path().join("indexes");
    (folder, capture, dir)
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `info --json` with the index kept in `dir`: its `index_dir` part, and
/// what it said on stderr.
fn info_kept(cap: &str, dir: &str) -> (serde_json::Value, String) {
    let out = rocescope_ok(&["info", cap, "--json", "--index-dir", dir]);
    let v = json(&out);
    assert_eq!(v["packets"], FRAMES, "{v}");
    (v["index_dir"].clone(), text(&out.stderr))
}

#[test]
fn a_second_open_reads_the_index_back_and_says_the_same() {
    let (folder, capture, dir) = resends("index-dir-cli");
    let (cap, d) = (s(&capture), s(&dir));
    // The first open indexes (under a tiny cap, so that most chunks are
    // copied from spill segments) and keeps the index.
    let tiny = ["--max-memory", "1MiB", "--index-dir", d];
    let first = rocescope_ok(&[&["stats", cap, "--json"][..], &tiny].concat());
    assert_eq!(text(&first.stderr), "", "nothing stale on a first open");
    let (kept, err) = info_kept(cap, d);
    assert_eq!(kept["reused"], true, "{kept}");
    assert_eq!(kept["stale"], serde_json::Value::Null, "{kept}");
    assert!(
        kept["saved_bytes"].as_u64().unwrap() >= FRAMES * 24,
        "{kept}"
    );
    assert_eq!(err, "");
    let human = text(&rocescope_ok(&["info", cap, "--index-dir", d]).stdout);
    assert!(
        human.contains(&format!("index           reused from {d} (")),
        "{human}"
    );
    assert!(human.contains("(not indexed)"), "{human}");

    // The same rows and counters as a fresh index, byte for byte: the RC
    // analysis' JSON (the analysis kept beside the index taken back),
    // every row exported, SQL over every row.
    let kept_analysis = std::path::Path::new(kept["folder"].as_str().unwrap()).join("analysis");
    assert!(
        kept_analysis.is_file(),
        "the first stats keeps its analysis"
    );
    let again = rocescope_ok(&["stats", cap, "--json", "--index-dir", d]);
    assert_eq!(text(&again.stderr), "");
    assert_eq!(first.stdout, again.stdout);
    // Other settings: the analysis is made again, and says why.
    let slower = ["stats", cap, "--json", "--link-gbps", "25"];
    let other = rocescope_ok(&[&slower[..], &["--index-dir", d]].concat());
    let err = text(&other.stderr);
    assert!(
        err.contains("the analysis kept in")
            && err.contains("(link_gbps the capture's -> 25); reading the frames again"),
        "{err}"
    );
    assert_eq!(other.stdout, rocescope_ok(&slower).stdout);
    let other_again = rocescope_ok(&[&slower[..], &["--index-dir", d]].concat());
    assert_eq!(text(&other_again.stderr), "", "kept for the next open");
    assert_eq!(other_again.stdout, other.stdout);
    same_with_and_without(
        folder.path(),
        cap,
        &["--index-dir", d],
        &["packets", "episodes", "qps"],
        "SELECT count(*) AS n, sum(psn) AS s, max(ts_ns) AS t FROM packets WHERE retransmission",
    );
    // The info of a reused index is the fresh one's but for the timing
    // and the memory and disk the index takes.
    let strip = |mut v: serde_json::Value| {
        for k in [
            "indexing_s",
            "indexing_rate_pps",
            "peak_rss_bytes",
            "index_bytes_allocated",
            "index_rows_on_disk",
            "index_disk_bytes",
            "index_dir",
        ] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    };
    assert_eq!(
        strip(json(&rocescope_ok(&[
            "info",
            cap,
            "--json",
            "--index-dir",
            d
        ]))),
        strip(json(&rocescope_ok(&["info", cap, "--json"])))
    );
}

#[test]
fn a_stale_index_is_said_and_rebuilt() {
    let (folder, capture, dir) = resends("index-dir-stale");
    let (cap, d) = (s(&capture), s(&dir));
    let (kept, _) = info_kept(cap, d);
    assert_eq!(kept["reused"], false, "{kept}");
    let sub = std::path::PathBuf::from(kept["folder"].as_str().unwrap());
    assert!(sub.starts_with(&dir), "{kept}");
    let reused = || info_kept(cap, d).0["reused"] == true;
    assert!(reused());

    // Each damage: the one stale line, then an index that is reused again.
    let stale = |why: &str| {
        let (kept, err) = info_kept(cap, d);
        assert_eq!(kept["reused"], false, "{why}: {kept}");
        let line = format!("rocescope: index in {d} is stale: ");
        assert!(err.starts_with(&line), "{why}: {err}");
        assert!(err.contains(why), "{why}: {err}");
        assert!(err.trim_end().ends_with("; indexing again"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(reused(), "rebuilt after: {why}");
    };

    // Touched: the modification time moved on.
    let f = std::fs::File::options().write(true).open(&capture).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    f.set_modified(later).unwrap();
    drop(f);
    stale("was modified");

    // A damaged manifest, then a cut one.
    let manifest = sub.join("manifest");
    let mut bytes = std::fs::read(&manifest).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x40;
    std::fs::write(&manifest, &bytes).unwrap();
    stale("its manifest is damaged");
    let bytes = std::fs::read(&manifest).unwrap();
    std::fs::write(&manifest, &bytes[..bytes.len() - 3]).unwrap();
    stale("its manifest is damaged");

    // A rows file changed in place, then cut.
    let rows_file = || {
        std::fs::read_dir(&sub)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "seg"))
            .unwrap()
    };
    let rows = rows_file();
    let mut bytes = std::fs::read(&rows).unwrap();
    bytes[3 * 65_536 * 24 + 100] ^= 1;
    std::fs::write(&rows, &bytes).unwrap();
    stale("fails its checksum");
    let rows = rows_file();
    let f = std::fs::File::options().write(true).open(&rows).unwrap();
    let len = f.metadata().unwrap().len();
    f.set_len(len - 24).unwrap();
    drop(f);
    stale("bytes, not");
    let leftovers: Vec<_> = std::fs::read_dir(&sub).unwrap().flatten().collect();
    assert_eq!(leftovers.len(), 2, "a manifest and one rows file");

    // Other decode settings.
    let out = rocescope_ok(&[
        "info",
        cap,
        "--json",
        "--index-dir",
        d,
        "--roce-port",
        "4792",
    ]);
    assert_eq!(json(&out)["index_dir"]["reused"], false);
    rocescope_testkit::assert_contains(&text(&out.stderr), "other RoCE ports");

    // Frames appended: the file changed size, and the new frames are in.
    let more = folder.path().join("more.pcap");
    rocescope_replay::synth::write_resending_header_only_pcap(&more, FRAMES + 10, 1_000).unwrap();
    std::fs::copy(&more, &capture).unwrap();
    let out = rocescope_ok(&["info", cap, "--json", "--index-dir", d]);
    let v = json(&out);
    assert_eq!(v["packets"], FRAMES + 10);
    rocescope_testkit::assert_contains(&text(&out.stderr), "changed size");
}

#[test]
fn a_folder_that_cannot_hold_the_index_is_an_error_naming_it() {
    let folder = rocescope_testkit::temp_dir("index-dir-bad");
    let capture = folder.path().join("small.pcap");
    rocescope_replay::synth::write_resending_header_only_pcap(&capture, 1_000, 100).unwrap();
    // A file where the folder should be: not even root can make it.
    let not_a_dir = folder.path().join("plain-file");
    std::fs::write(&not_a_dir, b"x").unwrap();
    let out = rocescope(&["info", s(&capture), "--index-dir", s(&not_a_dir)]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    rocescope_testkit::assert_contains(
        &err,
        &format!("cannot keep the index in {} (--index-dir)", s(&not_a_dir)),
    );
    assert_eq!(err.matches("panicked").count(), 0, "{err}");
}

/// A simulator's recording (pcapng with records: ground truth, drops,
/// profiler samples): the records come back with the saved index, and the
/// analysis that reads them again finds what a fresh one finds.
#[test]
fn a_recordings_records_come_back_with_its_index() {
    let folder = rocescope_testkit::temp_dir("index-dir-records");
    let rec = folder.path().join("lossy.pcapng");
    support::record_sim("lossy-link", "2ms", &rec);
    let cap = s(&rec);
    let d = folder.path().join("indexes");
    let d = s(&d);
    let fresh_info = json(&rocescope_ok(&["info", cap, "--json"]));
    assert!(fresh_info["records"].as_u64().unwrap() > 0, "{fresh_info}");
    let fresh = rocescope_ok(&["stats", cap, "--json"]).stdout;
    rocescope_ok(&["stats", cap, "--json", "--index-dir", d]);
    let again = rocescope_ok(&["stats", cap, "--json", "--index-dir", d]);
    assert_eq!(text(&again.stderr), "");
    assert_eq!(again.stdout, fresh);
    let info = json(&rocescope_ok(&["info", cap, "--json", "--index-dir", d]));
    assert_eq!(info["index_dir"]["reused"], true, "{info}");
    assert_eq!(info["records"], fresh_info["records"]);
    assert_eq!(info["conversations"], fresh_info["conversations"]);
}

/// `open FILE --index-dir DIR` twice, the real binary in tmux: the second
/// workbench's status line says the index was reused, End reaches the
/// file's last packet, and `q` quits with status 0. Skipped where tmux is
/// missing, unless ROCESCOPE_REQUIRE_TMUX is set (as in .ci/run).
#[test]
fn the_workbench_says_the_index_was_reused() {
    use support::{tmux, wait_for};
    if !rocescope_testkit::available(&[rocescope_testkit::TMUX]) {
        return;
    }
    let (folder, capture, dir) = resends("index-dir-tmux");
    // The first open, as `stats` makes it: the RC analysis' verdicts on
    // the rows, as the workbench needs them, and the analysis itself.
    rocescope_ok(&["stats", s(&capture), "--index-dir", s(&dir)]);
    let args = format!("open {} --index-dir {}", capture.display(), dir.display());
    let (session, status_file) =
        support::rocescope_in_tmux_named("index-dir", folder.path(), (250, 40), &args);
    let screen = wait_for(&session, "index: reused from", 60);
    let reused = screen.contains(&format!("index: reused from {}", dir.display()));
    // The analysis `stats` kept came back with the rows.
    let analysis_too = screen.contains("the analysis too)");
    let (list_has_last, end) = support::end_shows_frame(&session, 200_000);
    tmux(&["send-keys", "-t", &session, "q"]);
    let status = support::exit_status(&session, &status_file, 20);
    assert!(reused, "{screen}");
    assert!(analysis_too, "{screen}");
    assert!(list_has_last, "{end}");
    assert_eq!(status, "0", "exit status");
}

//! `--max-memory` on the commands that open a capture file: with a cap far
//! below the capture's index, the real binary's output is the same as with
//! the whole index in memory (byte for byte where nothing measures time),
//! `info` says how much of the index is on disk, and the process stays
//! within the cap.
#![allow(clippy::unwrap_used)]

mod support;

use support::{arg as path_str, rocescope_ok, same_with_and_without, text};

/// 200,000 frames: three whole index chunks (of 65,536 rows) and part of
/// a fourth.
const FRAMES: u64 = 200_000;

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_tiny_cap_changes_nothing_the_commands_say_of_the_rows() {
    let folder = rocescope_testkit::temp_dir("file-memory-cli");
    let capture = folder.path().join("resends.pcap");
    rocescope_replay::synth::write_resending_header_only_pcap(&capture, FRAMES, 1_000).unwrap();
    let cap = path_str(&capture);
    let tiny = ["--max-memory", "1MiB"];

    let info = json(&rocescope_ok(
        &[&["info", cap, "--json"][..], &tiny].concat(),
    ));
    assert_eq!(info["packets"], FRAMES);
    assert_eq!(info["index_rows_on_disk"], 3 * 65_536, "{info}");
    assert!(info["index_disk_bytes"].as_u64().unwrap() >= 3 * 65_536 * 24);
    assert_eq!(info["max_memory_bytes"], 1 << 20);
    assert_eq!(info["index_spill_error"], serde_json::Value::Null);
    let whole = json(&rocescope_ok(&["info", cap, "--json"]));
    assert_eq!(whole["index_rows_on_disk"], 0);
    let text_out = text(&rocescope_ok(&[&["info", cap][..], &tiny].concat()).stdout);
    assert!(
        text_out.contains("index on disk   196608 of 200000 rows ("),
        "{text_out}"
    );

    // The RC analysis over every row and its JSON, every row exported,
    // SQL over every row: byte for byte.
    let stats = same_with_and_without(
        folder.path(),
        cap,
        &tiny,
        &["packets", "episodes"],
        "SELECT count(*) AS n, sum(psn) AS s FROM packets WHERE retransmission",
    );
    let v: serde_json::Value = serde_json::from_slice(&stats).unwrap();
    assert!(v.to_string().contains("retrans"), "{v}");
    let packets = std::fs::read_to_string(folder.path().join("with-packets.csv")).unwrap();
    assert_eq!(
        packets.lines().count() as u64,
        FRAMES + 1,
        "a header and every row"
    );
}

/// `open FILE --max-memory 1MiB`, the real binary in tmux: the workbench's
/// status line says how many rows of the index are on disk, End reaches
/// the file's last packet, and `q` quits with status 0. Skipped where tmux
/// is missing, unless ROCESCOPE_REQUIRE_TMUX is set (as in .ci/run).
#[test]
fn the_workbench_says_how_much_of_the_index_is_on_disk() {
    use support::{tmux, wait_for};
    if !rocescope_testkit::available(&[rocescope_testkit::TMUX]) {
        return;
    }
    let folder = rocescope_testkit::temp_dir("file-memory-tmux");
    let capture = folder.path().join("resends.pcap");
    rocescope_replay::synth::write_resending_header_only_pcap(&capture, FRAMES, 1_000).unwrap();
    let args = format!("open {} --max-memory 1MiB", capture.display());
    let (session, status_file) =
        support::rocescope_in_tmux_named("file-memory", folder.path(), (250, 40), &args);
    let screen = wait_for(&session, "200000 pkts", 60);
    assert!(screen.contains("200000 pkts"), "{screen}");
    assert!(screen.contains("196608 rows on disk ("), "{screen}");
    // The last frame's number in the list, read back from disk.
    let (list_has_last, end) = support::end_shows_frame(&session, 200_000);
    tmux(&["send-keys", "-t", &session, "q"]);
    let status = support::exit_status(&session, &status_file, 20);
    assert!(list_has_last, "{end}");
    assert_eq!(status, "0", "exit status");
}

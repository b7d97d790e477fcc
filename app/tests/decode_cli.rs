//! The real `rocescope` binary on real files: outputs, exit codes, bad input.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use support::{rocescope, rocescope_json, rocescope_ok, sample, sample_qp, tmp};

#[test]
fn no_arguments_decodes_the_bundled_sample() {
    let out = rocescope_ok(&[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.contains("RoCEv2")).count(),
        15,
        "{text}"
    );
    assert!(text.contains("NAK (PSN sequence error)"));
    assert!(text.contains("CNP QP=0x000011"));
    assert!(!text.contains("BAD"), "{text}");
}

#[test]
fn jsonl_has_one_object_per_frame_with_integer_fields() {
    let out = rocescope_ok(&["decode", sample().to_str().unwrap(), "--format", "jsonl"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 15);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["frame"], i + 1);
        assert_eq!(row["icrc"], "ok");
        assert!(row["infiniband.bth.psn"].is_u64());
    }
    assert_eq!(rows[0]["infiniband.reth.dmalen"], 4096);
    assert_eq!(rows[0]["infiniband.bth.a"], 1);
    assert_eq!(rows[3]["infiniband.aeth.syndrome"], 0x60);
    assert_eq!(rows[14]["infiniband.bth.opcode"], 0x81);
    assert_eq!(rows[14]["infiniband.bth.becn"], 1);
}

#[test]
fn shared_capture_decodes_with_tshark_values() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/captures/rxe-write-read.pcap");
    if !path.exists() {
        eprintln!("skipped: {} is absent", path.display());
        return;
    }
    let rows = support::decode_jsonl(&path);
    assert_eq!(rows.len(), 12);
    assert_eq!(rows[3]["infiniband.bth.psn"], 9209053);
    assert_eq!(rows[3]["infiniband.bth.destqp"], 17);
    assert_eq!(rows[3]["infiniband.reth.va"], 0x0000_aaab_09dd_5000u64);
    assert_eq!(rows[0]["infiniband.deth.srcqp"], 1);
    assert!(rows.iter().all(|r| r["icrc"] == "ok"));
}

#[test]
fn a_cut_file_keeps_every_whole_frame_and_warns_with_the_offset() {
    let bytes = std::fs::read(sample()).unwrap();
    let cut = tmp("cli", "cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 30]).unwrap();
    let out = rocescope_ok(&["decode", cut.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 14, "{text}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("warning") && err.contains("byte"), "{err}");
}

#[test]
fn a_file_that_is_not_a_capture_fails_in_one_line() {
    let junk = tmp("cli", "junk.pcap");
    std::fs::write(&junk, b"this is not a capture at all, just text\n").unwrap();
    let out = rocescope(&["decode", junk.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("rocescope:"), "{err}");
    let missing = rocescope(&["decode", "/nonexistent/x.pcap"]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8(missing.stderr)
            .unwrap()
            .contains("/nonexistent/x.pcap")
    );
}

#[test]
fn extra_roce_port() {
    rocescope_ok(&[
        "decode",
        sample().to_str().unwrap(),
        "--roce-port",
        "4792",
        "--format",
        "text",
    ]);
}

#[test]
fn info_summarises_through_the_store() {
    let v = rocescope_json(&["info", sample().to_str().unwrap(), "--json"]);
    assert_eq!(v["packets"], 15);
    assert_eq!(v["roce_packets"], 15);
    assert_eq!(v["conversations"], 2);
    assert_eq!(v["icrc_errors"], 0);
    assert_eq!(v["time_base"], "ns");
    assert_eq!(v["span_ns"], 21_400);
    assert!(v["indexing_rate_pps"].as_f64().unwrap() > 0.0);
    // The index a packet holds (24-byte rows), not a 15-row capture's
    // reserved room divided among 15 packets.
    assert_eq!(v["index_bytes_per_packet"], 24.0);
    assert!(v["index_bytes_allocated"].as_u64().unwrap() >= 15 * 24);

    let text = rocescope(&["info", sample().to_str().unwrap()]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("packets         15"), "{text}");
    assert!(text.contains("10.0.0.1 > 10.0.0.2 QP 0x000012"), "{text}");

    let junk = tmp("cli", "info-junk.pcap");
    std::fs::write(&junk, b"\x00\x01\x02\x03 not a capture").unwrap();
    let bad = rocescope(&["info", junk.to_str().unwrap()]);
    assert!(!bad.status.success());
    assert_eq!(
        String::from_utf8(bad.stderr)
            .unwrap()
            .trim()
            .lines()
            .count(),
        1
    );
}

#[test]
fn the_cards_converted_pcap_shows_ordinal_time() {
    // ts_sec = packet index, ts_usec = 0, snaplen 65535, Ethernet: what the
    // BALBOA host tool writes.
    let mut out = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for i in 0..5u32 {
        let f = rocescope_decoders::PacketBuilder::rocev2_ipv4(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            rocescope_decoders::Opcode::RC_WRITE_ONLY,
            7,
            i,
        )
        .build(&[0; 8]);
        for v in [i, 0, f.len() as u32, f.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&f);
    }
    let path = tmp("cli", "converted.pcap");
    std::fs::write(&path, out).unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&rocescope(&["info", path.to_str().unwrap(), "--json"]).stdout)
            .unwrap();
    assert_eq!(v["time_base"], "ordinal");
    assert!(v["span_ns"].is_null());
    let text = String::from_utf8(rocescope(&["info", path.to_str().unwrap()]).stdout).unwrap();
    assert!(text.contains("ordinal"), "{text}");
    let decoded = String::from_utf8(rocescope(&["decode", path.to_str().unwrap()]).stdout).unwrap();
    assert!(decoded.lines().nth(2).unwrap().contains("#2"), "{decoded}");
    // Packet numbers are no times: `stats` accounts none by state.
    let v: serde_json::Value =
        serde_json::from_slice(&rocescope(&["stats", path.to_str().unwrap(), "--json"]).stdout)
            .unwrap();
    let q = &v["qps"][0];
    assert_eq!(q["requests"], 5, "{v}");
    assert!(
        q["time_by_state_ns"].is_null() && q["span_ns"].is_null(),
        "{q}"
    );
    let text = String::from_utf8(rocescope(&["stats", path.to_str().unwrap()]).stdout).unwrap();
    assert!(text.contains("time by state: none"), "{text}");
}

#[test]
fn stats_reports_the_rc_analysis() {
    let v = rocescope_json(&["stats", sample().to_str().unwrap(), "--json"]);
    let q = sample_qp(&v, "10.0.0.1", "10.0.0.2");
    assert_eq!(q["naks"]["psn_seq_err"], 1);
    assert_eq!(q["capture_loss_packets"], 0);
    assert_eq!(v["counters"]["packet_seq_err"], 1);
    assert_eq!(v["counters"]["np_cnp_sent"], 1);
    assert_eq!(v["episodes"][0]["first_frame"], 4);

    let text = String::from_utf8(rocescope(&["stats", sample().to_str().unwrap()]).stdout).unwrap();
    let episode: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "retransmission episodes:")
        .nth(2)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        episode,
        [
            "4", "0x000012", "NAK", "101", "3", "3.0", "KiB", "5.1", "µs"
        ],
        "{text}"
    );
}

/// `stats` as text fits an 80-column terminal with whole headings, and
/// counts in the number they take.
#[test]
fn stats_text_fits_80_columns_with_whole_headings() {
    let out = rocescope_ok(&["stats", sample().to_str().unwrap()]);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // The tables, after the first line (the file's name as given) and
    // before the diagnosis (sentences).
    for line in text
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("diagnosis"))
    {
        assert!(
            line.chars().count() <= 80,
            "{} wide: {line}",
            line.chars().count()
        );
    }
    rocescope_testkit::assert_contains(&text, ": 15 packets, 15 RoCE, 1 QP conversation\n");
    let heading: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("QP "))
        .take(1)
        .flat_map(|l| l.split_whitespace())
        .collect();
    assert_eq!(
        heading,
        [
            "QP", "packets", "resent", "episodes", "NAKs", "CNPs", "loss", "at", "end", "p50"
        ],
        "{text}"
    );
    for cut in ["episod ", "cap.los", "outst "] {
        assert!(!text.contains(cut), "{cut:?} in {text}");
    }
    // The QP's numbers, then its route.
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("0x000012"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        row[..8],
        ["0x000012", "15", "3", "1", "1", "1", "0", "0"],
        "{text}"
    );
    assert!(
        text.contains("0x000012 ") && text.contains("\n  10.0.0.1 > 10.0.0.2\n"),
        "{text}"
    );
}

#[test]
fn decode_shows_the_analysis_flags() {
    let rows = support::decode_jsonl(&sample());
    support::sample_flags(&rows);
    assert!(rows.iter().all(|r| r["rocescope.conversation"] == 0));
    let text =
        String::from_utf8(rocescope(&["decode", sample().to_str().unwrap()]).stdout).unwrap();
    assert!(
        text.lines().nth(5).unwrap().ends_with("[Retransmission]"),
        "{text}"
    );
}

#[test]
fn readme_lists_every_key_binding() {
    let readme = support::user_docs();
    for c in rocescope_core::UiCommand::ALL {
        let line = format!("| `{}` | {} |", c.key(), c.description());
        assert!(
            readme.contains(&line),
            "README.md lacks the key line: {line}"
        );
    }
}

/// The ladder the README shows is the one the snapshot test renders today.
#[test]
fn readme_ladder_is_the_snapshot() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = support::user_docs();
    let snap = std::fs::read_to_string(
        root.join("src/tui/snapshots/rocescope__tui__tests__view_ladder.snap"),
    )
    .unwrap();
    let shown: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with("The ladder of the bundled sample"))
        .skip_while(|l| *l != "```")
        .skip(1)
        .take_while(|l| *l != "```")
        .collect();
    assert!(shown.len() > 5, "README.md shows no ladder");
    let rendered: Vec<&str> = snap.lines().skip_while(|l| *l != "---").skip(1).collect();
    let rendered: Vec<&str> = rendered
        .into_iter()
        .skip_while(|l| *l != "---")
        .skip(1)
        .collect();
    assert_eq!(
        shown,
        rendered[..shown.len()],
        "README.md's ladder is stale"
    );
}

/// `decode --to -` streams the pcapng on standard output (its summary on
/// stderr), and a pipe or device is written straight: renaming the
/// `.partial` file over `/dev/full` replaced the device with a file, and
/// the disk-full error was never seen.
#[test]
fn decode_to_stdout_or_a_device_writes_straight() {
    let sample = sample();
    let decode_to = |to: &str| rocescope(&["decode", sample.to_str().unwrap(), "--to", to]);
    let o = decode_to("-");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("15 frames written to -"), "{err}");
    // The bytes are a pcapng of the 15 frames: read back by our reader.
    let mut r = rocescope_replay::CaptureReader::new(&o.stdout[..]).unwrap();
    let mut frames = 0;
    while r.next_frame().unwrap().is_some() {
        frames += 1;
    }
    assert_eq!(frames, 15);
    // The same bytes as a file target gets.
    let to_file = tmp("decode-to", "as-file.pcapng");
    let o2 = decode_to(to_file.to_str().unwrap());
    assert!(o2.status.success(), "{}", support::text(&o2.stderr));
    let stdout = support::text(&o2.stdout);
    assert!(stdout.contains("15 frames written to"), "{stdout}");
    assert_eq!(std::fs::read(&to_file).unwrap(), o.stdout);
    if Path::new("/dev/full").exists() {
        let o = decode_to("/dev/full");
        let err = support::text(&o.stderr);
        assert!(!o.status.success(), "{err}");
        assert!(err.contains("No space left on device"), "{err}");
        let kind = std::fs::metadata("/dev/full").unwrap().file_type();
        assert!(!kind.is_file(), "/dev/full is still a device");
    }
    // A folder is refused, naming it.
    let dir = tmp("decode-to", "");
    let o = decode_to(dir.to_str().unwrap());
    let err = support::text(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("a folder; name the pcapng file"), "{err}");
}

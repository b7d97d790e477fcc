//! `rocescope whatif` as the real binary runs it (issue 52), on recordings
//! made by `rocescope sim --record`: the twin holds and the change shows
//! in the JSON; the derived scenario runs again in `sim`; a twin that does
//! not hold is refused naming the QP and why; bad `--set`s and captures
//! with nothing to model are errors that say so; `stats --json` gives the
//! goodput the what-if compares by.
#![allow(clippy::unwrap_used)]

mod support;
use support::rocescope_outcome as rocescope;

use std::path::Path;

use serde_json::Value;

/// A 2 ms recording of `scenario` in its own folder, and
/// `whatif CAP --set window_packets=32 --json --export-scenario TOML` on it,
/// which succeeds with a twin that matches the capture (no mismatches).
struct Twin {
    _tmp: rocescope_testkit::TempDir,
    cap: String,
    toml: std::path::PathBuf,
    /// The JSON, and the text it was read from.
    v: Value,
    out: String,
}

fn twin_holds(folder: &str, scenario: &str) -> Twin {
    let tmp = rocescope_testkit::temp_dir(folder);
    let cap = record(tmp.path(), scenario, "2ms");
    let toml = tmp.path().join("twin.toml");
    let (ok, out, err) = rocescope(&[
        "whatif",
        &cap,
        "--set",
        "window_packets=32",
        "--json",
        "--export-scenario",
        toml.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["mismatches"].as_array().unwrap().len(), 0, "{out}");
    Twin {
        _tmp: tmp,
        cap,
        toml,
        v,
        out,
    }
}

fn record(dir: &Path, scenario: &str, duration: &str) -> String {
    let path = dir.join(format!("{scenario}.pcapng"));
    support::record_sim(scenario, duration, &path);
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_recording_s_twin_holds_and_a_larger_window_is_predicted() {
    let Twin { cap, toml, v, .. } = &twin_holds("whatif", "window-stall");
    let (c, t, ch) = (
        &v["capture"]["qps"][0],
        &v["twin"]["qps"][0],
        &v["changed"]["qps"][0],
    );
    for q in [c, t, ch] {
        assert_eq!(q["src_ip"], "10.0.0.1");
        assert_eq!(q["dst_ip"], "10.0.0.2");
        assert_eq!(q["dest_qp"], 0x100);
        assert!(q["episodes_by_cause"].is_object());
        assert!(q["time_by_state_ns"]["window_full"].is_u64());
    }
    let g = |q: &Value| q["goodput_gbytes_s"].as_f64().unwrap();
    // The twin within 5% of the capture; twice the window on a long link
    // nearly doubles it.
    assert!((g(t) / g(c) - 1.0).abs() < 0.05, "{} {}", g(t), g(c));
    assert!(g(ch) > 1.6 * g(t), "{} {}", g(ch), g(t));
    // stats --json gives the same goodput for the capture.
    let (ok, stats, err) = rocescope(&["stats", cap, "--json"]);
    assert!(ok, "{err}");
    let s: Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(s["qps"][0]["goodput_gbytes_s"].as_f64(), Some(g(c)));
    // The exported twin runs in `sim` as it is.
    let (ok, out, err) = rocescope(&["sim", "--scenario", toml.to_str().unwrap(), "--headless"]);
    assert!(ok, "{err}");
    assert!(out.contains("QPs 1"), "{out}");
    // The text names the QP and each run.
    let (ok, out, err) = rocescope(&["whatif", cap, "--set", "window_packets=32"]);
    assert!(ok, "{err}");
    for s in [
        "QP 0x100 10.0.0.1 -> 10.0.0.2",
        "capture",
        "twin",
        "changed",
        "window_full",
    ] {
        assert!(out.contains(s), "{s}: {out}");
    }
}

/// A capture paused by PFC frames from traffic it does not carry: the
/// pauses are replayed as seen, so the twin holds and the exported scenario
/// carries them.
#[test]
fn a_capture_s_pfc_pauses_are_replayed_and_its_twin_holds() {
    let Twin {
        cap, toml, v, out, ..
    } = &twin_holds("whatif-pfc", "pfc");
    let paused = |run: &str| {
        v[run]["qps"][0]["time_by_state_ns"]["paused"]
            .as_u64()
            .unwrap()
    };
    assert!(paused("capture") > 0, "{out}");
    assert!(paused("twin") > 0, "{out}");
    let exported = std::fs::read_to_string(toml).unwrap();
    assert!(
        exported.contains("[[pause]]") && exported.contains("quanta = "),
        "{exported}"
    );
    // Without PFC the switch sends no pauses: the QP runs unpaused.
    let (ok, out, err) = rocescope(&["whatif", cap, "--set", "pfc_enabled=0", "--json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["changed"]["qps"][0]["time_by_state_ns"]["paused"].as_u64(),
        Some(0),
        "{out}"
    );
}

#[test]
fn a_twin_that_does_not_hold_is_refused_naming_the_qp_and_why() {
    let tmp = rocescope_testkit::temp_dir("whatif-rnr");
    let cap = record(tmp.path(), "rnr", "2ms");
    let (ok, out, err) = rocescope(&["whatif", &cap, "--set", "window_packets=32"]);
    assert!(!ok, "a refusal fails: {out}");
    assert!(out.contains("no prediction"), "{out}");
    assert!(
        out.contains("QP 0x100") && out.contains("rnr_wait"),
        "{out}"
    );
    assert!(!out.contains("changed   "), "no changed run shown: {out}");
    assert!(
        err.contains("no prediction") && err.contains("QP 0x100"),
        "{err}"
    );
    let (ok, out, _) = rocescope(&["whatif", &cap, "--json"]);
    assert!(!ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["changed"].is_null(), "{out}");
    assert!(!v["mismatches"].as_array().unwrap().is_empty());
}

#[test]
fn bad_sets_and_captures_with_nothing_to_model_are_told() {
    let tmp = rocescope_testkit::temp_dir("whatif-bad");
    let cap = record(tmp.path(), "teaching-basic", "100us");
    for (set, says) in [
        ("window=32", "unknown key `window`"),
        ("window_packets=0", "impossible"),
        ("window_packets", "expected KEY=VALUE"),
    ] {
        let (ok, _, err) = rocescope(&["whatif", &cap, "--set", set]);
        assert!(!ok, "{set}");
        assert!(err.contains(says) && err.contains("valid keys"), "{err}");
        assert!(err.contains("window_packets"), "{err}");
    }
    let empty = tmp.path().join("empty.pcap");
    std::fs::write(
        &empty,
        rocescope_testkit::pcap_bytes(1, Vec::<(u64, Vec<u8>)>::new()),
    )
    .unwrap();
    let (ok, _, err) = rocescope(&["whatif", empty.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("no RoCE requester QP"), "{err}");
    // Two WRITEs 60 ms apart: longer than the what-if reruns.
    let write = |psn| {
        rocescope_decoders::PacketBuilder::rocev2_ipv4(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            rocescope_decoders::Opcode::RC_WRITE_ONLY,
            7,
            psn,
        )
        .build(&[0; 64])
    };
    let long = tmp.path().join("long.pcap");
    std::fs::write(
        &long,
        rocescope_testkit::pcap_bytes(1, [(0, write(1)), (60_000, write(2))]),
    )
    .unwrap();
    let (ok, _, err) = rocescope(&["whatif", long.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("spans 60.0 ms") && err.contains("at most 50 ms"),
        "{err}"
    );
    // The way on, as printed: editcap's window from the first frame.
    let long = long.to_str().unwrap();
    let cut_cmd = format!("editcap -A 0.000000000 -B 0.050000000 {long} cut.pcapng");
    assert!(err.contains(&cut_cmd), "{err}");
    if rocescope_testkit::available(&[rocescope_testkit::EDITCAP]) {
        let words: Vec<&str> = cut_cmd.split_whitespace().collect();
        let cut = std::process::Command::new(words[0])
            .args(&words[1..])
            .current_dir(tmp.path())
            .status()
            .unwrap();
        assert!(cut.success(), "{cut_cmd}");
        let cut = tmp.path().join("cut.pcapng");
        let (ok, out, err) = rocescope(&["info", cut.to_str().unwrap(), "--json"]);
        assert!(ok, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["packets"], 1, "the first 50 ms: {out}");
    }
    let (ok, _, err) = rocescope(&["whatif", "no-such-file.pcap"]);
    assert!(!ok);
    assert!(err.contains("no-such-file.pcap"), "{err}");
}

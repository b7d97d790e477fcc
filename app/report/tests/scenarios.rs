//! A report for every shipped scenario (simulated, recorded as pcapng, read
//! back as any capture is) and for the bundled sample capture: the page
//! names every QP and finding, and every image it links exists, decodes and
//! shows more than a blank canvas.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::Report;
use rocescope_replay::PcapngWriter;
use rocescope_replay::store::{RcAnalyzer, Store};
use rocescope_report::{Input, Written};
use rocescope_sim::{Scenario, Simulator};

/// Simulated time per scenario: enough for episodes in the lossy ones,
/// short enough for a debug build.
const DURATION_NS: u64 = 1_000_000;

fn out_dir(name: &str) -> PathBuf {
    rocescope_testkit::out_dir("report", name)
}

/// Record `name` to a pcapng file, as `rocescope sim --record` does.
fn record(name: &str, dir: &Path) -> PathBuf {
    let mut sc = Scenario::builtin(name).unwrap();
    sc.duration_ns = sc.duration_ns.min(DURATION_NS);
    let path = dir.join(format!("{name}.pcapng"));
    if let Err(e) = Simulator::new(sc).record_to(&path) {
        panic!("{name}: {e}");
    }
    path
}

fn analyse(capture: &Path) -> (std::sync::Arc<Store>, Report) {
    let analysis = RcAnalyzer::default();
    let store = Store::open(capture, DecodeConfig::default(), Box::new(analysis.clone())).unwrap();
    store.wait();
    let report = analysis.0.lock().unwrap().report();
    (store, report)
}

/// PNG width and height from its IHDR, after checking the signature; and
/// the number of distinct colours in its pixels.
fn check_png(path: &Path) -> (u32, u32, usize) {
    let bytes = std::fs::read(path).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{}: not a PNG",
        path.display()
    );
    assert_eq!(&bytes[12..16], b"IHDR", "{}", path.display());
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; dec.output_buffer_size().unwrap()];
    let info = dec.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (w, h));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let colours: HashSet<&[u8]> = buf[..info.buffer_size()].chunks_exact(3).collect();
    (w, h, colours.len())
}

fn check_svg(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let t = text.trim();
    assert!(
        t.starts_with("<svg") || t.starts_with("<?xml"),
        "{}",
        path.display()
    );
    assert!(t.ends_with("</svg>"), "{}", path.display());
    assert_eq!(
        t.matches("<svg").count(),
        t.matches("</svg>").count(),
        "{}",
        path.display()
    );
    assert!(t.contains("<text"), "{}: no text", path.display());
    let shapes = ["<path", "<polyline", "<rect", "<line", "<polygon"]
        .iter()
        .map(|s| t.matches(s).count())
        .sum::<usize>();
    assert!(shapes >= 5, "{}: {shapes} shapes", path.display());
}

/// Everything a report must hold, whatever the capture.
fn check(name: &str, report: &Report, written: &Written, ordinal: bool) {
    let html = std::fs::read_to_string(&written.index_html).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{name}");
    assert!(html.trim_end().ends_with("</html>"), "{name}");
    assert!(
        !html.contains("<script"),
        "{name}: the page needs no script"
    );
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "{name}: nothing fetched"
    );
    for q in &report.qps {
        let qp = format!("QP 0x{:06x}", q.dest_qp);
        assert!(html.contains(&qp), "{name}: {qp} missing from the page");
    }
    for f in &report.findings {
        let text = f
            .text
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;");
        assert!(html.contains(&text), "{name}: finding missing: {}", f.text);
    }
    if report.episodes.is_empty() {
        assert!(html.contains("No retransmission episodes"), "{name}");
    }

    let dir = written.index_html.parent().unwrap();
    let mut expect = Vec::new();
    if !report.qps.is_empty() {
        expect.extend(["throughput", "window"]);
    }
    if !report.episodes.is_empty() || !report.findings.is_empty() {
        expect.push("episodes");
    }
    if !report.episodes.is_empty() {
        expect.push("ladder");
    }
    if !ordinal && report.qps.iter().any(|q| !q.rtt_histogram.is_empty()) {
        expect.push("rtt");
    }
    let linked: Vec<&PathBuf> = written.images.iter().collect();
    assert_eq!(linked.len(), expect.len() * 2, "{name}: {linked:?}");
    for plot in expect {
        let png = dir.join(format!("{plot}.png"));
        let svg = dir.join(format!("{plot}.svg"));
        assert!(
            written.images.contains(&png),
            "{name}: {plot}.png not written"
        );
        assert!(
            html.contains(&format!("src=\"{plot}.png\"")),
            "{name}: {plot}.png not on the page"
        );
        assert!(html.contains(&format!("href=\"{plot}.svg\"")), "{name}");
        let (w, h, colours) = check_png(&png);
        assert!(w >= 600 && h >= 200, "{name}: {plot}.png is {w}x{h}");
        // White, text and grid alone give a handful; a drawn plot, with
        // antialiased text and coloured lines, many more.
        assert!(colours > 20, "{name}: {plot}.png has {colours} colours");
        let size = std::fs::metadata(&png).unwrap().len();
        assert!(size > 4_000, "{name}: {plot}.png is {size} bytes");
        check_svg(&svg);
    }
}

fn scenario(name: &str) {
    let dir = out_dir(name);
    let capture = record(name, &dir);
    let (store, report) = analyse(&capture);
    assert!(!report.qps.is_empty(), "{name}: no QP");
    let written = rocescope_report::write(
        &Input {
            name: &capture.display().to_string(),
            store: &store,
            report: &report,
            points: None,
        },
        &dir.join("report"),
    )
    .unwrap();
    check(name, &report, &written, false);
    eprintln!(
        "{name}: {} QPs, {} episodes, {} findings -> {}",
        report.qps.len(),
        report.episodes.len(),
        report.findings.len(),
        written.index_html.display()
    );
}

/// One test per shipped scenario, so they run in parallel; this list must
/// name them all.
const SCENARIOS: [&str; 13] = [
    "aes",
    "dcqcn",
    "default",
    "dpi-drop",
    "host-stall",
    "incast",
    "line-rate",
    "lossy-link",
    "pfc",
    "read-heavy",
    "rnr",
    "teaching-basic",
    "window-stall",
];

#[test]
fn every_shipped_scenario_has_a_test() {
    let mut shipped = Scenario::builtin_names();
    shipped.sort_unstable();
    assert_eq!(shipped, SCENARIOS);
}

macro_rules! scenario_tests {
    ($($test:ident => $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                scenario($name);
            }
        )*
    };
}

scenario_tests! {
    report_aes => "aes",
    report_dcqcn => "dcqcn",
    report_default => "default",
    report_dpi_drop => "dpi-drop",
    report_host_stall => "host-stall",
    report_incast => "incast",
    report_line_rate => "line-rate",
    report_lossy_link => "lossy-link",
    report_pfc => "pfc",
    report_read_heavy => "read-heavy",
    report_rnr => "rnr",
    report_teaching_basic => "teaching-basic",
    report_window_stall => "window-stall",
}

#[test]
fn report_of_the_bundled_sample_capture() {
    let capture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/captures/sample-write-read.pcap");
    let dir = out_dir("sample");
    let written = rocescope_report::from_file(&capture, DecodeConfig::default(), &dir).unwrap();
    let (store, report) = analyse(&capture);
    let ordinal = store.time_base() == rocescope_replay::TimeBase::Ordinal;
    check("sample", &report, &written, ordinal);
    let html = std::fs::read_to_string(&written.index_html).unwrap();
    assert!(html.contains("sample-write-read.pcap"));
    // The sample's NAK episode is the ladder.
    assert!(!report.episodes.is_empty());
    assert!(html.contains("NAK (PSN sequence error)"), "{html}");
}

#[test]
fn an_empty_capture_gets_a_page_that_says_so() {
    let dir = out_dir("empty");
    let capture = dir.join("empty.pcapng");
    PcapngWriter::new(std::fs::File::create(&capture).unwrap())
        .unwrap()
        .finish()
        .unwrap();
    let written = rocescope_report::from_file(&capture, DecodeConfig::default(), &dir).unwrap();
    assert!(written.images.is_empty(), "{:?}", written.images);
    let html = std::fs::read_to_string(&written.index_html).unwrap();
    assert!(html.contains("No RoCE queue pair"), "{html}");
    assert!(html.contains("No retransmission episodes"), "{html}");
    assert!(html.contains("No RoCE QP traffic to plot"), "{html}");
}

#[test]
fn a_file_that_is_not_a_capture_is_an_error_not_a_page() {
    let dir = out_dir("not-a-capture");
    let file = dir.join("notes.txt");
    std::fs::write(&file, "these are not packets\n").unwrap();
    let err =
        rocescope_report::from_file(&file, DecodeConfig::default(), &dir.join("out")).unwrap_err();
    assert!(!err.to_string().is_empty());
    assert!(!dir.join("out").join("index.html").exists());
}

/// The sample rewritten as the card's converted pcap: microsecond magic,
/// `ts_sec` the packet index and `ts_usec` 0.
fn ordinal_copy_of_the_sample(path: &Path) {
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/captures/sample-write-read.pcap");
    let mut b = std::fs::read(sample).unwrap();
    b[0..4].copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    let mut at = 24;
    let mut i = 0u32;
    while at + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        b[at..at + 4].copy_from_slice(&i.to_le_bytes());
        b[at + 4..at + 8].copy_from_slice(&0u32.to_le_bytes());
        at += 16 + incl;
        i += 1;
    }
    std::fs::write(path, b).unwrap();
}

#[test]
fn an_ordinal_capture_counts_frames_and_claims_no_times() {
    let dir = out_dir("ordinal");
    let capture = dir.join("card.pcap");
    ordinal_copy_of_the_sample(&capture);
    let (store, report) = analyse(&capture);
    assert_eq!(store.time_base(), rocescope_replay::TimeBase::Ordinal);
    let written =
        rocescope_report::from_file(&capture, DecodeConfig::default(), &dir.join("report"))
            .unwrap();
    check("ordinal", &report, &written, true);
    let html = std::fs::read_to_string(&written.index_html).unwrap();
    assert!(html.contains("ordinal"), "{html}");
    assert!(html.contains("no round trip can be measured"), "{html}");
    // The format says "pcap (µs, ...)"; nothing else may speak of time.
    assert!(
        !html.replace("pcap (µs", "").contains("µs"),
        "an ordinal capture has no durations: {html}"
    );
    let svg = std::fs::read_to_string(dir.join("report").join("throughput.svg")).unwrap();
    assert!(svg.contains("frame index"));
}

#[test]
fn a_long_timeout_episode_shows_its_silence_and_elides_its_middle() {
    // A wide window on a lossy link: a loss at the end of the window is
    // only recovered by the timer, and the resend is longer than the
    // ladder shows whole.
    let mut sc = Scenario::builtin("lossy-link").unwrap();
    sc.duration_ns = 3_000_000;
    sc.set("window_packets", "64").unwrap();
    let dir = out_dir("long-episode");
    let capture = dir.join("long.pcapng");
    Simulator::new(sc).record_to(&capture).unwrap();
    let written =
        rocescope_report::from_file(&capture, DecodeConfig::default(), &dir.join("report"))
            .unwrap();
    let (_, report) = analyse(&capture);
    check("long-episode", &report, &written, false);
    let svg = std::fs::read_to_string(dir.join("report").join("ladder.svg")).unwrap();
    assert!(
        svg.contains("frames of this QP not shown"),
        "no elided middle"
    );
    assert!(
        svg.contains("of silence"),
        "the timer's silence is not marked"
    );
}

//! The page: one self-contained HTML file (inline CSS, no script, nothing
//! fetched), written for a reader who was not at the keyboard.

use std::fmt::Write;

use rocescope_replay::text::{naks, size_text};

use crate::plots::Section;
use crate::tables::{episodes, findings, qp_table, time_by_state};
use crate::view::View;

const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', Ubuntu, sans-serif; color: #222;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { margin-bottom: 0.1em; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
.sub { color: #666; margin-top: 0; }
.verdict { font-size: 1.1em; background: #f4f7fb; border-left: 4px solid #1f77b4; padding: 0.6em 1em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
.wide { overflow-x: auto; }
th, td { padding: 0.25em 0.6em; border-bottom: 1px solid #e6e6e6; text-align: left; vertical-align: top; }
td { white-space: nowrap; }
td.wrap { white-space: normal; min-width: 24em; }
table.kv td { white-space: normal; }
th { background: #f6f6f6; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { background: none; font-weight: normal; color: #555; }
.bad { color: #b21f1f; font-weight: 600; }
.muted { color: #777; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #444; margin-top: 0.3em; }
code { background: #f3f3f3; padding: 0 0.2em; }
.bar { display: flex; width: 480px; height: 14px; border: 1px solid #ccc; }
.bar span { display: block; height: 100%; }
.key { display: inline-block; width: 0.9em; height: 0.9em; margin: 0 0.25em 0 0.8em; vertical-align: middle; }
@media print { nav { display: none; } h2 { page-break-before: auto; } figure { page-break-inside: avoid; } }
";

/// Text made safe for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub fn page(view: &View<'_>, sections: &[Section]) -> String {
    let mut h = String::with_capacity(64 * 1024);
    let name = escape(view.name);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>rocescope report: {name}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>RoCE capture report</h1>\n<p class=\"sub\"><code>{name}</code> &middot; rocescope {}</p>\n",
        env!("CARGO_PKG_VERSION")
    );
    verdict(&mut h, view);
    h.push_str(
        "<p>How to read this: RoCE moves RDMA over UDP; each <em>queue pair</em> (QP) is one \
         reliable connection, requests flowing from the requester to the responder and ACKs \
         (or READ data) flowing back. When a packet is lost the responder answers with a NAK, or \
         the requester's timer fires, and the requester resends everything from the lost packet \
         on (Go-Back-N): a <em>retransmission episode</em>. The findings say where throughput \
         dropped and why; the plots show the same over time.</p>\n\
         <nav><a href=\"#summary\">Summary</a><a href=\"#qps\">Queue pairs</a>\
         <a href=\"#time\">Time by state</a><a href=\"#findings\">Findings</a><a href=\"#episodes\">Episodes</a>",
    );
    if view.points.is_some() {
        h.push_str("<a href=\"#points\">Capture points</a>");
    }
    h.push_str("<a href=\"#plots\">Plots</a></nav>\n");
    summary(&mut h, view);
    qp_table(&mut h, view);
    time_by_state(&mut h, view);
    findings(&mut h, view);
    episodes(&mut h, view);
    if view.points.is_some() {
        points(&mut h, view);
    }
    plots(&mut h, sections);
    h.push_str(
        "<p class=\"muted\">Made by <code>rocescope report</code>. Counters are named as mlx5 \
         and rxe name them where the meaning matches; <code>rocescope stats --json</code> gives \
         the same analysis as JSON.</p>\n</body>\n</html>\n",
    );
    h
}

/// The one-paragraph answer first.
fn verdict(h: &mut String, view: &View<'_>) {
    let r = view.report;
    let mut s = format!(
        "{} ({} RoCE) in {}",
        plural(view.stats.packets, "packet", "packets"),
        view.stats.roce_packets,
        plural(r.qps.len() as u64, "queue pair", "queue pairs"),
    );
    if !view.time.ordinal
        && let (Some(a), Some(b)) = (view.stats.first_ts_ns, view.stats.last_ts_ns)
    {
        let _ = write!(s, " over {}", view.duration(b.saturating_sub(a)));
    }
    s.push_str(". ");
    if r.episodes.is_empty() {
        s.push_str("No retransmission episodes");
    } else {
        let _ = write!(
            s,
            "{} resent {}",
            plural(
                r.episodes.len() as u64,
                "retransmission episode",
                "retransmission episodes"
            ),
            plural(r.counters.retransmitted_packets, "packet", "packets")
        );
    }
    s.push_str("; ");
    if r.findings.is_empty() {
        s.push_str(rocescope_replay::text::NO_FINDINGS);
        s.push('.');
    } else {
        let _ = write!(
            s,
            "{} explained (see Findings).",
            plural(
                r.findings.len() as u64,
                "throughput drop",
                "throughput drops"
            )
        );
    }
    let _ = writeln!(h, "<p class=\"verdict\">{}</p>", escape(&s));
}

fn summary(h: &mut String, view: &View<'_>) {
    let st = &view.stats;
    let c = &view.report.counters;
    h.push_str("<h2 id=\"summary\">Summary</h2>\n<table class=\"kv\">\n");
    let mut row = |k: &str, v: String| {
        let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", escape(k), v);
    };
    row("File", format!("<code>{}</code>", escape(view.name)));
    row("Format", escape(&view.format));
    row(
        "Packets",
        format!("{} ({} on the wire)", st.packets, size_text(st.wire_bytes)),
    );
    row("RoCE packets", st.roce_packets.to_string());
    row("Queue pairs", view.report.qps.len().to_string());
    row(
        "Time span",
        match (view.time.ordinal, st.first_ts_ns, st.last_ts_ns) {
            (true, _, _) => "ordinal: the card's converted capture numbers its packets and has no \
                             times, so no rate or latency is derived"
                .to_owned(),
            (false, Some(a), Some(b)) => escape(&view.duration(b.saturating_sub(a))),
            _ => "no packets".to_owned(),
        },
    );
    let flag = |n: u64, what: &str| {
        if n > 0 {
            format!("<span class=\"bad\">{n}</span> {}", escape(what))
        } else {
            format!("0 <span class=\"muted\">{}</span>", escape(what))
        }
    };
    row(
        "ICRC errors",
        flag(
            st.icrc_errors,
            "(frames whose invariant CRC did not verify)",
        ),
    );
    // Not marked as a problem: the card's sniffer and header-only
    // captures cut every frame on purpose.
    row(
        "Truncated frames",
        format!(
            "{} <span class=\"muted\">(captured shorter than on the wire; usual for \
             header-only captures)</span>",
            st.truncated
        ),
    );
    row(
        "Capture loss",
        flag(
            c.capture_loss_packets,
            "packets the capture missed (the endpoints saw them; the capture did not)",
        ),
    );
    if st.malformed > 0 {
        row("Malformed frames", flag(st.malformed, ""));
    }
    if st.undecoded > 0 {
        row(
            "Undecoded frames",
            flag(st.undecoded, "(a link type rocescope does not decode)"),
        );
    }
    row(
        "Retransmitted",
        format!(
            "{} ({})",
            plural(c.retransmitted_packets, "packet", "packets"),
            size_text(c.retransmitted_bytes)
        ),
    );
    row("NAKs", naks(c).to_string());
    row(
        "Congestion",
        format!(
            "{} CNPs, {} ECN-marked packets",
            c.np_cnp_sent, c.np_ecn_marked_roce_packets
        ),
    );
    h.push_str("</table>\n");
    if let Some(e) = &view.index_error {
        let _ = writeln!(
            h,
            "<p class=\"bad\">Reading stopped early: {}. Everything before that point is in this report.</p>",
            escape(e)
        );
    }
    if !view.warnings.is_empty() {
        h.push_str("<p>Warnings while reading the capture:</p>\n<ul>\n");
        for w in view.warnings.iter().take(50) {
            let _ = writeln!(h, "<li>{}</li>", escape(w));
        }
        if view.warnings.len() > 50 {
            let _ = writeln!(h, "<li>… {} more</li>", view.warnings.len() - 50);
        }
        h.push_str("</ul>\n");
    }
}

/// Losses and NAK episodes the page lists (the rest counted).
const MAX_POINT_ROWS: usize = 200;

/// The capture points of the same traffic: their clocks, each segment's
/// one-way latency, where frames were lost, Lumina's latencies per NAK.
fn points(h: &mut String, view: &View<'_>) {
    use rocescope_replay::text::{
        EPISODE_TIMES_COLUMNS, LOSS_COLUMNS, POINT_COLUMNS, SEGMENT_COLUMNS, episode_times_cells,
        loss_cells, losses_by_segment, point_cells, rel_time_text, segment_cells,
    };
    let Some(r) = view.points else {
        return;
    };
    h.push_str("<h2 id=\"points\">Capture points</h2>\n");
    let first = r.points.first().map_or("?", |p| p.name.as_str());
    let _ = writeln!(
        h,
        "<p>The same traffic seen at {} points, in path order. Each point's clock is read \
         against {}'s (offset and drift, from frames seen at both in both directions, a frame's \
         serialisation at the link rate taken out); each frame is followed from point to point by \
         its content. A frame missing at a point it went past is that point's capture loss, not \
         a loss on the wire; one that vanished after a point was lost on the next segment.</p>",
        r.points.len(),
        escape(first)
    );
    let table = |h: &mut String, head: &[&str], rows: Vec<Vec<String>>| {
        h.push_str("<div class=\"wide\"><table>\n<tr>");
        for c in head {
            let _ = write!(h, "<th>{}</th>", escape(c));
        }
        h.push_str("</tr>\n");
        for row in rows {
            h.push_str("<tr>");
            for c in row {
                let _ = write!(h, "<td>{}</td>", escape(&c));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table></div>\n");
    };
    table(
        h,
        &POINT_COLUMNS,
        (0..r.points.len())
            .filter_map(|i| point_cells(r, i).map(|c| c.to_vec()))
            .collect(),
    );
    h.push_str("<h3>One-way latency per segment</h3>\n");
    table(
        h,
        &SEGMENT_COLUMNS,
        r.segments
            .iter()
            .map(|s| segment_cells(s).to_vec())
            .collect(),
    );
    h.push_str("<h3>Losses by segment</h3>\n");
    let by = losses_by_segment(r);
    if by.is_empty() {
        h.push_str("<p>No frame was lost between the points.</p>\n");
    } else {
        h.push_str("<table class=\"kv\">\n");
        for (seg, n, req) in &by {
            let _ = writeln!(
                h,
                "<tr><th><code>{}</code></th><td class=\"n bad\">{n}</td><td>{req} requests</td></tr>",
                escape(seg)
            );
        }
        h.push_str("</table>\n");
        table(
            h,
            &[&LOSS_COLUMNS[..], &["evidence"]].concat(),
            r.losses
                .iter()
                .take(MAX_POINT_ROWS)
                .map(|l| {
                    let mut c = loss_cells(r, l, rel_time_text(r.t0_ns, l.ts_ns, false)).to_vec();
                    c.push(l.evidence.clone());
                    c
                })
                .collect(),
        );
        if r.losses.len() > MAX_POINT_ROWS {
            let _ = writeln!(
                h,
                "<p class=\"muted\">… {} more (<code>rocescope export --table losses</code> writes them all).</p>",
                r.losses.len() - MAX_POINT_ROWS
            );
        }
    }
    for p in r.points.iter().filter(|p| p.capture_loss > 0) {
        let _ = writeln!(
            h,
            "<p>{} missed {} that the points around it saw: capture loss there, not wire loss.</p>",
            escape(&p.name),
            escape(&plural(p.capture_loss, "frame", "frames"))
        );
    }
    if !r.episodes.is_empty() {
        h.push_str("<h3>NAK episodes: generation, reaction, resend</h3>\n<p>The receiver's NAK generation (its first out-of-sequence arrival to the NAK, at its point), the requester's NAK reaction (the NAK's arrival to its first resend, at its point) and the resend's span.</p>\n");
        table(
            h,
            &EPISODE_TIMES_COLUMNS,
            r.episodes
                .iter()
                .take(MAX_POINT_ROWS)
                .map(|e| episode_times_cells(e, rel_time_text(r.t0_ns, e.ts_ns, false)).to_vec())
                .collect(),
        );
    }
    for w in &r.warnings {
        let _ = writeln!(h, "<p class=\"muted\">Note: {}</p>", escape(w));
    }
}

fn plots(h: &mut String, sections: &[Section]) {
    h.push_str("<h2 id=\"plots\">Plots</h2>\n");
    for s in sections {
        let _ = writeln!(h, "<h3>{}</h3>", escape(s.heading));
        match &s.figure {
            Some(f) => {
                let _ = writeln!(
                    h,
                    "<figure>\n<a href=\"{svg}\"><img src=\"{png}\" width=\"{w}\" height=\"{hh}\" \
                     alt=\"{alt}\"></a>\n<figcaption>{cap} <span class=\"muted\">\
                     (<a href=\"{png}\">PNG</a> &middot; <a href=\"{svg}\">SVG</a>)</span>\
                     </figcaption>\n</figure>",
                    svg = escape(&f.svg),
                    png = escape(&f.png),
                    w = f.width,
                    hh = f.height,
                    alt = escape(&f.alt),
                    cap = escape(&s.caption),
                );
            }
            None => {
                let _ = writeln!(
                    h,
                    "<p>{}</p>",
                    escape(s.absent.as_deref().unwrap_or("Nothing to plot."))
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("10.0.0.1 → 10.0.0.2"), "10.0.0.1 → 10.0.0.2");
    }
}

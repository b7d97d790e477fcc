//! The page's tables of the report's rows (QPs, their time by state,
//! findings, episodes): each a list of columns that name the row fields
//! they show, so that a test can tell a field no table shows and no list
//! of what is left out explains (issue 50: a field is added once, in
//! `rocescope_decoders::analysis::rows`).

use std::fmt::Write;

use rocescope_decoders::analysis::{EpisodeCause, EpisodeRow, FindingRow, QpRow, TimeState};
use rocescope_replay::text::{cause_text, qpn, size_text, state_rgb};

use crate::html::escape;
use crate::view::View;

/// Most episodes the table lists and findings the list gives (the plots
/// show them all; `rocescope stats --json` lists every one).
const MAX_EPISODE_ROWS: usize = 200;
const MAX_FINDINGS: usize = 200;

/// One column: the row fields it shows (top-level names, as `stats
/// --json` spells them), its heading (HTML), its cell (a whole `<td>`).
pub(crate) struct Column<R> {
    pub fields: &'static [&'static str],
    heading: &'static str,
    cell: fn(&View<'_>, &R) -> String,
}

const fn col<R>(
    fields: &'static [&'static str],
    heading: &'static str,
    cell: fn(&View<'_>, &R) -> String,
) -> Column<R> {
    Column {
        fields,
        heading,
        cell,
    }
}

fn td(text: &str) -> String {
    format!("<td>{}</td>", escape(text))
}

/// A number cell, marked when it is a problem worth the eye.
fn num(n: u64, bad: bool) -> String {
    if bad && n > 0 {
        format!("<td class=\"n bad\">{n}</td>")
    } else {
        format!("<td class=\"n\">{n}</td>")
    }
}

fn num_text(text: &str, bad: bool) -> String {
    let class = if bad { "n bad" } else { "n" };
    format!("<td class=\"{class}\">{}</td>", escape(text))
}

fn qp_code(dest_qp: u32) -> String {
    format!("<td><code>QP {}</code></td>", qpn(dest_qp))
}

/// A duration, or `-` where the capture has no times (ordinal stamps).
fn time(view: &View<'_>, ns: Option<u64>) -> String {
    match ns {
        Some(ns) if !view.time.ordinal => view.duration(ns),
        _ => "-".to_owned(),
    }
}

/// `3 (NAK 2, timeout 1)`: a total and its parts that are not zero.
fn parts<'a>(parts: impl Iterator<Item = (&'a str, u64)>) -> (u64, String) {
    let parts: Vec<(&str, u64)> = parts.filter(|p| p.1 > 0).collect();
    let total = parts.iter().map(|p| p.1).sum();
    if parts.len() < 2 {
        return (total, total.to_string());
    }
    let each: Vec<String> = parts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    (total, format!("{total} ({})", each.join(", ")))
}

pub(crate) const QP_COLUMNS: &[Column<QpRow>] = &[
    col(&["dest_qp"], "QP", |_, q| qp_code(q.dest_qp)),
    col(
        &["src_ip", "dst_ip", "both_request"],
        "requester &gt; responder",
        |_, q| {
            let both = if q.both_request {
                " (both ends request)"
            } else {
                ""
            };
            td(&format!("{} > {}{both}", q.src_ip, q.dst_ip))
        },
    ),
    col(&["requester_qp"], "requester QP", |_, q| {
        q.requester_qp
            .map_or_else(|| td("-"), |n| format!("<td><code>{}</code></td>", qpn(n)))
    }),
    col(&["packets"], "packets", |_, q| num(q.packets, false)),
    col(&["wire_bytes"], "bytes", |_, q| {
        num_text(&size_text(q.wire_bytes), false)
    }),
    col(&["goodput_gbytes_s"], "goodput", |_, q| {
        num_text(&format!("{:.2} GB/s", q.goodput_gbytes_s), false)
    }),
    col(&["requests"], "requests", |_, q| num(q.requests, false)),
    col(&["responses"], "responses", |_, q| num(q.responses, false)),
    col(
        &["retransmitted_packets", "retransmitted_bytes"],
        "retrans&shy;mitted",
        |_, q| {
            if q.retransmitted_packets == 0 {
                return num(0, false);
            }
            num_text(
                &format!(
                    "{} ({})",
                    q.retransmitted_packets,
                    size_text(q.retransmitted_bytes)
                ),
                true,
            )
        },
    ),
    col(&["episodes_by_cause"], "episodes", |_, q| {
        let (n, text) = parts(q.episodes_by_cause.iter().map(|(k, n)| (*k, *n)));
        num_text(&text, n > 0)
    }),
    col(&["naks"], "NAKs", |_, q| {
        let k = &q.naks;
        let (n, text) = parts(
            [
                ("PSN sequence", k.psn_seq_err),
                ("RNR", k.rnr),
                ("invalid request", k.invalid_request),
                ("remote access", k.remote_access_err),
                ("remote operational", k.remote_op_err),
            ]
            .into_iter(),
        );
        num_text(&text, n > 0)
    }),
    col(&["cnps"], "CNPs", |_, q| num(q.cnps, false)),
    col(&["ecn_marked"], "ECN", |_, q| num(q.ecn_marked, false)),
    col(&["out_of_sequence"], "out of sequence", |_, q| {
        num(q.out_of_sequence, true)
    }),
    col(
        &["duplicate_acks", "duplicate_read_responses"],
        "duplicate ACKs / READ responses",
        |_, q| {
            let n = q.duplicate_acks + q.duplicate_read_responses;
            num_text(
                &format!("{} / {}", q.duplicate_acks, q.duplicate_read_responses),
                n > 0,
            )
        },
    ),
    col(&["capture_loss_packets"], "capture loss", |_, q| {
        num(q.capture_loss_packets, true)
    }),
    col(&["rtt_p50_ns"], "RTT p50", |v, q| {
        num_text(&time(v, q.rtt_p50_ns), false)
    }),
    col(&["rtt_p99_ns"], "RTT p99", |v, q| {
        num_text(&time(v, q.rtt_p99_ns), false)
    }),
    col(
        &[
            "outstanding_packets",
            "outstanding_counted",
            "window_packets",
        ],
        "unACKed at end / window",
        |_, q| {
            // The requester may count fewer: its card had not taken the
            // last responses when the capture ended.
            let counted = if q.outstanding_counted == q.outstanding_packets {
                String::new()
            } else {
                format!(" ({} counted)", q.outstanding_counted)
            };
            num_text(
                &format!("{}{counted} / {}", q.outstanding_packets, q.window_packets),
                false,
            )
        },
    ),
    col(
        &["next_psn", "oldest_unacked_psn"],
        "next PSN (oldest unACKed)",
        |_, q| {
            let oldest = q
                .oldest_unacked_psn
                .map_or_else(String::new, |p| format!(" ({p})"));
            num_text(&format!("{}{oldest}", q.next_psn), false)
        },
    ),
    col(
        &["state_at_end", "error"],
        "state at end",
        |v, q| match &q.error {
            Some(e) => format!(
                "<td class=\"bad\">error: {} (frame {}, PSN {}, at {})</td>",
                escape(e.reason),
                e.frame,
                e.psn,
                escape(&time(v, Some(e.ts_ns.saturating_sub(v.time.t0_ns)))),
            ),
            None => td(q.state_at_end.unwrap_or("-")),
        },
    ),
];

/// Fields of a QP no table of the page shows, and why.
pub(crate) const QP_LEFT_OUT: &[(&str, &str)] = &[(
    "counters",
    "every counter under its mlx5/rxe name is in stats --json and the qps table of export; \
     the columns above are the ones that say what happened",
)];

/// The time by state table: one row per requester QP with accounted time.
pub(crate) const TIME_COLUMNS: &[Column<QpRow>] = &[
    col(&["dest_qp"], "QP", |_, q| qp_code(q.dest_qp)),
    col(&["span_ns"], "span", |v, q| {
        num_text(&v.duration(q.span_ns), false)
    }),
    col(&["time_by_state_ns"], "time by state", |_, q| {
        let mut h = String::from("<td><div class=\"bar\">");
        let total: u64 = q.time_by_state_ns.values().sum();
        for (state, ns) in states(q) {
            if ns == 0 || total == 0 {
                continue;
            }
            let [r, g, b] = state_rgb(state);
            let share = ns as f64 * 100.0 / total as f64;
            let _ = write!(
                h,
                "<span style=\"width:{share:.3}%;background:rgb({r},{g},{b})\" title=\"{} {share:.1}%\"></span>",
                state.name(),
            );
        }
        h.push_str("</div></td>");
        h
    }),
    col(&["time_by_state_ns"], "", |_, q| td(&shares_text(q))),
];

/// A QP's states with their times, in the order that decides.
fn states(q: &QpRow) -> impl Iterator<Item = (TimeState, u64)> + '_ {
    TimeState::ALL
        .into_iter()
        .map(|s| (s, q.time_by_state_ns.get(s.name()).copied().unwrap_or(0)))
}

/// `window_full 81.0%, sending 12.3%`: the states that held at least a
/// thousandth of the span, largest first.
fn shares_text(q: &QpRow) -> String {
    let span = q.span_ns;
    if span == 0 {
        return "-".to_owned();
    }
    let mut by: Vec<(u64, &str)> = states(q)
        .filter(|&(_, ns)| ns * 1000 >= span)
        .map(|(s, ns)| (ns, s.name()))
        .collect();
    by.sort_by_key(|b| std::cmp::Reverse(b.0));
    let each: Vec<String> = by
        .iter()
        .map(|(ns, name)| format!("{name} {:.1}%", *ns as f64 * 100.0 / span as f64))
        .collect();
    each.join(", ")
}

/// A finding's or episode's QP: `None` is the card as a whole.
fn qp_of(qp: Option<u32>, dest_qp: Option<u32>) -> String {
    match (qp, dest_qp) {
        (None, _) => td("the card"),
        (Some(_), Some(d)) => qp_code(d),
        (Some(i), None) => td(&format!("QP #{}", u64::from(i) + 1)),
    }
}

fn frames_text(first: Option<u64>, evidence: &[u64]) -> String {
    const SHOWN: usize = 8;
    let mut s = first.map_or_else(|| "-".to_owned(), |f| format!("from #{f}"));
    if !evidence.is_empty() {
        let each: Vec<String> = evidence
            .iter()
            .take(SHOWN)
            .map(|f| format!("#{f}"))
            .collect();
        let _ = write!(s, "; evidence {}", each.join(" "));
        if evidence.len() > SHOWN {
            let _ = write!(s, " and {} more", evidence.len() - SHOWN);
        }
    }
    s
}

pub(crate) const FINDING_COLUMNS: &[Column<FindingRow>] = &[
    col(&["text", "count", "items"], "finding", |_, f| {
        let mut h = format!("<td class=\"wrap\">{}", escape(&f.text));
        if f.count > 1 {
            let _ = write!(h, "<details><summary>each of the {}</summary><ol>", f.count);
            for i in f.items.iter().take(MAX_FINDINGS) {
                let _ = write!(h, "<li>{}</li>", escape(&i.text));
            }
            h.push_str("</ol></details>");
        }
        h.push_str("</td>");
        h
    }),
    col(&["qp", "dest_qp"], "QP", |_, f| qp_of(f.qp, f.dest_qp)),
    col(&["cause"], "cause", |_, f| {
        format!("<td><code>{}</code></td>", escape(f.cause))
    }),
    col(&["start_ns", "end_ns"], "when, for how long", |v, f| {
        if v.time.ordinal {
            return td("-");
        }
        td(&format!(
            "{}, {}",
            v.duration(f.start_ns.saturating_sub(v.time.t0_ns)),
            v.duration(f.end_ns.saturating_sub(f.start_ns))
        ))
    }),
    col(
        &["before_gbytes_s", "during_gbytes_s"],
        "GB/s before &rarr; during",
        |_, f| {
            num_text(
                &format!("{:.2} → {:.2}", f.before_gbytes_s, f.during_gbytes_s),
                false,
            )
        },
    ),
    col(&["first_frame", "evidence_frames"], "frames", |_, f| {
        td(&frames_text(f.first_frame, &f.evidence_frames))
    }),
    col(&["series"], "plotted as", |_, f| td(&f.series.join(", "))),
];

pub(crate) const FINDING_LEFT_OUT: &[(&str, &str)] = &[];

pub(crate) const EPISODE_COLUMNS: &[Column<EpisodeRow>] = &[
    col(&["start_ns", "end_ns"], "start, span", |v, e| {
        if v.time.ordinal {
            return num_text(&format!("#{}", e.first_frame), false);
        }
        num_text(
            &format!(
                "{}, {}",
                v.duration(e.start_ns.saturating_sub(v.time.t0_ns)),
                v.duration(e.end_ns.saturating_sub(e.start_ns))
            ),
            false,
        )
    }),
    col(&["qp", "dest_qp"], "QP", |_, e| {
        qp_of(Some(e.qp), e.dest_qp)
    }),
    col(&["cause", "nak_inferred"], "cause", |v, e| {
        let mut cause = EpisodeCause::from_name(e.cause)
            .map_or(e.cause, cause_text)
            .to_owned();
        if e.nak_inferred {
            cause.push_str(", NAK not captured");
        }
        let worst = if v
            .worst
            .and_then(|w| v.episodes.get(w))
            .is_some_and(|w| std::ptr::eq(w, e))
        {
            " <span class=\"muted\">(the ladder)</span>"
        } else {
            ""
        };
        format!("<td>{}{worst}</td>", escape(&cause))
    }),
    col(&["first_frame", "last_frame"], "frames", |_, e| {
        num_text(&format!("{}–{}", e.first_frame, e.last_frame), false)
    }),
    col(&["from_psn"], "from PSN", |_, e| {
        num(u64::from(e.from_psn), false)
    }),
    col(&["packets_resent"], "resent", |_, e| {
        num(e.packets_resent, false)
    }),
    col(&["bytes_resent"], "bytes resent", |_, e| {
        num_text(&size_text(e.bytes_resent), false)
    }),
    col(&["silence_ns"], "silence before", |v, e| {
        num_text(&time(v, Some(e.silence_ns)), false)
    }),
    col(&["retries", "timer_expiries"], "retries (timer)", |_, e| {
        num_text(&format!("{} ({})", e.retries, e.timer_expiries), false)
    }),
    col(
        &["nak_generation_ns", "nak_reaction_ns"],
        "NAK generation / reaction",
        |v, e| {
            num_text(
                &format!(
                    "{} / {}",
                    time(v, e.nak_generation_ns),
                    time(v, e.nak_reaction_ns)
                ),
                false,
            )
        },
    ),
    col(&["recovery_ns", "recovered"], "recovery", |v, e| {
        if e.recovered {
            num_text(&time(v, Some(e.recovery_ns)), false)
        } else {
            num_text("not recovered", true)
        }
    }),
    col(
        &["unacted"],
        "loss evidence not acted on",
        |_, e| match &e.unacted {
            Some(u) => td(&format!("{} at #{} (PSN {})", u.cause, u.frame, u.psn)),
            None => td("-"),
        },
    ),
];

pub(crate) const EPISODE_LEFT_OUT: &[(&str, &str)] = &[];

/// A table of `rows` in `columns`, the first `most` of them.
fn table<R>(h: &mut String, view: &View<'_>, columns: &[Column<R>], rows: &[R], most: usize) {
    h.push_str("<div class=\"wide\"><table>\n<tr>");
    // Each heading names the fields of `stats --json` it shows.
    for c in columns {
        let _ = write!(
            h,
            "<th title=\"stats --json: {}\">{}</th>",
            c.fields.join(", "),
            c.heading
        );
    }
    h.push_str("</tr>\n");
    for r in rows.iter().take(most) {
        h.push_str("<tr>");
        for c in columns {
            h.push_str(&(c.cell)(view, r));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n");
}

pub(crate) fn qp_table(h: &mut String, view: &View<'_>) {
    h.push_str("<h2 id=\"qps\">Queue pairs</h2>\n");
    if view.qps.is_empty() {
        h.push_str("<p>No RoCE queue pair in the capture.</p>\n");
        return;
    }
    h.push_str(
        "<p>One row per QP (both directions). Retransmitted, episodes, NAKs, out of sequence, \
         duplicates and capture loss are marked when not zero. RTT is from a request to the ACK \
         that covered it.</p>\n",
    );
    table(h, view, QP_COLUMNS, &view.qps, usize::MAX);
    left_out(h, QP_LEFT_OUT);
}

/// What a table leaves out, and where it is.
fn left_out(h: &mut String, fields: &[(&str, &str)]) {
    for (field, why) in fields {
        let _ = writeln!(
            h,
            "<p class=\"muted\">Not in the table: <code>{}</code>: {}.</p>",
            escape(field),
            escape(why)
        );
    }
}

/// Each requester QP's time by state: a stacked bar (its shares as
/// widths, no script) and the shares in words, then the states' key.
pub(crate) fn time_by_state(h: &mut String, view: &View<'_>) {
    h.push_str("<h2 id=\"time\">Time by state</h2>\n");
    if view.time.ordinal {
        h.push_str(
            "<p>The capture's stamps are frame numbers, not times: where a QP's time went \
             cannot be told.</p>\n",
        );
        return;
    }
    let qps: Vec<QpRow> = view
        .qps
        .iter()
        .filter(|q| q.time_by_state_ns.values().any(|&ns| ns > 0))
        .cloned()
        .collect();
    if qps.is_empty() {
        h.push_str("<p>No requester QP with its requests in the capture.</p>\n");
        return;
    }
    let _ = writeln!(
        h,
        "<p>Where each QP's time went, from its first request to the end of its last packet: \
         every nanosecond in the one state that held it back (the first of error, waiting on \
         the timer, RNR wait, recovering, paused, window full, sending, sharing the link, \
         rate limited, host limited, idle). The link rate reckoned with: {} Gb/s.</p>",
        view.report.link_gbps
    );
    table(h, view, TIME_COLUMNS, &qps, usize::MAX);
    h.push_str("<p class=\"muted\">");
    for state in TimeState::ALL {
        let [r, g, b] = state_rgb(state);
        let _ = write!(
            h,
            "<span class=\"key\" style=\"background:rgb({r},{g},{b})\"></span>{}",
            state.name()
        );
    }
    h.push_str("</p>\n");
}

pub(crate) fn findings(h: &mut String, view: &View<'_>) {
    h.push_str("<h2 id=\"findings\">Findings</h2>\n");
    let f = &view.findings;
    if f.is_empty() {
        h.push_str(
            "<p>No throughput drop found: no QP fell well below its recent rate for long.</p>\n",
        );
        return;
    }
    h.push_str(
        "<p>Each finding is one kind of trouble on one QP: stretches where its throughput \
         fell to less than half of its level (drops of one cause are one finding; open it for \
         each), or a QP left in error or stuck, with the evidence the analysis attributes it \
         to.</p>\n",
    );
    table(h, view, FINDING_COLUMNS, f, MAX_FINDINGS);
    left_out(h, FINDING_LEFT_OUT);
    if f.len() > MAX_FINDINGS {
        let _ = writeln!(
            h,
            "<p class=\"muted\">… {} more findings (<code>rocescope stats --json</code> lists \
             every one).</p>",
            f.len() - MAX_FINDINGS
        );
    }
}

pub(crate) fn episodes(h: &mut String, view: &View<'_>) {
    h.push_str("<h2 id=\"episodes\">Retransmission episodes</h2>\n");
    let eps = &view.episodes;
    if eps.is_empty() {
        h.push_str("<p>No retransmission episodes: no packet was resent.</p>\n");
        return;
    }
    let n = eps.len();
    let _ = writeln!(
        h,
        "<p>{n} {}, in time order. Frame numbers count from 1 as Wireshark does; recovery is \
         from the first evidence of loss to the first new packet after the resend.</p>",
        if n == 1 { "episode" } else { "episodes" }
    );
    table(h, view, EPISODE_COLUMNS, eps, MAX_EPISODE_ROWS);
    left_out(h, EPISODE_LEFT_OUT);
    if n > MAX_EPISODE_ROWS {
        let _ = writeln!(
            h,
            "<p class=\"muted\">… {} more episodes (all are on the timeline plot; \
             <code>rocescope stats --json</code> lists every one).</p>",
            n - MAX_EPISODE_ROWS
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocescope_decoders::analysis::Row;

    /// The row's top-level fields, as `stats --json` names them.
    fn fields<R: Row>() -> Vec<String> {
        match serde_json::to_value(R::specimen()) {
            Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
            other => panic!("a row is an object: {other:?}"),
        }
    }

    fn check<R: Row>(what: &str, tables: &[&[Column<R>]], left_out: &[(&str, &str)]) {
        let all = fields::<R>();
        assert!(all.len() > 5, "{what}: the specimen has fields");
        let shown: Vec<&str> = tables
            .iter()
            .flat_map(|t| t.iter().flat_map(|c| c.fields.iter().copied()))
            .collect();
        let missing: Vec<&String> = all
            .iter()
            .filter(|f| !shown.contains(&f.as_str()) && !left_out.iter().any(|(l, _)| l == f))
            .collect();
        assert!(
            missing.is_empty(),
            "the page's {what} leave out {missing:?} without saying why (add a column, or \
             the field to the table's LEFT_OUT with the reason)"
        );
        for f in shown.iter().chain(left_out.iter().map(|(f, _)| f)) {
            assert!(all.iter().any(|a| a == f), "{what}: {f} is no field");
        }
    }

    #[test]
    fn the_page_shows_every_field_of_a_qp_or_says_why_not() {
        check::<QpRow>("QPs", &[QP_COLUMNS, TIME_COLUMNS], QP_LEFT_OUT);
    }

    #[test]
    fn the_page_shows_every_field_of_an_episode_or_says_why_not() {
        check::<EpisodeRow>("episodes", &[EPISODE_COLUMNS], EPISODE_LEFT_OUT);
    }

    #[test]
    fn the_page_shows_every_field_of_a_finding_or_says_why_not() {
        check::<FindingRow>("findings", &[FINDING_COLUMNS], FINDING_LEFT_OUT);
    }
}

//! `rocescope whatif`: a capture's workload rerun by the bundled simulator
//! as captured (the twin) and with parameters changed; the derivation and
//! the runs are `rocescope_sim::whatif`'s.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use rocescope_replay::text::duration_text;
use rocescope_sim::whatif::{self, QpOutcome, WhatIf, causes_text};
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The capture (pcap, pcapng, a `sim --record` recording).
    pub capture: PathBuf,
    /// A change to the twin, e.g. --set window_packets=32; repeatable. Keys:
    /// the model's parameters (rocescope sim --list-params) and
    /// losses=none (the capture's losses taken out).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print JSON: {capture: {qps}, twin: {qps}, changed: {qps}, ...}.
    #[arg(long)]
    pub json: bool,
    /// Write the derived scenario (the twin) as TOML, which `rocescope sim
    /// --scenario FILE` runs.
    #[arg(long, value_name = "FILE")]
    pub export_scenario: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    // A bad --set is told before the capture is read and the twin run.
    let mut probe = rocescope_sim::Scenario::two_cards(rocescope_sim::OpKind::Write, 4096, 1, 1);
    whatif::apply_sets(&mut probe, &args.set)?;
    let (w, derived) = whatif::what_if(&args.capture, &args.set)?;
    if let Some(path) = &args.export_scenario {
        std::fs::write(path, whatif::to_toml(&derived.scenario))
            .with_context(|| format!("writing the derived scenario to {}", path.display()))?;
    }
    let refused = !w.mismatches.is_empty();
    let mut out = std::io::stdout().lock();
    if args.json {
        let v = json!({
            "capture": w.capture,
            "twin": w.twin,
            // No prediction from a twin that does not hold.
            "changed": if refused { serde_json::Value::Null } else { json!(w.changed) },
            "changes": w.changes,
            "mismatches": w.mismatches,
            "assumed": derived.assumed,
        });
        writeln!(out, "{v}")?;
    } else {
        text(&mut out, &w, &derived)?;
    }
    if refused {
        let which: Vec<String> = w
            .mismatches
            .iter()
            .map(|m| format!("QP {:#x} ({} -> {})", m.dest_qp, m.src_ip, m.dst_ip))
            .collect();
        bail!(
            "no prediction: the twin does not reproduce {} (see above)",
            which.join(", ")
        );
    }
    Ok(())
}

fn gbytes(q: &QpOutcome) -> String {
    format!("{:.3} GB/s", q.goodput_gbytes_s)
}

fn completion(q: &QpOutcome) -> String {
    match (q.message_completion_p50_ns, q.message_completion_p99_ns) {
        (Some(a), Some(b)) => format!("{} / {}", duration_text(a), duration_text(b)),
        _ => "-".into(),
    }
}

/// `window_full 81%, sending 12%`: the states of at least 1% of the span,
/// as the workbench says them.
fn states(q: &QpOutcome) -> String {
    rocescope_core::query::whatif_states_text(q)
}

/// `n` and the noun, singular for one.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn text(out: &mut impl Write, w: &WhatIf, d: &whatif::Derived) -> anyhow::Result<()> {
    let sc = &d.scenario;
    writeln!(
        out,
        "twin: {} on {} nodes, link {} Gb/s, window {} packets, propagation {} ns, {} as fault rules, {} simulated",
        counted(sc.qps.len(), "QP", "QPs"),
        sc.nodes.len(),
        sc.params.link_gbps,
        sc.params.window_packets,
        sc.params.link_prop_ns,
        counted(sc.faults.len(), "loss", "losses"),
        duration_text(sc.duration_ns)
    )?;
    for a in &d.assumed {
        writeln!(out, "  assumed: {a}")?;
    }
    let changes = if w.changes.is_empty() {
        "none".to_owned()
    } else {
        w.changes.join(", ")
    };
    writeln!(out, "changed: {changes}")?;
    writeln!(out)?;
    for (i, c) in w.capture.qps.iter().enumerate() {
        let (t, ch) = (&w.twin.qps[i], &w.changed.qps[i]);
        writeln!(out, "QP {:#x} {} -> {}", c.dest_qp, c.src_ip, c.dst_ip)?;
        writeln!(
            out,
            "  {:<8} {:>13}  completion p50/p99 {:<22} episodes {}",
            "capture",
            gbytes(c),
            completion(c),
            causes_text(&c.episodes_by_cause)
        )?;
        writeln!(
            out,
            "  {:<8} {:>13}  completion p50/p99 {:<22} episodes {}",
            "twin",
            gbytes(t),
            completion(t),
            causes_text(&t.episodes_by_cause)
        )?;
        if w.mismatches.is_empty() {
            let gain = (ch.goodput_gbytes_s / t.goodput_gbytes_s.max(1e-12) - 1.0) * 100.0;
            writeln!(
                out,
                "  {:<8} {:>13}  completion p50/p99 {:<22} episodes {}  ({gain:+.1}% against the twin)",
                "changed",
                gbytes(ch),
                completion(ch),
                causes_text(&ch.episodes_by_cause)
            )?;
        }
        writeln!(out, "  time by state: capture {}", states(c))?;
        writeln!(out, "                 twin    {}", states(t))?;
        if w.mismatches.is_empty() {
            writeln!(out, "                 changed {}", states(ch))?;
        }
    }
    if !w.mismatches.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", whatif::refusal_text(&w.mismatches))?;
    }
    Ok(())
}

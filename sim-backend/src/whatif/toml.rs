//! A scenario as TOML that [`Scenario::from_toml`] reads back: what
//! `whatif --export-scenario` writes (the parts a derived scenario has).

use std::fmt::Write as _;

use crate::{Params, Scenario};

fn snake<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `sc` as a scenario file: its parameters that differ from the defaults,
/// nodes, QPs (one `[[qp]]` each), fault rules, CNPs, pauses and
/// sniffer.
pub fn to_toml(sc: &Scenario) -> String {
    let mut s = String::new();
    let q = |t: &str| format!("{t:?}");
    let _ = writeln!(s, "name = {}", q(&sc.name));
    let _ = writeln!(s, "description = {}", q(&sc.description));
    let _ = writeln!(s, "seed = {}", sc.seed);
    let _ = writeln!(s, "duration_ns = {}", sc.duration_ns);
    let defaults = Params::default();
    let changed: Vec<_> = Params::names()
        .into_iter()
        .filter(|n| sc.params.get(n) != defaults.get(n))
        .collect();
    if !changed.is_empty() {
        let _ = writeln!(s, "\n[params]");
        for n in changed {
            let v = sc.params.get(n).unwrap_or(0.0);
            let _ = writeln!(s, "{n} = {}", toml_number(v));
        }
    }
    for n in &sc.nodes {
        let _ = writeln!(
            s,
            "\n[[node]]\nname = {}\nkind = {}",
            q(&n.name),
            q(&snake(&n.kind))
        );
    }
    for p in &sc.qps {
        let _ = writeln!(
            s,
            "\n[[qp]]\nfrom = {}\nto = {}\nop = {}\nsize_bytes = {}\nmessages = {}\nqueue_depth = {}\nrate_gbps = {}\nstart_ns = {}",
            q(&sc.nodes[p.from].name),
            q(&sc.nodes[p.to].name),
            q(&snake(&p.op)),
            p.size_bytes,
            p.messages,
            p.queue_depth,
            toml_float(p.rate_gbps),
            p.start_ns
        );
    }
    for f in &sc.faults {
        let _ = writeln!(
            s,
            "\n[[fault]]\nkind = {}\nnode = {}\ndirection = {}\nat = {}",
            q(&snake(&f.kind)),
            q(&sc.nodes[f.node].name),
            q(&snake(&f.direction)),
            q(&snake(&f.at)),
        );
        if let Some(qp) = f.qp {
            let _ = writeln!(s, "qp = {qp}");
        }
        if f.probability > 0.0 {
            let _ = writeln!(s, "probability = {}", toml_float(f.probability));
        }
        for (k, v) in [
            ("nth", f.nth),
            ("start_ns", f.start_ns),
            ("end_ns", f.end_ns),
            ("every_ns", f.every_ns),
        ] {
            if v != 0 {
                let _ = writeln!(s, "{k} = {v}");
            }
        }
        let _ = writeln!(s, "delay_ns = {}", f.delay_ns);
    }
    for c in &sc.cnps {
        let _ = writeln!(s, "\n[[cnp]]\nqp = {}\nat_ns = {}", c.qp, c.at_ns);
    }
    for p in &sc.pauses {
        let _ = writeln!(
            s,
            "\n[[pause]]\nnode = {}\nat_ns = {}\nquanta = {}",
            q(&sc.nodes[p.node].name),
            p.at_ns,
            p.quanta
        );
    }
    if let Some(sn) = &sc.sniffer {
        let _ = writeln!(
            s,
            "\n[sniffer]\nnode = {}\nfilter = {}\nfixed_card = {}\nrx_cut_quirk = {}\ntag_direction = {}",
            q(&sc.nodes[sn.node].name),
            sn.filter,
            sn.fixed_card,
            sn.rx_cut_quirk,
            sn.tag_direction
        );
    }
    let _ = writeln!(s, "\n[profiler]\nenabled = {}", sc.profiler.enabled);
    s
}

/// A number as TOML: an integer where it is one (parameters of integer
/// kind refuse a float).
fn toml_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:?}")
    }
}

/// A float as TOML (always with a point or exponent).
fn toml_float(v: f64) -> String {
    format!("{v:?}")
}

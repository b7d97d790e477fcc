//! Finding AXI4-Stream interfaces and their clocks in a waveform's hierarchy.
//!
//! An interface is a scope holding `tdata`, `tvalid` and `tlast` (optionally
//! `tkeep`, `tready`), or a set of signals in one scope sharing a prefix
//! (`m_axis_rx_tdata`, `m_axis_rx_tvalid`, ...). Its clock is a one-bit
//! `clk`, `aclk`, `ap_clk` or `aclk_i` in its scope or the nearest scope
//! above that has one.

use wellen::{Hierarchy, ScopeRef, SignalRef, VarRef};

/// Clock names looked for, in order of preference within one scope.
pub const CLOCK_NAMES: [&str; 4] = ["aclk", "ap_clk", "aclk_i", "clk"];

/// One AXI4-Stream interface: the signals a beat is sampled from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxisInterface {
    /// Scope path, plus the prefix when the signals share one
    /// (`tb.dut.m_axis_rx`): the capture port's name.
    pub name: String,
    /// The scope holding the signals.
    pub scope: String,
    /// Width of `tdata` in bits.
    pub width_bits: u32,
    /// The clock's full name.
    pub clock_name: String,
    pub(crate) tdata: SignalRef,
    pub(crate) tvalid: SignalRef,
    pub(crate) tlast: SignalRef,
    pub(crate) tkeep: Option<SignalRef>,
    pub(crate) tready: Option<SignalRef>,
    pub(crate) clock: SignalRef,
    /// Whether `tkeep` is in the waveform (absent: all bytes valid).
    pub has_tkeep: bool,
    /// Whether `tready` is in the waveform (absent: always ready).
    pub has_tready: bool,
}

/// An interface whose clock was not found, kept to say why it is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unclocked {
    /// The interface's name, as [`AxisInterface::name`].
    pub name: String,
}

/// The interfaces of a hierarchy: with a clock, and without one.
#[derive(Debug, Default)]
pub struct Found {
    /// Interfaces with their clock, in hierarchy order.
    pub interfaces: Vec<AxisInterface>,
    /// Interfaces for which no clock was found.
    pub unclocked: Vec<Unclocked>,
}

/// Finds every AXI4-Stream interface. `clock`, when given, is the full name
/// (`tb.clk`) or plain name of the clock to use for all of them. The same
/// stream dumped in several scopes (a testbench's wire and the port of the
/// module it feeds share one signal) is kept once, in its outermost scope.
pub fn find(h: &Hierarchy, clock: Option<&str>) -> Result<Found, String> {
    let forced = match clock {
        Some(name) => Some(find_clock(h, name)?),
        None => None,
    };
    let mut found = Found::default();
    let mut clocks: Vec<Option<(SignalRef, String)>> = Vec::new();
    for scope in h.scopes() {
        walk(h, scope, &mut clocks, forced.as_ref(), &mut found);
    }
    let mut seen: Vec<(SignalRef, SignalRef)> = Vec::new();
    found.interfaces.retain(|i| {
        let key = (i.tdata, i.tvalid);
        let fresh = !seen.contains(&key);
        seen.push(key);
        fresh
    });
    Ok(found)
}

fn walk(
    h: &Hierarchy,
    scope: ScopeRef,
    clocks: &mut Vec<Option<(SignalRef, String)>>,
    forced: Option<&(SignalRef, String)>,
    found: &mut Found,
) {
    let s = &h[scope];
    let vars: Vec<VarRef> = s.vars(h).collect();
    let here = CLOCK_NAMES.iter().find_map(|want| {
        vars.iter().find_map(|&v| {
            let var = &h[v];
            (var.name(h) == *want && var.length(h) == Some(1))
                .then(|| (var.signal_ref(), var.full_name(h)))
        })
    });
    clocks.push(here);
    let clock = forced
        .cloned()
        .or_else(|| clocks.iter().rev().find_map(|c| c.clone()));
    let scope_name = s.full_name(h);
    for &v in &vars {
        let var = &h[v];
        let name = var.name(h);
        let Some(prefix) = name.strip_suffix("tdata") else {
            continue;
        };
        let Some(width_bits) = var.length(h).filter(|&w| w > 0) else {
            continue;
        };
        let get = |suffix: &str, one_bit: bool| {
            let want = format!("{prefix}{suffix}");
            vars.iter().find_map(|&o| {
                let ov = &h[o];
                (ov.name(h) == want && (!one_bit || ov.length(h) == Some(1)))
                    .then(|| ov.signal_ref())
            })
        };
        let (Some(tvalid), Some(tlast)) = (get("tvalid", true), get("tlast", true)) else {
            continue;
        };
        let tkeep = get("tkeep", false);
        let tready = get("tready", true);
        let stem = prefix.trim_end_matches('_');
        let name = if stem.is_empty() {
            scope_name.clone()
        } else {
            format!("{scope_name}.{stem}")
        };
        match &clock {
            Some((clock, clock_name)) => found.interfaces.push(AxisInterface {
                name,
                scope: scope_name.clone(),
                width_bits,
                clock_name: clock_name.clone(),
                tdata: var.signal_ref(),
                tvalid,
                tlast,
                tkeep,
                tready,
                clock: *clock,
                has_tkeep: tkeep.is_some(),
                has_tready: tready.is_some(),
            }),
            None => found.unclocked.push(Unclocked { name }),
        }
    }
    for child in s.scopes(h) {
        walk(h, child, clocks, forced, found);
    }
    clocks.pop();
}

/// The one-bit signal named `name`: a full path, or else a plain name that
/// only one signal has.
fn find_clock(h: &Hierarchy, name: &str) -> Result<(SignalRef, String), String> {
    let mut matches = Vec::new();
    for v in h.all_vars() {
        let v = &h[v];
        let full = v.full_name(h);
        if full == name || v.name(h) == name {
            if v.length(h) != Some(1) {
                return Err(format!("clock {name:?} is not a one-bit signal"));
            }
            if full == name {
                return Ok((v.signal_ref(), full));
            }
            matches.push((v.signal_ref(), full));
        }
    }
    match matches.len() {
        0 => Err(format!("no signal named {name:?} for --clock")),
        1 => Ok(matches.remove(0)),
        _ => Err(format!(
            "--clock {name:?} names {} signals; give the full path ({})",
            matches.len(),
            matches
                .iter()
                .map(|m| m.1.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

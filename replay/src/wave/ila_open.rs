//! Opening an ILA capture (CSV, or a VCD with `_TRIGGER` and `_WINDOW`) as
//! a [`WaveStream`]: its probes, the interfaces among them, the thread.

use std::path::Path;

use wellen::{Hierarchy, SignalRef};

use super::axis::AxisInterface;
use super::ila::{self, AxisMap, CsvReader, IlaProbe, ProbeInterface};
use super::ila_stream::{IlaJob, Source, last_time_step};
use super::stream::WaveStream;
use super::{Timescale, WaveError, WaveFormat, WaveOptions};

/// An ILA VCD's probes and markers in wellen's hierarchy.
pub(super) struct VcdProbes {
    pub probes: Vec<(SignalRef, IlaProbe)>,
    pub trigger: SignalRef,
    pub window: SignalRef,
    pub gap: Option<SignalRef>,
}

/// The ILA probes of a VCD: the scope holding one-bit `_TRIGGER` and
/// `_WINDOW` (what Vivado and ChipScoPy write beside the probes); `None`
/// for any other VCD.
pub(super) fn vcd_probes(h: &Hierarchy) -> Option<VcdProbes> {
    let mut todo: Vec<wellen::ScopeRef> = h.scopes().collect();
    while let Some(scope) = todo.pop() {
        let s = &h[scope];
        todo.extend(s.scopes(h));
        let one_bit = |name: &str| {
            s.vars(h).find_map(|v| {
                let var = &h[v];
                (var.name(h) == name && var.length(h) == Some(1)).then(|| var.signal_ref())
            })
        };
        let (Some(trigger), Some(window)) = (one_bit("_TRIGGER"), one_bit("_WINDOW")) else {
            continue;
        };
        let gap = one_bit("_GAP");
        let probes = s
            .vars(h)
            .filter_map(|v| {
                let var = &h[v];
                let name = var.name(h);
                if matches!(name, "_TRIGGER" | "_WINDOW" | "_GAP") {
                    return None;
                }
                Some((
                    var.signal_ref(),
                    IlaProbe {
                        name: ila::split_range(name).0,
                        width_bits: var.length(h)?,
                    },
                ))
            })
            .collect();
        return Some(VcdProbes {
            probes,
            trigger,
            window,
            gap,
        });
    }
    None
}

/// The interfaces `options` asks for among `probes`.
fn choose(
    path: &Path,
    probes: &[IlaProbe],
    options: &WaveOptions,
) -> Result<Vec<ProbeInterface>, WaveError> {
    let fail = |message: String| WaveError::Read {
        path: path.to_path_buf(),
        message,
    };
    let map = match options.axis.as_deref().map(AxisMap::parse) {
        Some(Some(Ok(m))) => Some(m),
        Some(Some(Err(e))) => return Err(fail(e)),
        _ => None,
    };
    let mut found = ila::find_interfaces(probes, map.as_ref()).map_err(fail)?;
    if map.is_none()
        && let Some(want) = &options.axis
    {
        let names = found
            .iter()
            .map(|i| i.name.escape_debug().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        found.retain(|i| {
            i.name == *want
                || i.name.ends_with(&format!("/{want}"))
                || i.name.ends_with(&format!(".{want}"))
        });
        if found.is_empty() {
            return Err(WaveError::no_such_axis(path, want, names));
        }
    }
    if found.is_empty() {
        let names: Vec<String> = probes
            .iter()
            .map(|p| format!("{} ({} bits)", p.name.escape_debug(), p.width_bits))
            .collect();
        return Err(fail(format!(
            "no AXI4-Stream interface among the ILA's probes by name ({}); name them with --axis tdata=PROBE,tvalid=PROBE,tlast=PROBE[,tkeep=PROBE][,tready=PROBE]",
            names.join(", ")
        )));
    }
    if found.len() > 255 {
        return Err(WaveError::TooMany {
            path: path.to_path_buf(),
            count: found.len(),
        });
    }
    Ok(found)
}

/// The capture ports' descriptions; `signal(i)` is probe `i`'s handle
/// (for a CSV, its column as a number: never handed to wellen).
fn ports(
    found: &[ProbeInterface],
    probes: &[IlaProbe],
    hz: u64,
    signal: impl Fn(usize) -> Option<SignalRef>,
) -> Option<Vec<AxisInterface>> {
    found
        .iter()
        .map(|i| {
            Some(AxisInterface {
                name: i.name.clone(),
                scope: i.name.clone(),
                width_bits: probes[i.tdata].width_bits,
                clock_name: format!("ILA sample clock {}", ila::clock_text(hz)),
                tdata: signal(i.tdata)?,
                tvalid: signal(i.tvalid)?,
                tlast: signal(i.tlast)?,
                tkeep: i.tkeep.and_then(&signal),
                tready: i.tready.and_then(&signal),
                clock: signal(i.tvalid)?,
                has_tkeep: i.tkeep.is_some(),
                has_tready: i.tready.is_some(),
            })
        })
        .collect()
}

impl WaveStream {
    /// An ILA CSV: its header read here, its rows on the thread.
    pub(super) fn open_ila_csv(
        path: &Path,
        options: &WaveOptions,
        started: std::time::Instant,
    ) -> Result<Self, WaveError> {
        let fail = |message: String| WaveError::Read {
            path: path.to_path_buf(),
            message,
        };
        let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
        let reader = CsvReader::new(std::io::BufReader::with_capacity(1 << 16, file))
            .map_err(|e| fail(format!("not an ILA capture: {e}")))?;
        let probes = reader.probes.clone();
        let found = choose(path, &probes, options)?;
        let hz = options
            .sample_clock_hz
            .unwrap_or(ila::DEFAULT_SAMPLE_CLOCK_HZ);
        let interfaces = ports(&found, &probes, hz, SignalRef::from_index)
            .ok_or_else(|| fail("too many probes".into()))?;
        Self::start(
            path,
            WaveFormat::IlaCsv,
            Source::Csv(reader),
            found,
            &probes,
            interfaces,
            hz,
            started,
        )
    }

    /// An ILA VCD: wellen has read its header.
    pub(super) fn open_ila_vcd(
        path: &Path,
        wave: wellen::stream::StreamingWaveform<std::io::BufReader<std::fs::File>>,
        vcd: VcdProbes,
        options: &WaveOptions,
        started: std::time::Instant,
    ) -> Result<Self, WaveError> {
        let probes: Vec<IlaProbe> = vcd.probes.iter().map(|(_, p)| p.clone()).collect();
        let refs: Vec<SignalRef> = vcd.probes.iter().map(|(r, _)| *r).collect();
        let found = choose(path, &probes, options)?;
        let hz = options
            .sample_clock_hz
            .unwrap_or(ila::DEFAULT_SAMPLE_CLOCK_HZ);
        let interfaces = ports(&found, &probes, hz, |i| refs.get(i).copied()).ok_or_else(|| {
            WaveError::Read {
                path: path.to_path_buf(),
                message: "a probe without a signal".into(),
            }
        })?;
        let source = Source::Vcd {
            wave: Box::new(wave),
            probes: refs,
            trigger: vcd.trigger,
            window: vcd.window,
            gap: vcd.gap,
            last_sample: last_time_step(path),
            cut_mid_line: super::stream::ends_mid_line(path),
        };
        Self::start(
            path,
            WaveFormat::IlaVcd,
            source,
            found,
            &probes,
            interfaces,
            hz,
            started,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        path: &Path,
        format: WaveFormat,
        source: Source,
        found: Vec<ProbeInterface>,
        probes: &[IlaProbe],
        interfaces: Vec<AxisInterface>,
        hz: u64,
        started: std::time::Instant,
    ) -> Result<Self, WaveError> {
        let timescale = Timescale::per_sample(hz);
        let job = IlaJob {
            path: path.to_path_buf(),
            source,
            interfaces: found,
            widths: probes.iter().map(|p| p.width_bits).collect(),
            sample_clock_hz: hz,
            timescale,
        };
        let (rx, thread) =
            WaveStream::spawn_reader(path, "the ILA capture reader", move |tx| job.run(tx))?;
        let open_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(Self::reading(
            path, format, interfaces, timescale, rx, thread, open_ms,
        ))
    }
}

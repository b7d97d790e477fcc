//! An ILA capture's frames, on the `rocescope-wave` thread: its samples fed
//! to the sampler with a clock edge per sample (see [`super::ila`]).

use std::path::PathBuf;
use std::sync::mpsc::SyncSender;

use wellen::{SignalRef, stream};

use super::beats::{PortSlots, Sampler, WaveFrame};
use super::ila::{CsvReader, IlaSummary, IlaWindow, ProbeInterface, Row};
use super::stream::{BATCH_FRAMES, Gone, Msg, flat, flush_warnings, little_endian};
use super::{Timescale, WaveError};
use crate::contain::contain;

/// Samples an ILA capture holds at most, counted from sample 0: a Versal
/// or UltraScale ILA keeps up to 131,072 samples in all its windows; a
/// larger index is a damaged file, never filled in sample by sample.
pub(super) const MAX_SAMPLES: u64 = 1 << 22;

/// Sample `s` as sampler times: its values at `4s + 1`, the clock's rise
/// at `4s + 2` and fall at `4s + 3`, so that the rise samples the values
/// the ILA captured for `s`.
const fn value_time(s: u64) -> u64 {
    s.saturating_mul(4).saturating_add(1)
}

/// The sample of a frame's first-beat time in sampler units.
const fn sample_of(time: u64) -> u64 {
    time.saturating_sub(2) / 4
}

/// Samples fed to the sampler, windows kept, frames batched.
struct Feed<'a> {
    sampler: Sampler,
    clock: usize,
    /// The sample whose values are being set; `None` before the first.
    current: Option<u64>,
    summary: IlaSummary,
    out: Vec<WaveFrame>,
    warned: usize,
    timescale: Timescale,
    tx: &'a SyncSender<Msg>,
}

impl<'a> Feed<'a> {
    fn new(
        probes: usize,
        interfaces: &[ProbeInterface],
        widths: &[u32],
        summary: IlaSummary,
        timescale: Timescale,
        tx: &'a SyncSender<Msg>,
    ) -> Self {
        let clock = probes;
        let ports: Vec<PortSlots> = interfaces
            .iter()
            .map(|i| PortSlots {
                tdata: i.tdata,
                tvalid: i.tvalid,
                tlast: i.tlast,
                tkeep: i.tkeep,
                tready: i.tready,
                clock,
                width_bits: widths[i.tdata],
            })
            .collect();
        let mut sampler = Sampler::new(probes + 1, &ports);
        sampler.change(0, clock, |v| {
            v.push(0);
            true
        });
        Self {
            sampler,
            clock,
            current: None,
            summary,
            out: Vec::with_capacity(BATCH_FRAMES),
            warned: 0,
            timescale,
            tx,
        }
    }

    /// Moves to sample `s`, taking every sample before it (the ones the
    /// file skipped keep their values).
    fn at(&mut self, s: u64) -> Result<(), Stop> {
        if s >= MAX_SAMPLES {
            return Err(Stop::Bad(format!(
                "sample {s} is past the {MAX_SAMPLES} samples an ILA capture can hold"
            )));
        }
        match self.current {
            Some(c) if c >= s => return Ok(()),
            Some(c) => {
                self.tick(c).map_err(|_| Stop::Gone)?;
                // A VCD writes nothing for a sample without changes.
                for k in c + 1..s {
                    self.tick(k).map_err(|_| Stop::Gone)?;
                }
            }
            None => {}
        }
        self.current = Some(s);
        if self.summary.windows.is_empty() {
            self.window(s);
        }
        Ok(())
    }

    /// A new window from sample `s` (call after [`at`](Self::at)`(s)`).
    fn window(&mut self, s: u64) {
        self.sampler.new_window();
        if self
            .summary
            .windows
            .last()
            .is_some_and(|w| w.first_sample == s)
        {
            return;
        }
        self.summary.windows.push(IlaWindow {
            first_sample: s,
            samples: 0,
            trigger_sample: None,
        });
    }

    fn trigger(&mut self, s: u64) {
        if let Some(w) = self.summary.windows.last_mut() {
            w.trigger_sample.get_or_insert(s);
        }
    }

    /// Nothing is known of sample `s`: frames across it are cut.
    fn gap(&mut self) {
        self.sampler.new_window();
    }

    fn set(&mut self, s: u64, probe: usize, write: impl FnOnce(&mut Vec<u8>) -> bool) {
        self.sampler.change(value_time(s), probe, write);
    }

    /// Sample `s`'s clock edge; its frames out.
    fn tick(&mut self, s: u64) -> Result<(), Gone> {
        let rise = value_time(s) + 1;
        self.sampler.change(rise, self.clock, |v| {
            v.push(1);
            true
        });
        self.sampler.change(rise + 1, self.clock, |v| {
            v.push(0);
            true
        });
        if let Some(w) = self.summary.windows.last_mut() {
            w.samples += 1;
        }
        self.release(false)
    }

    fn release(&mut self, all: bool) -> Result<(), Gone> {
        flush_warnings(&mut self.sampler, &mut self.warned, self.timescale, self.tx)?;
        while let Some(mut f) = self.sampler.pop_ready(all) {
            f.time = sample_of(f.time);
            self.out.push(f);
            if self.out.len() >= BATCH_FRAMES {
                let full = std::mem::replace(&mut self.out, Vec::with_capacity(BATCH_FRAMES));
                self.tx.send(Msg::Frames(full)).map_err(|_| Gone)?;
            }
        }
        Ok(())
    }

    /// The last sample taken (unless the file was cut inside it); open
    /// frames cut at the last window's end.
    fn finish(&mut self, last_sample: Option<u64>, take_current: bool) -> Result<(), Gone> {
        if let Some(c) = self.current
            && take_current
        {
            self.tick(c)?;
            if let Some(last) = last_sample.filter(|&l| l < MAX_SAMPLES) {
                for k in c + 1..=last {
                    self.tick(k)?;
                }
            }
        }
        self.sampler.finish();
        self.sampler.new_window();
        self.release(true)?;
        if !self.out.is_empty() {
            let rest = std::mem::take(&mut self.out);
            self.tx.send(Msg::Frames(rest)).map_err(|_| Gone)?;
        }
        self.summary.cut_at_start = self.sampler.cut_at_start;
        self.summary.cut_at_end = self.sampler.cut_at_end;
        Ok(())
    }

    fn last_ns(&self) -> u64 {
        self.current.map_or(0, |s| self.summary.sample_ns(s))
    }
}

/// Why feeding stopped early.
enum Stop {
    /// The receiver went away.
    Gone,
    /// The file is damaged here.
    Bad(String),
}

/// Where the samples come from.
pub(super) enum Source {
    Csv(CsvReader<std::io::BufReader<std::fs::File>>),
    Vcd {
        wave: Box<stream::StreamingWaveform<std::io::BufReader<std::fs::File>>>,
        /// The probes' signals, in probe order.
        probes: Vec<SignalRef>,
        trigger: SignalRef,
        window: SignalRef,
        gap: Option<SignalRef>,
        /// The last sample (`#N` at the file's end: a VCD writes the last
        /// sample's time even when nothing changed in it).
        last_sample: Option<u64>,
        /// The last line has no newline: the file was cut while written
        /// or copied, inside its last sample.
        cut_mid_line: bool,
    },
}

/// The reading thread's work.
pub(super) struct IlaJob {
    pub path: PathBuf,
    pub source: Source,
    pub interfaces: Vec<ProbeInterface>,
    pub widths: Vec<u32>,
    pub sample_clock_hz: u64,
    pub timescale: Timescale,
}

impl IlaJob {
    pub fn run(self, tx: &SyncSender<Msg>) {
        let summary = IlaSummary {
            sample_clock_hz: self.sample_clock_hz,
            ..IlaSummary::default()
        };
        let mut feed = Feed::new(
            self.widths.len(),
            &self.interfaces,
            &self.widths,
            summary,
            self.timescale,
            tx,
        );
        let path = self.path;
        let (failed, last_sample, cut) = match self.source {
            Source::Csv(reader) => match read_csv(reader, &mut feed) {
                Ok(failed) => (failed, None, false),
                Err(Gone) => return,
            },
            Source::Vcd {
                mut wave,
                probes,
                trigger,
                window,
                gap,
                last_sample,
                cut_mid_line,
            } => match read_vcd(&mut wave, &probes, trigger, window, gap, &mut feed) {
                Ok(failed) => (failed, last_sample, cut_mid_line),
                Err(Gone) => return,
            },
        };
        let failed = match (failed, cut) {
            (Some(why), true) => Some(format!("its last line is incomplete: {why}")),
            (None, true) => Some("its last line is incomplete".to_owned()),
            (failed, false) => failed,
        };
        let what = if cut {
            "is cut short at"
        } else {
            "cannot be read past"
        };
        // After a failure the sample being read may be partial: it is not
        // taken, and the frames it would end are cut.
        let last_sample = if failed.is_some() { None } else { last_sample };
        if feed.finish(last_sample, failed.is_none()).is_err() {
            return;
        }
        let last_ns = feed.last_ns();
        let beats = feed.sampler.beats;
        if tx.send(Msg::Ila(feed.summary)).is_err() {
            return;
        }
        let last = match failed {
            Some(why) => Msg::Failed(WaveError::Read {
                path,
                message: format!(
                    "the capture {what} {last_ns} ns ({why}); every whole frame before it was kept"
                ),
            }),
            None => Msg::End(last_ns, beats),
        };
        let _ = tx.send(last);
    }
}

/// Feeds a CSV's rows; the error that stopped it, if any.
fn read_csv(
    mut reader: CsvReader<std::io::BufReader<std::fs::File>>,
    feed: &mut Feed<'_>,
) -> Result<Option<String>, Gone> {
    let mut row = Row::default();
    let mut last_in_window: Option<u64> = None;
    loop {
        match reader.next(&mut row) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => return Ok(Some(e)),
        }
        if feed.current.is_some_and(|c| row.sample <= c) {
            return Ok(Some(format!(
                "line {}: sample {} after sample {}",
                reader.line_number,
                row.sample,
                feed.current.unwrap_or(0)
            )));
        }
        match feed.at(row.sample) {
            Ok(()) => {}
            Err(Stop::Gone) => return Err(Gone),
            Err(Stop::Bad(why)) => return Ok(Some(format!("line {}: {why}", reader.line_number))),
        }
        // `Sample in Window` starting again: the next window.
        if last_in_window.is_some_and(|l| row.in_window <= l) {
            feed.window(row.sample);
        }
        last_in_window = Some(row.in_window);
        if row.trigger {
            feed.trigger(row.sample);
        }
        if row.gap {
            feed.gap();
        }
        for (i, v) in row.values.iter().enumerate() {
            feed.set(row.sample, i, |out| {
                out.extend_from_slice(v);
                !row.gap
            });
        }
    }
}

/// Feeds a VCD's changes; the error that stopped it, if any.
fn read_vcd(
    wave: &mut stream::StreamingWaveform<std::io::BufReader<std::fs::File>>,
    probes: &[SignalRef],
    trigger: SignalRef,
    window: SignalRef,
    gap: Option<SignalRef>,
    feed: &mut Feed<'_>,
) -> Result<Option<String>, Gone> {
    let mut watched: Vec<SignalRef> = probes.to_vec();
    watched.extend([trigger, window]);
    watched.extend(gap);
    let max = watched.iter().map(|r| r.index()).max().unwrap_or(0);
    // Per signal index: the probe's slot, or what the marker is.
    const TRIGGER: usize = usize::MAX - 1;
    const WINDOW: usize = usize::MAX - 2;
    const GAP: usize = usize::MAX - 3;
    let mut slot_of = vec![usize::MAX; max + 1];
    for (i, r) in probes.iter().enumerate() {
        slot_of[r.index()] = i;
    }
    slot_of[trigger.index()] = TRIGGER;
    slot_of[window.index()] = WINDOW;
    if let Some(g) = gap {
        slot_of[g.index()] = GAP;
    }
    let mut seen_window = false;
    let result = contain(|| {
        wave.stream_changes(
            stream::Filter::include_signals(&watched),
            |s, signal, value| {
                let Some(&slot) = slot_of.get(signal.index()) else {
                    return Ok(());
                };
                feed.at(s)?;
                let mut bytes = Vec::new();
                let known = little_endian(&value, &mut bytes);
                let high = known && bytes.first().is_some_and(|b| b & 1 == 1);
                match slot {
                    TRIGGER if high => feed.trigger(s),
                    TRIGGER => {}
                    // `_WINDOW` is written at the first sample and toggles at
                    // each window after it.
                    WINDOW => {
                        if seen_window {
                            feed.window(s);
                        }
                        seen_window = true;
                    }
                    GAP if high => feed.gap(),
                    GAP => {}
                    usize::MAX => {}
                    probe => feed.set(s, probe, |out| {
                        out.extend_from_slice(&bytes);
                        known
                    }),
                }
                Ok::<(), Stop>(())
            },
        )
    });
    match result {
        Ok(Ok(())) => Ok(None),
        Ok(Err(stream::StreamError::Callback(Stop::Gone))) => Err(Gone),
        Ok(Err(stream::StreamError::Callback(Stop::Bad(why)))) => Ok(Some(why)),
        Ok(Err(stream::StreamError::Wellen(e))) => Ok(Some(flat(&e.to_string()))),
        Err(why) => Ok(Some(format!("the VCD parser failed: {why}"))),
    }
}

/// The last `#N` of a VCD: the last sample an ILA export wrote.
pub(super) fn last_time_step(path: &std::path::Path) -> Option<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(64 * 1024);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix('#')?.parse::<u64>().ok())
}

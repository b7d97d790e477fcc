//! The waveform reader: the hierarchy at open, the beats on a thread.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use wellen::{LoadOptions, SignalRef, SignalValueRef, stream};

use super::axis::{self, AxisInterface};
use super::beats::{PortSlots, Sampler, WaveFrame};
use super::{Timescale, WaveError, WaveFormat, WaveOptions};
use crate::contain::contain;

/// Frames per message from the reading thread.
pub(super) const BATCH_FRAMES: usize = 256;

/// What the reading thread sends.
#[derive(Debug)]
pub(super) enum Msg {
    Frames(Vec<WaveFrame>),
    /// An ILA capture's windows and cut frames, before its end.
    Ila(super::ila::IlaSummary),
    /// Something odd that did not stop reading: (time in ns, message).
    Warning(u64, String),
    /// Reading failed after the frames before it.
    Failed(WaveError),
    /// The end: (last time in ns, beats sampled).
    End(u64, u64),
}

/// A waveform opened as a capture: its interfaces (the ports) and its
/// frames in time order. Dropping it stops the reading thread.
#[derive(Debug)]
pub struct WaveStream {
    path: PathBuf,
    format: WaveFormat,
    interfaces: Vec<AxisInterface>,
    timescale: Timescale,
    rx: Receiver<Msg>,
    batch: std::vec::IntoIter<WaveFrame>,
    current: Option<WaveFrame>,
    warnings: Vec<(u64, String)>,
    end: Option<(u64, u64)>,
    file_bytes: u64,
    open_ms: f64,
    /// The reading thread, joined on drop once it has said its last.
    thread: Option<std::thread::JoinHandle<()>>,
    /// An ILA capture's windows, once read.
    ila: Option<super::ila::IlaSummary>,
}

impl Drop for WaveStream {
    fn drop(&mut self) {
        // After the end or a failure the thread is returning: wait for it,
        // so nothing of it outlives the stream. Before that it may be deep
        // in a long parse; it stops at its next send, on its own.
        if self.end.is_some()
            && let Some(t) = self.thread.take()
        {
            let _ = t.join();
        }
    }
}

impl WaveStream {
    /// Reads the hierarchy, finds the interfaces, and starts streaming
    /// their signals on a thread.
    pub fn open(path: &Path, format: WaveFormat, options: &WaveOptions) -> Result<Self, WaveError> {
        let started = std::time::Instant::now();
        let read_err = |e: wellen::WellenError| WaveError::Read {
            path: path.to_path_buf(),
            message: format!("its header cannot be read: {}", flat(&e.to_string())),
        };
        let load = LoadOptions {
            multi_thread: false,
            remove_scopes_with_empty_name: false,
        };
        super::check::before_parsing(path, format)?;
        if format == WaveFormat::IlaCsv {
            return Self::open_ila_csv(path, options, started);
        }
        let wave = contain(|| stream::read_from_file(path, &load))
            .map_err(|why| WaveError::Read {
                path: path.to_path_buf(),
                message: format!("the {format} parser failed on the header: {why}"),
            })?
            .map_err(read_err)?;
        let h = wave.hierarchy();
        super::check::widths(path, h)?;
        if let Some(ila) = contain(|| super::ila_open::vcd_probes(h)).ok().flatten() {
            return Self::open_ila_vcd(path, wave, ila, options, started);
        }
        let timescale = h
            .timescale()
            .and_then(|t| Some(Timescale::new(t.factor, t.unit.to_exponent()?)))
            .unwrap_or(Timescale::new(1, -9));
        let found = contain(|| axis::find(h, options.clock.as_deref()))
            .map_err(|why| WaveError::Read {
                path: path.to_path_buf(),
                message: format!("the hierarchy could not be read: {why}"),
            })?
            .map_err(|message| WaveError::Clock {
                path: path.to_path_buf(),
                message,
            })?;
        let mut interfaces = found.interfaces;
        if let Some(want) = &options.axis {
            let names = interfaces
                .iter()
                .map(|i| i.name.clone())
                .collect::<Vec<_>>()
                .join(", ");
            let dotted = format!(".{want}");
            interfaces.retain(|i| i.name == *want || i.scope == *want || i.name.ends_with(&dotted));
            if interfaces.is_empty() {
                return Err(WaveError::no_such_axis(path, want, names));
            }
        }
        if interfaces.is_empty() {
            if found.unclocked.is_empty() {
                return Err(WaveError::NoInterface {
                    path: path.to_path_buf(),
                });
            }
            return Err(WaveError::NoClock {
                path: path.to_path_buf(),
                names: found
                    .unclocked
                    .iter()
                    .map(|u| u.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        if interfaces.len() > 255 {
            return Err(WaveError::TooMany {
                path: path.to_path_buf(),
                count: interfaces.len(),
            });
        }
        let open_ms = started.elapsed().as_secs_f64() * 1e3;
        let job = Job {
            path: path.to_path_buf(),
            format,
            interfaces: interfaces.clone(),
            timescale,
            cut_mid_line: format == WaveFormat::Vcd && ends_mid_line(path),
        };
        // A panic past the one `run` contains itself (in the sampler, not
        // the parser) still ends the stream with an error.
        let (rx, thread) =
            Self::spawn_reader(path, "the waveform reader", move |tx| job.run(wave, tx))?;
        Ok(Self::reading(
            path, format, interfaces, timescale, rx, thread, open_ms,
        ))
    }

    /// The reading thread of the stream of `path`: `run` sends its
    /// messages, and a panic in it (`reader` names what failed) ends the
    /// stream with an error, never with an end that looks whole.
    pub(super) fn spawn_reader(
        path: &Path,
        reader: &'static str,
        run: impl FnOnce(&SyncSender<Msg>) + Send + 'static,
    ) -> Result<(Receiver<Msg>, std::thread::JoinHandle<()>), WaveError> {
        let (tx, rx) = sync_channel(8);
        let thread_path = path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("rocescope-wave".into())
            .spawn(move || {
                if let Err(why) = contain(|| run(&tx)) {
                    let _ = tx.send(Msg::Failed(WaveError::Read {
                        path: thread_path,
                        message: format!("{reader} failed: {why}"),
                    }));
                }
            })
            .map_err(|e| WaveError::Read {
                path: path.to_path_buf(),
                message: format!("cannot start the reading thread: {e}"),
            })?;
        Ok((rx, thread))
    }

    /// A stream whose thread has started.
    pub(super) fn reading(
        path: &Path,
        format: WaveFormat,
        interfaces: Vec<AxisInterface>,
        timescale: Timescale,
        rx: Receiver<Msg>,
        thread: std::thread::JoinHandle<()>,
        open_ms: f64,
    ) -> Self {
        Self {
            path: path.to_path_buf(),
            format,
            interfaces,
            timescale,
            rx,
            batch: Vec::new().into_iter(),
            current: None,
            warnings: Vec::new(),
            end: None,
            file_bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
            open_ms,
            thread: Some(thread),
            ila: None,
        }
    }

    /// VCD, FST, or an ILA capture's CSV or VCD.
    pub fn format(&self) -> WaveFormat {
        self.format
    }

    /// An ILA capture's windows, sample clock and frames cut at window
    /// edges, once the end was reached; `None` for a simulator's waveform.
    pub fn ila(&self) -> Option<&super::ila::IlaSummary> {
        self.ila.as_ref()
    }

    /// The interfaces decoded, port `i` being `interfaces()[i]`.
    pub fn interfaces(&self) -> &[AxisInterface] {
        &self.interfaces
    }

    /// The file's time unit.
    pub fn timescale(&self) -> Timescale {
        self.timescale
    }

    /// Milliseconds taken to read the hierarchy and find the interfaces.
    pub fn open_ms(&self) -> f64 {
        self.open_ms
    }

    /// Warnings so far, as (time in ns, message).
    pub fn warnings(&self) -> &[(u64, String)] {
        &self.warnings
    }

    /// At the end: (time of the last change in ns, beats sampled).
    pub fn end(&self) -> Option<(u64, u64)> {
        self.end
    }

    /// The file's size once the end was reached, 0 before: the reader
    /// cannot say how far into the body the thread is.
    pub fn bytes_read(&self) -> u64 {
        if self.end.is_some() {
            self.file_bytes
        } else {
            0
        }
    }

    /// The next frame in time order (its time in ns), `Ok(None)` at the end.
    pub fn next_frame(&mut self) -> Result<Option<(u64, &WaveFrame)>, WaveError> {
        match self.advance()? {
            Some(ts_ns) => Ok(self.current.as_ref().map(|f| (ts_ns, f))),
            None => Ok(None),
        }
    }

    /// The frame [`advance`](Self::advance) moved to.
    pub fn current(&self) -> Option<&WaveFrame> {
        self.current.as_ref()
    }

    /// Moves to the next frame in time order and returns its time in ns
    /// (the frame is [`current`](Self::current)), `Ok(None)` at the end.
    pub fn advance(&mut self) -> Result<Option<u64>, WaveError> {
        loop {
            if let Some(f) = self.batch.next() {
                let ts_ns = self.timescale.to_ns(f.time);
                self.current = Some(f);
                return Ok(Some(ts_ns));
            }
            self.current = None;
            if self.end.is_some() {
                return Ok(None);
            }
            match self.rx.recv() {
                Ok(Msg::Frames(v)) => self.batch = v.into_iter(),
                Ok(Msg::Ila(summary)) => self.ila = Some(summary),
                Ok(Msg::Warning(t, m)) => self.warnings.push((t, m)),
                Ok(Msg::Failed(e)) => {
                    self.end = Some((0, 0));
                    return Err(e);
                }
                Ok(Msg::End(t, beats)) => self.end = Some((t, beats)),
                Err(_) => {
                    self.end = Some((0, 0));
                    return Err(WaveError::Read {
                        path: self.path.clone(),
                        message: "the reading thread stopped".into(),
                    });
                }
            }
        }
    }
}

/// What the reading thread needs.
struct Job {
    path: PathBuf,
    format: WaveFormat,
    interfaces: Vec<AxisInterface>,
    timescale: Timescale,
    /// A VCD whose last line has no newline: cut while being written or
    /// copied (a VCD has no end marker; a whole one ends its last line).
    cut_mid_line: bool,
}

/// Whether the file's last byte is not a newline.
pub(super) fn ends_mid_line(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let mut last = [0u8; 1];
    f.seek(SeekFrom::End(-1)).is_ok() && f.read_exact(&mut last).is_ok() && last[0] != b'\n'
}

/// The receiver went away: stop streaming.
#[derive(Debug)]
pub(super) struct Gone;

impl Job {
    fn run<R: std::io::BufRead + std::io::Seek>(
        self,
        mut wave: stream::StreamingWaveform<R>,
        tx: &SyncSender<Msg>,
    ) {
        // Slots: each distinct signal once, looked up by its index.
        let mut refs: Vec<SignalRef> = Vec::new();
        let mut slot = |r: SignalRef| match refs.iter().position(|&x| x == r) {
            Some(i) => i,
            None => {
                refs.push(r);
                refs.len() - 1
            }
        };
        let ports: Vec<PortSlots> = self
            .interfaces
            .iter()
            .map(|i| PortSlots {
                tdata: slot(i.tdata),
                tvalid: slot(i.tvalid),
                tlast: slot(i.tlast),
                tkeep: i.tkeep.map(&mut slot),
                tready: i.tready.map(&mut slot),
                clock: slot(i.clock),
                width_bits: i.width_bits,
            })
            .collect();
        let max_index = refs.iter().map(|r| r.index()).max().unwrap_or(0);
        let mut slot_of = vec![usize::MAX; max_index + 1];
        for (i, r) in refs.iter().enumerate() {
            slot_of[r.index()] = i;
        }
        let mut sampler = Sampler::new(refs.len(), &ports);
        let mut out: Vec<WaveFrame> = Vec::with_capacity(BATCH_FRAMES);
        let mut warned = 0usize;
        let ts = self.timescale;
        let format = self.format;
        let result = contain(|| {
            wave.stream_changes(
                stream::Filter::include_signals(&refs),
                |time, signal, value| {
                    let Some(&s) = slot_of.get(signal.index()) else {
                        return Ok(());
                    };
                    if s == usize::MAX {
                        return Ok(());
                    }
                    sampler.change(time, s, |v| little_endian(&value, v));
                    flush_warnings(&mut sampler, &mut warned, ts, tx)?;
                    while let Some(f) = sampler.pop_ready(false) {
                        out.push(f);
                        if out.len() >= BATCH_FRAMES {
                            let full =
                                std::mem::replace(&mut out, Vec::with_capacity(BATCH_FRAMES));
                            tx.send(Msg::Frames(full)).map_err(|_| Gone)?;
                        }
                    }
                    Ok::<(), Gone>(())
                },
            )
        });
        // Why the body stopped before its end: (what, wellen's words).
        let failed = match result {
            Ok(Ok(())) => None,
            Ok(Err(stream::StreamError::Callback(Gone))) => return,
            // A VCD whose last line is cut was cut while written or
            // copied: that is what stopped the parser.
            Ok(Err(stream::StreamError::Wellen(e))) if self.cut_mid_line => Some((
                "is cut short at",
                format!("its last line is incomplete: {}", flat(&e.to_string())),
            )),
            Ok(Err(stream::StreamError::Wellen(e))) => {
                Some(("cannot be read past", flat(&e.to_string())))
            }
            Err(why) => Some((
                "cannot be read past",
                format!("the {format} parser failed: {why}"),
            )),
        };
        sampler.finish();
        let last_ns = sampler.time().map_or(0, |t| ts.to_ns(t));
        if flush_warnings(&mut sampler, &mut warned, ts, tx).is_err() {
            return;
        }
        while let Some(f) = sampler.pop_ready(true) {
            out.push(f);
        }
        let open: Vec<(u8, u64, usize)> = sampler.open_frames().collect();
        if !out.is_empty() && tx.send(Msg::Frames(out)).is_err() {
            return;
        }
        let mut open_text = Vec::new();
        for (port, start, len) in open {
            let name = self
                .interfaces
                .get(usize::from(port))
                .map_or("?", |i| i.name.as_str());
            open_text.push(format!(
                "a frame on {name} (first beat at {} ns, {len} bytes, no tlast yet) not kept",
                ts.to_ns(start)
            ));
        }
        let open_text = open_text.join("; ");
        let cut = |what: &str, why: String| {
            let open = if open_text.is_empty() {
                String::new()
            } else {
                format!("; {open_text}")
            };
            Msg::Failed(WaveError::Read {
                path: self.path.clone(),
                message: format!(
                    "the waveform {what} {last_ns} ns ({why}); every whole frame before it was kept{open}"
                ),
            })
        };
        let last = match failed {
            Some((what, why)) => cut(what, why),
            None if self.cut_mid_line => {
                cut("is cut short at", "its last line is incomplete".into())
            }
            None => {
                if !open_text.is_empty() {
                    let message = format!("the waveform ends at {last_ns} ns: {open_text}");
                    if tx.send(Msg::Warning(last_ns, message)).is_err() {
                        return;
                    }
                }
                Msg::End(last_ns, sampler.beats)
            }
        };
        let _ = tx.send(last);
    }
}

pub(super) fn flush_warnings(
    sampler: &mut Sampler,
    sent: &mut usize,
    ts: Timescale,
    tx: &SyncSender<Msg>,
) -> Result<(), Gone> {
    while *sent < sampler.warnings.len() {
        let w = &sampler.warnings[*sent];
        let t = ts.to_ns(w.time);
        let message = format!("port {} at {t} ns: {}", w.port, w.message);
        tx.send(Msg::Warning(t, message)).map_err(|_| Gone)?;
        *sent += 1;
    }
    if sampler.warnings.len() > 1000 {
        sampler.warnings.clear();
        *sent = 0;
    }
    Ok(())
}

/// Writes a value as little-endian bytes (X and Z as 0); true when every
/// bit was 0 or 1.
pub(super) fn little_endian(value: &SignalValueRef<'_>, out: &mut Vec<u8>) -> bool {
    let SignalValueRef::BitVec(bits) = value else {
        return false;
    };
    if let Some(be) = bits.be_bytes() {
        out.extend(be.iter().rev());
        return true;
    }
    let width = bits.width();
    out.resize(width.div_ceil(8) as usize, 0);
    let mut known = true;
    for i in 0..width {
        match u8::from(bits.get_bit(i)) {
            0 => {}
            1 => out[(i / 8) as usize] |= 1 << (i % 8),
            _ => known = false,
        }
    }
    known
}

/// wellen's messages span lines; ours are one.
pub(super) fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

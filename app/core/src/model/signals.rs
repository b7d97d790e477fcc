//! The model's part for waveform signals: their commands, and the
//! waveform cursor linked to the packet selection.

use super::Model;
use crate::Command;
use crate::signals::Signals;

impl Model {
    /// The waveform's signals, when one is open beside the packets.
    pub fn signals(&self) -> Option<&Signals> {
        self.signals.as_ref()
    }

    /// The waveform cursor (capture time): where it was moved to, else the
    /// selected packet's time (its first beat, for a waveform's frames).
    pub fn wave_cursor_ns(&self) -> Option<u64> {
        self.signals
            .as_ref()
            .and_then(|s| s.cursor_override())
            .or_else(|| {
                self.selected
                    .and_then(|r| self.store.row(r))
                    .map(|r| r.ts_ns)
            })
    }

    /// Waits until every chosen signal is loaded (tests, headless drawing).
    pub fn wait_signals_loaded(&mut self, timeout: std::time::Duration) -> bool {
        self.signals.as_mut().is_none_or(|s| s.wait_loaded(timeout))
    }

    pub(super) fn apply_signals(&mut self, cmd: Command) {
        if let Command::OpenSignals {
            path,
            offset_ns,
            sample_clock_hz,
            max_held_bytes,
        } = &cmd
        {
            let options = rocescope_replay::wave::WaveOptions {
                sample_clock_hz: *sample_clock_hz,
                max_held_bytes: *max_held_bytes,
                ..Default::default()
            };
            match Signals::open(path, *offset_ns, &options) {
                Ok((s, warning)) => {
                    if let Some(w) = warning {
                        self.status = w.to_string();
                    }
                    self.signals = Some(s);
                }
                Err(e) => self.status = format!("signals: {e}"),
            }
            return;
        }
        let Some(s) = self.signals.as_mut() else {
            self.status = "no waveform open: signals need `open WAVE` or `--wave WAVE`".into();
            return;
        };
        let result = match cmd {
            Command::SignalSearch(text) => {
                s.set_search(text);
                Ok(())
            }
            Command::AddSignal(path) => s.add(&path),
            Command::RemoveSignal(path) => s.remove(&path),
            Command::SignalFormat { path, radix } => s.set_radix(&path, radix),
            Command::WaveSpan(ns) => {
                s.set_span(ns);
                Ok(())
            }
            Command::WaveCursor(ts_ns) => {
                // The packet at or before the cursor.
                let row = self.store.seek_time(ts_ns.saturating_add(1));
                if row > self.store.first_row() {
                    self.select_row(row - 1);
                }
                if let Some(s) = self.signals.as_mut() {
                    s.set_cursor(Some(ts_ns));
                }
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(e) = result {
            self.status = e.to_string();
        }
    }
}

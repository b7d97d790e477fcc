//! Aligning a waveform with a capture of the same traffic, by content.
//!
//! Each frame is known by its length and its first [`KEY_BYTES`] bytes
//! (through the BTH of a RoCEv2/IPv4 packet, so a header-only capture from
//! the card's sniffer matches too); a capture frame takes the earliest
//! unused waveform frame with the same key, so resends of identical bytes
//! pair off in order. The offset from waveform time to capture time is the
//! median of the matched pairs' differences, and the spread says how far the
//! others lie from it. For the card's converted pcap, whose times are packet
//! indexes, the offset means nothing (`ordinal`): the match itself is the
//! result.

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

use super::WaveOptions;
use crate::capture::{CaptureError, CaptureReader, TimeBase};

/// Bytes of a frame compared: Ethernet, IPv4, UDP and the BTH.
pub const KEY_BYTES: usize = 54;

/// How a waveform lines up with a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alignment {
    /// Capture time minus waveform time (ns), the median over matches.
    pub offset_ns: i64,
    /// The largest distance of a match from that offset (ns).
    pub spread_ns: u64,
    /// Capture frames matched to a waveform frame.
    pub matched: u64,
    /// Capture frames with no waveform frame of the same bytes.
    pub capture_unmatched: u64,
    /// Waveform frames no capture frame took.
    pub wave_unmatched: u64,
    /// The capture's times are packet indexes: the offset is not a time.
    pub ordinal: bool,
}

impl std::fmt::Display for Alignment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The counts first: a narrow status line cuts the end.
        write!(
            f,
            "waveform: {} matched, {} capture / {} waveform frames unmatched",
            self.matched, self.capture_unmatched, self.wave_unmatched
        )?;
        if self.matched == 0 {
            write!(f, ", not aligned")
        } else if self.ordinal {
            write!(f, ", aligned by content (capture times are packet indexes)")
        } else if self.offset_ns >= WALL_CLOCK_NS {
            write!(
                f,
                ", {} (the capture on wall-clock time; spread {} ns)",
                self.offset_text(),
                self.spread_ns
            )
        } else {
            write!(f, ", {} (spread {} ns)", self.offset_text(), self.spread_ns)
        }
    }
}

/// An offset this large is not a delay between two clocks: the capture's
/// times are wall-clock (Unix) times and the waveform's count from its
/// simulation's time 0.
const WALL_CLOCK_NS: i64 = 86_400 * 1_000_000_000;

impl Alignment {
    /// The offset in words: `capture = waveform +5000 ns` for two clocks of
    /// the same kind, `+12.000000500 s` past a second; a capture on wall-clock
    /// time and a waveform from time 0 as the time its time 0 was.
    pub fn offset_text(&self) -> String {
        let d = self.offset_ns;
        if d >= WALL_CLOCK_NS {
            format!(
                "waveform time 0 = capture time {}",
                crate::text::utc_text(d.unsigned_abs())
            )
        } else if d.unsigned_abs() >= 1_000_000_000 {
            let a = d.unsigned_abs();
            let sign = if d < 0 { '-' } else { '+' };
            format!(
                "capture = waveform {sign}{}.{:09} s",
                a / 1_000_000_000,
                a % 1_000_000_000
            )
        } else {
            format!("capture = waveform {d:+} ns")
        }
    }
}

fn key(len: u32, data: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    len.hash(&mut h);
    data[..data.len().min(KEY_BYTES)].hash(&mut h);
    h.finish()
}

/// Aligns the waveform `wave` (its interfaces chosen by `options`) with the
/// capture `capture`. Either file failing to read is an error naming it.
pub fn align(
    capture: &Path,
    wave: &Path,
    options: &WaveOptions,
) -> Result<Alignment, CaptureError> {
    let mut w = CaptureReader::open_with(wave, options)?;
    if w.wave().is_none() {
        return Err(CaptureError::Unsupported {
            offset: 0,
            what: format!("{} is not a waveform (VCD or FST)", wave.display()),
        });
    }
    let mut waiting: HashMap<u64, VecDeque<u64>> = HashMap::new();
    let mut wave_frames = 0u64;
    while let Some(f) = w.next_frame()? {
        waiting
            .entry(key(f.origlen, f.data))
            .or_default()
            .push_back(f.ts_ns);
        wave_frames += 1;
    }
    let mut c = CaptureReader::open(capture)?;
    let mut diffs: Vec<i128> = Vec::new();
    let mut capture_unmatched = 0u64;
    while let Some(f) = c.next_frame()? {
        match waiting
            .get_mut(&key(f.origlen, f.data))
            .and_then(VecDeque::pop_front)
        {
            Some(wave_ns) => diffs.push(i128::from(f.ts_ns) - i128::from(wave_ns)),
            None => capture_unmatched += 1,
        }
    }
    // The reader settles the time base by looking ahead at open.
    let ordinal = c.time_base() == TimeBase::Ordinal;
    let matched = diffs.len() as u64;
    let mut sorted = diffs.clone();
    sorted.sort_unstable();
    let offset = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
    let spread = diffs
        .iter()
        .map(|d| (d - offset).unsigned_abs())
        .max()
        .unwrap_or(0);
    Ok(Alignment {
        offset_ns: i64::try_from(offset).unwrap_or(i64::MAX),
        spread_ns: u64::try_from(spread).unwrap_or(u64::MAX),
        matched,
        capture_unmatched,
        wave_unmatched: wave_frames - matched,
        ordinal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned(offset_ns: i64) -> String {
        Alignment {
            offset_ns,
            spread_ns: 0,
            matched: 3,
            capture_unmatched: 0,
            wave_unmatched: 0,
            ordinal: false,
        }
        .to_string()
    }

    #[test]
    fn offsets_are_told_in_readable_words() {
        assert!(aligned(5_000).ends_with("capture = waveform +5000 ns (spread 0 ns)"));
        assert!(aligned(-20).ends_with("capture = waveform -20 ns (spread 0 ns)"));
        assert!(
            aligned(12_000_000_500).ends_with("capture = waveform +12.000000500 s (spread 0 ns)")
        );
        // The sample capture's wall-clock times beside a waveform from 0:
        // not "+1764400000000005662 ns".
        let wall = aligned(1_764_400_000_000_005_662);
        assert!(
            wall.contains("waveform time 0 = capture time 2025-11-29 07:06:40.000005662 UTC"),
            "{wall}"
        );
        assert!(!wall.contains("1764400000000005662"), "{wall}");
    }
}

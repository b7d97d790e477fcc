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
        } else {
            write!(
                f,
                ", capture = waveform {:+} ns (spread {} ns)",
                self.offset_ns, self.spread_ns
            )
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

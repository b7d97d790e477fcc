//! The payload codec's parts: one-byte enum codes and the little-endian
//! writer and reader every record's fields go through.

use super::*;

// ------------------------------------------------------------ enum codes

pub(super) fn slot_code(s: SlotKind) -> u8 {
    match s {
        SlotKind::Aes => 0,
        SlotKind::Dpi => 1,
        SlotKind::App => 2,
    }
}

pub(super) fn slot_from(c: u8) -> Option<SlotKind> {
    Some(match c {
        0 => SlotKind::Aes,
        1 => SlotKind::Dpi,
        2 => SlotKind::App,
        _ => return None,
    })
}

pub(super) fn verdict_code(v: Verdict) -> u8 {
    match v {
        Verdict::Pass => 0,
        Verdict::Drop => 1,
        Verdict::Transformed => 2,
    }
}

pub(super) fn verdict_from(c: u8) -> Option<Verdict> {
    Some(match c {
        0 => Verdict::Pass,
        1 => Verdict::Drop,
        2 => Verdict::Transformed,
        _ => return None,
    })
}

pub(super) fn qp_state_code(s: QpState) -> u8 {
    match s {
        QpState::Reset => 0,
        QpState::Init => 1,
        QpState::Rtr => 2,
        QpState::Rts => 3,
        QpState::Sqd => 4,
        QpState::Sqe => 5,
        QpState::Err => 6,
    }
}

pub(super) fn qp_state_from(c: u8) -> Option<QpState> {
    Some(match c {
        0 => QpState::Reset,
        1 => QpState::Init,
        2 => QpState::Rtr,
        3 => QpState::Rts,
        4 => QpState::Sqd,
        5 => QpState::Sqe,
        6 => QpState::Err,
        _ => return None,
    })
}

/// The code of a drop reason, as in payloads and the ISB custom option.
pub(crate) fn drop_reason_code(r: DropReason) -> u8 {
    match r {
        DropReason::QueueFull => 0,
        DropReason::CaptureLoss => 1,
        DropReason::Other => 2,
    }
}

/// The drop reason with this code, if known.
pub(crate) fn drop_reason_from(c: u8) -> Option<DropReason> {
    Some(match c {
        0 => DropReason::QueueFull,
        1 => DropReason::CaptureLoss,
        2 => DropReason::Other,
        _ => return None,
    })
}

pub(super) fn marker_code(k: MarkerKind) -> u8 {
    match k {
        MarkerKind::Reconnect => 0,
        MarkerKind::Start => 1,
        MarkerKind::Stop => 2,
    }
}

pub(super) fn marker_from(c: u8) -> Option<MarkerKind> {
    Some(match c {
        0 => MarkerKind::Reconnect,
        1 => MarkerKind::Start,
        2 => MarkerKind::Stop,
        _ => return None,
    })
}

// ------------------------------------------------------------ codec

/// Little-endian appender.
pub(super) struct Enc<'a>(pub(super) &'a mut Vec<u8>);

impl Enc<'_> {
    pub(super) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(super) fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// `u32` byte length, then the UTF-8 bytes. Longer texts (over 4 GiB)
    /// are cut at a character boundary rather than mis-framed.
    pub(super) fn str(&mut self, s: &str) {
        let mut end = s.len().min(u32::MAX as usize);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.u32(end as u32);
        self.0.extend_from_slice(&s.as_bytes()[..end]);
    }
}

/// Little-endian reader that names the field and offset of every failure.
pub(super) struct Dec<'a> {
    pub(super) b: &'a [u8],
    pub(super) at: usize,
    pub(super) what: &'static str,
}

impl<'a> Dec<'a> {
    pub(super) fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], RecordError> {
        let have = self.b.len().saturating_sub(self.at);
        match self.b.get(self.at..self.at.saturating_add(n)) {
            Some(s) => {
                self.at += n;
                Ok(s)
            }
            None => Err(RecordError::Truncated {
                what: self.what,
                field,
                offset: self.at,
                need: n,
                have,
            }),
        }
    }

    pub(super) fn array<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], RecordError> {
        let s = self.take(field, N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    pub(super) fn u8(&mut self, field: &'static str) -> Result<u8, RecordError> {
        Ok(self.array::<1>(field)?[0])
    }
    pub(super) fn u16(&mut self, field: &'static str) -> Result<u16, RecordError> {
        self.array(field).map(u16::from_le_bytes)
    }
    pub(super) fn u32(&mut self, field: &'static str) -> Result<u32, RecordError> {
        self.array(field).map(u32::from_le_bytes)
    }
    pub(super) fn u64(&mut self, field: &'static str) -> Result<u64, RecordError> {
        self.array(field).map(u64::from_le_bytes)
    }

    /// A one-byte enum code.
    pub(super) fn code<T>(
        &mut self,
        field: &'static str,
        f: fn(u8) -> Option<T>,
    ) -> Result<T, RecordError> {
        let offset = self.at;
        let c = self.u8(field)?;
        f(c).ok_or(RecordError::BadValue {
            what: self.what,
            field,
            offset,
            value: u64::from(c),
        })
    }

    pub(super) fn str(&mut self, field: &'static str) -> Result<String, RecordError> {
        let len = self.u32(field)? as usize;
        let offset = self.at;
        let bytes = self.take(field, len)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(RecordError::BadUtf8 {
                what: self.what,
                field,
                offset,
            }),
        }
    }
}

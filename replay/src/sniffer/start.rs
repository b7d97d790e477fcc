//! Does a 64-byte slot start an Ethernet frame, and how long is that frame?
//!
//! A dump stores no lengths, so every boundary decision rests on this check.
//! It is strict on purpose, so that payload bytes at a slot boundary are not
//! mistaken for a frame: a unicast source MAC, then (after at most two
//! 802.1Q / 802.1ad tags) IPv4 with a valid header checksum, IPv6 with a
//! known next header, ARP for IPv4 over Ethernet, or RoCEv1 (a GRH whose next
//! header is the BTH).

use super::filter::RtlView;

/// The smallest Ethernet frame without FCS; shorter frames are padded.
pub(crate) const MIN_FRAME_BYTES: u32 = 60;

/// The headers of a frame start, as far as the boundary search needs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameStart {
    /// Length on the wire from the headers (IP total / payload length, ARP
    /// 28 bytes), at least [`MIN_FRAME_BYTES`].
    pub(crate) full: u32,
    /// The frame as the card's filter sees it.
    pub(crate) view: RtlView,
}

/// Why bytes do not start a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotAFrame {
    /// The bytes end before the headers could be checked.
    Short,
    /// The headers are not those of a frame.
    Invalid,
}

#[inline]
fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    match b.get(i..i + 2) {
        Some(&[x, y]) => Some(u16::from_be_bytes([x, y])),
        _ => None,
    }
}

/// IPv6 next-header values accepted after a frame's IPv6 header.
fn known_next_header(nh: u8) -> bool {
    matches!(
        nh,
        0 | 4 | 6 | 17 | 41 | 43 | 44 | 50 | 51 | 58 | 59 | 60 | 132 | 135
    )
}

/// Checks the frame starting at `b[0]` (`b` holds at least its first slot
/// where the dump has it) and computes its full length.
pub(crate) fn parse_start(b: &[u8]) -> Result<FrameStart, NotAFrame> {
    use NotAFrame::{Invalid, Short};
    if b.len() < 14 {
        return Err(Short);
    }
    let src = &b[6..12];
    if src[0] & 1 != 0 || src.iter().all(|&x| x == 0) {
        return Err(Invalid);
    }
    let mut off = 12usize;
    let mut ethertype = u16_at(b, off).ok_or(Short)?;
    let mut tags = 0;
    while matches!(ethertype, 0x8100 | 0x88a8) {
        tags += 1;
        if tags > 2 {
            return Err(Invalid);
        }
        off += 4;
        ethertype = u16_at(b, off).ok_or(Short)?;
    }
    let l3 = off + 2;
    let end = match ethertype {
        0x0800 => {
            let vihl = *b.get(l3).ok_or(Short)?;
            let ihl = usize::from(vihl & 0x0f) * 4;
            if vihl >> 4 != 4 || ihl < 20 {
                return Err(Invalid);
            }
            let hdr = b.get(l3..l3 + ihl).ok_or(Short)?;
            let total = usize::from(u16_at(hdr, 2).ok_or(Short)?);
            if total < ihl || rocescope_decoders::ipv4_checksum(hdr) != 0 {
                return Err(Invalid);
            }
            l3 + total
        }
        0x86dd | 0x8915 => {
            let hdr = b.get(l3..l3 + 40).ok_or(Short)?;
            let payload = usize::from(u16_at(hdr, 4).ok_or(Short)?);
            let nh = hdr[6];
            let ok_nh = if ethertype == 0x8915 {
                nh == 0x1b
            } else {
                known_next_header(nh)
            };
            if hdr[0] >> 4 != 6 || !ok_nh || hdr[8] == 0xff {
                return Err(Invalid);
            }
            l3 + 40 + payload
        }
        0x0806 => {
            let hdr = b.get(l3..l3 + 8).ok_or(Short)?;
            let ok = hdr[..6] == [0, 1, 8, 0, 6, 4] && matches!(u16_at(hdr, 6), Some(1 | 2));
            if !ok {
                return Err(Invalid);
            }
            l3 + 28
        }
        _ => return Err(Invalid),
    };
    let full = u32::try_from(end).unwrap_or(u32::MAX).max(MIN_FRAME_BYTES);
    Ok(FrameStart {
        full,
        view: RtlView::of(b),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4(total: u16) -> Vec<u8> {
        let mut f = vec![0u8; 64];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12] = 0x08;
        f[14] = 0x45;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        let sum = rocescope_decoders::ipv4_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&sum.to_be_bytes());
        f
    }

    #[test]
    fn ipv4_lengths_and_checks() {
        assert_eq!(parse_start(&ipv4(1000)).map(|s| s.full), Ok(1014));
        assert_eq!(parse_start(&ipv4(28)).map(|s| s.full), Ok(60));
        let mut bad = ipv4(1000);
        bad[25] ^= 1;
        assert_eq!(parse_start(&bad), Err(NotAFrame::Invalid));
        let mut mcast = ipv4(1000);
        mcast[6] = 1;
        assert_eq!(parse_start(&mcast), Err(NotAFrame::Invalid));
        assert_eq!(parse_start(&ipv4(1000)[..20]), Err(NotAFrame::Short));
        assert_eq!(parse_start(&[0u8; 64]), Err(NotAFrame::Invalid));
        assert_eq!(parse_start(&[]), Err(NotAFrame::Short));
    }
}

//! Block framing: `type | length | body | length`, checked before a block
//! is read, and the section's byte order.

use super::consts::*;
use crate::capture::{CaptureError, MAX_PCAPNG_BLOCK_BYTES};
use crate::endian::u32_at;

/// A block whose framing has been checked and which is wholly buffered.
#[derive(Debug, Clone, Copy)]
pub(super) struct Framed {
    pub(super) block_type: u32,
    pub(super) len: u32,
    pub(super) big_endian: bool,
    /// The first bytes of the block (zero-padded past its end), enough for
    /// every fixed header this reader decodes.
    pub(super) head: [u8; HEAD_BYTES],
}

/// Bytes of [`Framed::head`]: the EPB header is the longest at 28.
pub(super) const HEAD_BYTES: usize = 28;

/// Checks the framing of the block at the start of `d`: `Some` if it is
/// valid and wholly in `d`, `None` if more data is needed (or the length
/// is over the limit, which the slow path handles), an error if it cannot
/// be right.
#[inline(always)]
pub(super) fn framing(
    d: &[u8],
    section_be: bool,
    off: u64,
) -> Result<Option<Framed>, CaptureError> {
    let Some(first) = d.first_chunk::<BLOCK_FRAMING_BYTES>() else {
        return Ok(None);
    };
    let be = if u32_at(first, 0, false) == SHB_TYPE {
        section_byte_order(first, off)?
    } else {
        section_be
    };
    let block_type = u32_at(first, 0, be);
    let len = u32_at(first, 4, be);
    check_length(off, block_type, len)?;
    let len_usize = len as usize;
    if len > MAX_PCAPNG_BLOCK_BYTES || d.len() < len_usize {
        return Ok(None);
    }
    let trailer = u32_at(d, len_usize - 4, be);
    if trailer != len {
        return Err(CaptureError::BlockLengthMismatch {
            offset: off,
            len,
            trailer,
        });
    }
    let mut head = [0u8; HEAD_BYTES];
    match d.first_chunk::<HEAD_BYTES>() {
        // A fixed-size copy (every packet block is this long), not a call.
        Some(h) if len_usize >= HEAD_BYTES => head = *h,
        _ => {
            let n = len_usize.min(HEAD_BYTES);
            head[..n].copy_from_slice(&d[..n]);
        }
    }
    Ok(Some(Framed {
        block_type,
        len,
        big_endian: be,
        head,
    }))
}

/// Byte order of the section whose header starts at `b[0]` (12 bytes).
pub(super) fn section_byte_order(b: &[u8], offset: u64) -> Result<bool, CaptureError> {
    match u32_at(b, 8, false) {
        BOM => Ok(false),
        m if m == BOM.swap_bytes() => Ok(true),
        _ => Err(CaptureError::ByteOrder {
            offset,
            bom: u32_at(b, 8, true),
        }),
    }
}

/// Rejects lengths no block can have. The upper limit is checked by the
/// caller, which decides between error and cut-tail warning.
#[inline]
pub(super) fn check_length(offset: u64, block_type: u32, len: u32) -> Result<(), CaptureError> {
    let min = match block_type {
        SHB_TYPE => 28,
        IDB_TYPE => 20,
        EPB_TYPE | PB_TYPE => 32,
        SPB_TYPE => 16,
        _ => 12,
    };
    if len >= min && (len.is_multiple_of(4) || len > MAX_PCAPNG_BLOCK_BYTES) {
        return Ok(());
    }
    Err(length_error(offset, block_type, len, min))
}

/// Why `len` is no length for the block (kept out of line: the check
/// above runs for every block).
#[cold]
#[inline(never)]
fn length_error(offset: u64, block_type: u32, len: u32, min: u32) -> CaptureError {
    let reason = if len < min {
        format!(
            "a pcapng {} needs at least {min} bytes",
            block_name(block_type)
        )
    } else {
        "not a multiple of 4".to_owned()
    };
    CaptureError::BlockLength {
        offset,
        len,
        reason,
    }
}

pub(super) fn block_name(block_type: u32) -> &'static str {
    match block_type {
        SHB_TYPE => "SHB",
        IDB_TYPE => "IDB",
        PB_TYPE => "PB",
        SPB_TYPE => "SPB",
        EPB_TYPE => "EPB",
        NRB_TYPE => "NRB",
        ISB_TYPE => "ISB",
        CUSTOM_BLOCK_TYPE | CUSTOM_BLOCK_NOCOPY_TYPE => "custom block",
        _ => "block",
    }
}

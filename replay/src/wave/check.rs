//! Cheap checks of a waveform before its bytes reach the parsers.
//!
//! An FST is a list of blocks, each a type byte and a big-endian 64-bit
//! length; fst-reader trusts those lengths, and the counts inside them, to
//! seek and to size its buffers, so a damaged one asks for terabytes or
//! reads past the end. Walking the blocks costs a few small reads per block
//! (an FST of a gigabyte has some thousands), and finds what would make
//! the parser allocate without bound: a block longer than the file, a
//! compressed part that claims to grow beyond what its compression can, a
//! count of items larger than the bytes that hold them, a block naming
//! more signals than the file's geometry has.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::{WaveError, WaveFormat};

/// The most any byte of deflate (zlib, gzip) output can come from.
const DEFLATE_RATIO: u64 = 1032;
/// The most one byte of LZ4 input can expand to.
const LZ4_RATIO: u64 = 255;

/// FST block types (fstapi.h, `FST_BL_*`).
mod block {
    pub const HEADER: u8 = 0;
    pub const VCDATA: u8 = 1;
    pub const BLACKOUT: u8 = 2;
    pub const GEOM: u8 = 3;
    pub const HIER: u8 = 4;
    pub const VCDATA_DYN_ALIAS: u8 = 5;
    pub const HIER_LZ4: u8 = 6;
    pub const HIER_LZ4DUO: u8 = 7;
    pub const VCDATA_DYN_ALIAS2: u8 = 8;
    pub const ZWRAPPER: u8 = 254;
    pub const SKIP: u8 = 255;
}

/// The FST header block's length field.
const HEADER_LENGTH: u64 = 329;

/// What can be told of `path` without parsing it.
pub(crate) fn before_parsing(path: &Path, format: WaveFormat) -> Result<(), WaveError> {
    let fail = |message: String| WaveError::Read {
        path: path.to_path_buf(),
        message,
    };
    let mut file = File::open(path).map_err(|e| fail(e.to_string()))?;
    let len = file.metadata().map_err(|e| fail(e.to_string()))?.len();
    if len == 0 {
        return Err(fail("the file is empty".into()));
    }
    match format {
        // wellen reads a VCD's header line by line and its body as a
        // stream: nothing in it sizes a buffer ahead.
        WaveFormat::Vcd | WaveFormat::IlaVcd => Ok(()),
        // Read a line at a time, each bounded (`ila::CsvReader`).
        WaveFormat::IlaCsv => Ok(()),
        WaveFormat::Fst => fst_blocks(&mut file, len).map_err(|e| fail(e.to_string())),
    }
}

/// Why an FST's blocks cannot be read, where.
#[derive(Debug)]
struct Bad(String);

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn name(ty: u8) -> &'static str {
    match ty {
        block::HEADER => "header block",
        block::VCDATA | block::VCDATA_DYN_ALIAS | block::VCDATA_DYN_ALIAS2 => "value-change block",
        block::BLACKOUT => "blackout block",
        block::GEOM => "geometry block",
        block::HIER | block::HIER_LZ4 | block::HIER_LZ4DUO => "hierarchy block",
        block::ZWRAPPER => "gzip wrapper",
        _ => "block",
    }
}

/// Reads from a file at an offset, checked against its length.
struct At<'a> {
    file: &'a mut File,
    len: u64,
}

impl At<'_> {
    fn bytes<const N: usize>(&mut self, at: u64) -> Result<[u8; N], Bad> {
        if at.saturating_add(N as u64) > self.len {
            return Err(Bad(format!(
                "the file ends at byte {} inside a block",
                self.len
            )));
        }
        let mut b = [0u8; N];
        self.file
            .seek(SeekFrom::Start(at))
            .and_then(|_| self.file.read_exact(&mut b))
            .map_err(|e| Bad(format!("cannot read byte {at}: {e}")))?;
        Ok(b)
    }

    fn u64(&mut self, at: u64) -> Result<u64, Bad> {
        self.bytes::<8>(at).map(u64::from_be_bytes)
    }

    /// A LEB128 number at `at` and the bytes it took.
    fn varint(&mut self, at: u64) -> Result<(u64, u64), Bad> {
        let b = self.bytes::<10>(at).or_else(|_| {
            // Near the end: read what there is.
            let mut b = [0u8; 10];
            let have = self.len.saturating_sub(at).min(10) as usize;
            self.file
                .seek(SeekFrom::Start(at))
                .and_then(|_| self.file.read_exact(&mut b[..have]))
                .map_err(|e| Bad(format!("cannot read byte {at}: {e}")))?;
            Ok::<_, Bad>(b)
        })?;
        let mut v = 0u64;
        for (i, byte) in b.iter().enumerate() {
            v |= u64::from(byte & 0x7f)
                .checked_shl(7 * i as u32)
                .unwrap_or(0);
            if byte & 0x80 == 0 {
                return Ok((v, i as u64 + 1));
            }
        }
        Err(Bad(format!("a number at byte {at} runs past 10 bytes")))
    }
}

/// A compressed part of `stored` bytes said to hold `plain` bytes; equal
/// lengths mean it is stored as is.
fn expands(plain: u64, stored: u64, ratio: u64) -> bool {
    plain != stored && plain > stored.saturating_mul(ratio).saturating_add(64)
}

/// Walks an FST's blocks; see the module's words.
fn fst_blocks(file: &mut File, len: u64) -> Result<(), Bad> {
    let mut r = At { file, len };
    let mut at = 0u64;
    let mut signals: Option<u64> = None;
    // Value-change blocks' signal counts, checked once the geometry is known
    // (Icarus writes it last): (block offset, count).
    let mut vc_handles: Vec<(u64, u64)> = Vec::new();
    let mut blocks = 0u64;
    while at < len {
        let [ty] = r.bytes::<1>(at)?;
        let length = r.u64(at + 1).map_err(|_| {
            Bad(format!(
                "the {} at byte {at} is cut before its length",
                name(ty)
            ))
        })?;
        if ty == block::SKIP && length == 0 {
            break;
        }
        let known = matches!(
            ty,
            block::HEADER..=block::VCDATA_DYN_ALIAS2 | block::ZWRAPPER | block::SKIP
        );
        if !known {
            return Err(Bad(format!(
                "byte {at}: {ty} is not an FST block type (after {blocks} blocks)"
            )));
        }
        let left = len - at - 1;
        if length < 8 || length > left {
            return Err(Bad(format!(
                "the {} at byte {at} says it is {length} bytes long; {left} bytes are left in the file",
                name(ty)
            )));
        }
        // `s`: the section, after the type byte; its length field first.
        let s = at + 1;
        let bad = |what: String| Bad(format!("the {} at byte {at}: {what}", name(ty)));
        match ty {
            block::ZWRAPPER => {
                return Err(Bad(
                    "a gzip-wrapped FST, which rocescope does not read: its parser unpacks the \
                     whole file into memory and loops on a cut one; convert it with GTKWave's \
                     fst2vcd"
                        .into(),
                ));
            }
            block::HEADER if length != HEADER_LENGTH => {
                return Err(bad(format!("{length} bytes long, not {HEADER_LENGTH}")));
            }
            block::GEOM => {
                let plain = r.u64(s + 8)?;
                let handles = r.u64(s + 16)?;
                let stored = length.saturating_sub(24);
                if expands(plain, stored, DEFLATE_RATIO) || handles > plain {
                    return Err(bad(format!(
                        "{handles} signals in {plain} bytes from {stored} compressed"
                    )));
                }
                signals = Some(handles);
            }
            block::HIER | block::HIER_LZ4 | block::HIER_LZ4DUO => {
                let plain = r.u64(s + 8)?;
                let stored = length.saturating_sub(16);
                let ratio = match ty {
                    block::HIER => DEFLATE_RATIO,
                    block::HIER_LZ4 => LZ4_RATIO,
                    _ => LZ4_RATIO * LZ4_RATIO,
                };
                if stored < 10 || expands(plain, stored, ratio) {
                    return Err(bad(format!(
                        "{plain} bytes of names from {stored} compressed"
                    )));
                }
            }
            block::BLACKOUT => {
                let (count, _) = r.varint(s + 8)?;
                if count > length {
                    return Err(bad(format!("{count} blackouts in {length} bytes")));
                }
            }
            block::VCDATA | block::VCDATA_DYN_ALIAS | block::VCDATA_DYN_ALIAS2 => {
                if length < 32 + 24 {
                    return Err(bad(format!("{length} bytes long, too short")));
                }
                // The time table: its last 24 bytes say how it is stored.
                let end = s + length;
                let (plain, stored, items) = (r.u64(end - 24)?, r.u64(end - 16)?, r.u64(end - 8)?);
                if stored > length - 32 - 24
                    || items > plain
                    || expands(plain, stored, DEFLATE_RATIO)
                {
                    return Err(bad(format!(
                        "a time table of {items} times in {plain} bytes from {stored} compressed"
                    )));
                }
                // The frame (every signal's first value), then the changes:
                // each says how many signals it covers.
                let mut p = s + 32;
                let (frame_plain, n) = r.varint(p)?;
                p += n;
                let (frame_stored, n) = r.varint(p)?;
                p += n;
                let (frame_handles, n) = r.varint(p)?;
                p += n;
                if frame_stored > length || expands(frame_plain, frame_stored, DEFLATE_RATIO) {
                    return Err(bad(format!(
                        "a first-values frame of {frame_plain} bytes from {frame_stored} compressed"
                    )));
                }
                p = p.saturating_add(frame_stored);
                if p >= end {
                    return Err(bad("its first-values frame runs past its end".into()));
                }
                let (changes_handles, _) = r.varint(p)?;
                vc_handles.push((at, frame_handles.max(changes_handles)));
            }
            _ => {}
        }
        blocks += 1;
        at = s + length;
    }
    if let Some(signals) = signals {
        for (block_at, handles) in vc_handles {
            if handles > signals {
                return Err(Bad(format!(
                    "the value-change block at byte {block_at} covers {handles} signals; the file has {signals}"
                )));
            }
        }
    }
    Ok(())
}

/// The widest vector read: the least limit IEEE 1364 lets a tool set on a
/// vector's length. A VCD value shorter than its signal is extended to the
/// declared width, so a two-byte change of a signal declared 300 million
/// bits wide makes the parsers build 300 million bits; a limit on the width
/// bounds what each change of the body costs.
pub(crate) const MAX_VECTOR_BITS: u32 = 1 << 16;

/// A signal declared wider than [`MAX_VECTOR_BITS`], named; checked after
/// the header is read and before the body is.
pub(crate) fn widths(path: &Path, h: &wellen::Hierarchy) -> Result<(), WaveError> {
    let wide = crate::contain::contain(|| {
        h.all_vars().find_map(|v| {
            let bits = h[v].length(h)?;
            (bits > MAX_VECTOR_BITS).then(|| (h[v].full_name(h), bits))
        })
    })
    .map_err(|why| WaveError::Read {
        path: path.to_path_buf(),
        message: format!("the hierarchy could not be read: {why}"),
    })?;
    match wide {
        Some((name, bits)) => Err(WaveError::Read {
            path: path.to_path_buf(),
            message: format!(
                "its header declares signal {name} {bits} bits wide; rocescope reads vectors of \
                 at most {MAX_VECTOR_BITS} bits (the least limit IEEE 1364 lets a tool set)"
            ),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(bytes: &[u8]) -> Result<(), String> {
        let dir = rocescope_testkit::build_tmp().join("check");
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join(format!(
            "{:x}.fst",
            bytes.len() ^ bytes.first().copied().unwrap_or(0) as usize
        ));
        std::fs::write(&path, bytes).expect("write");
        let r = before_parsing(&path, WaveFormat::Fst).map_err(|e| e.to_string());
        let _ = std::fs::remove_file(&path);
        r
    }

    /// A block: type, big-endian length (of itself and what follows), body.
    fn blk(ty: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![ty];
        v.extend((body.len() as u64 + 8).to_be_bytes());
        v.extend(body);
        v
    }

    #[test]
    fn lengths_past_the_file_and_unknown_blocks_are_told_where() {
        let e = check(&blk(block::HEADER, &[0; 10])).expect_err("short header");
        assert!(
            e.contains("header block at byte 0") && e.contains("not 329"),
            "{e}"
        );
        let mut v = blk(block::HEADER, &[0; 321]);
        v.push(block::SKIP);
        v.extend(1u64.to_be_bytes());
        let e = check(&v).expect_err("skip shorter than its length field");
        assert!(e.contains("byte 330"), "{e}");
        let mut v = blk(block::HEADER, &[0; 321]);
        v.push(block::VCDATA);
        v.extend((1u64 << 40).to_be_bytes());
        let e = check(&v).expect_err("a block longer than the file");
        assert!(
            e.contains("value-change block at byte 330") && e.contains("1099511627776"),
            "{e}"
        );
        let mut v = blk(block::HEADER, &[0; 321]);
        v.extend(blk(77, &[0; 4]));
        let e = check(&v).expect_err("unknown type");
        assert!(e.contains("byte 330: 77 is not an FST block type"), "{e}");
    }

    #[test]
    fn counts_larger_than_their_bytes_are_refused() {
        // A geometry block claiming 2^40 signals in 3 bytes.
        let mut body = Vec::new();
        body.extend(3u64.to_be_bytes());
        body.extend((1u64 << 40).to_be_bytes());
        body.extend([1, 1, 1]);
        let e = check(&blk(block::GEOM, &body)).expect_err("geometry");
        assert!(e.contains("1099511627776 signals in 3 bytes"), "{e}");
        // A hierarchy claiming a terabyte of names from 20 bytes.
        let mut body = Vec::new();
        body.extend((1u64 << 40).to_be_bytes());
        body.extend([0; 20]);
        let e = check(&blk(block::HIER, &body)).expect_err("hierarchy");
        assert!(
            e.contains("1099511627776 bytes of names from 20 compressed"),
            "{e}"
        );
        // A stored (not compressed) geometry of 3 signals is fine.
        let mut body = Vec::new();
        body.extend(3u64.to_be_bytes());
        body.extend(3u64.to_be_bytes());
        body.extend([1, 1, 1]);
        assert_eq!(check(&blk(block::GEOM, &body)), Ok(()));
    }
}

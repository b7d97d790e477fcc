//! The analysis kept beside a saved index (`--index-dir`): its state once
//! the file was read to the end, so that a second open, `stats` or
//! `report` of the same capture need not read the frames again.
//!
//! One file, `analysis`, in the capture's folder: a header naming the
//! capture as it was (path, size, modification time) and rocescope's
//! version, then the analyzer's own bytes with their length and checksum.
//! It stands apart from the manifest, so that an analysis made later (a
//! first open that kept rows only, or other settings) is added without
//! writing the index again; it is written to a temporary name then
//! renamed, so a killed write leaves the last whole one or none.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::saved::{CaptureId, FORMAT, checksum};

const MAGIC: &[u8; 8] = b"RSANALY\n";
const FILE: &str = "analysis";
/// The payload is summed a block at a time, as it streams: the state is
/// never held as bytes whole (it can be as large as the index).
const BLOCK: usize = 1 << 20;

/// The header: what the analysis belongs to; its last 16 bytes are the
/// payload's length and checksum.
fn header(id: &CaptureId, len: u64, sum: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(128);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&FORMAT.to_le_bytes());
    let version = env!("CARGO_PKG_VERSION").as_bytes();
    h.extend_from_slice(&(version.len() as u32).to_le_bytes());
    h.extend_from_slice(version);
    let path = id.path.as_os_str().as_encoded_bytes();
    h.extend_from_slice(&(path.len() as u32).to_le_bytes());
    h.extend_from_slice(path);
    h.extend_from_slice(&id.size.to_le_bytes());
    h.extend_from_slice(&id.mtime_s.to_le_bytes());
    h.extend_from_slice(&id.mtime_ns.to_le_bytes());
    h.extend_from_slice(&len.to_le_bytes());
    h.extend_from_slice(&sum.to_le_bytes());
    h
}

/// The payload's length and checksum, taken as it streams: `checksum` of
/// each [`BLOCK`], then of those sums.
#[derive(Default)]
struct Summing {
    block: Vec<u8>,
    sums: Vec<u8>,
    len: u64,
}

impl Summing {
    fn feed(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        while !bytes.is_empty() {
            let take = (BLOCK - self.block.len()).min(bytes.len());
            self.block.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.block.len() == BLOCK {
                self.sums
                    .extend_from_slice(&checksum(&self.block).to_le_bytes());
                self.block.clear();
            }
        }
    }

    fn finish(mut self) -> (u64, u64) {
        if !self.block.is_empty() {
            self.sums
                .extend_from_slice(&checksum(&self.block).to_le_bytes());
        }
        (self.len, checksum(&self.sums))
    }
}

/// A writer that sums what passes through it.
struct SumWriter<W> {
    inner: W,
    sum: Summing,
}

impl<W: Write> Write for SumWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sum.feed(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Write the analysis of `id` into `folder`, its state streamed by
/// `write`. Returns the bytes the file takes.
pub(crate) fn save(
    folder: &Path,
    id: &CaptureId,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    let tmp = folder.join(format!("{FILE}.tmp-{}", std::process::id()));
    let result = (|| {
        let head = header(id, 0, 0);
        let mut w = SumWriter {
            inner: BufWriter::with_capacity(BLOCK, File::create(&tmp)?),
            sum: Summing::default(),
        };
        w.inner.write_all(&head)?;
        write(&mut w)?;
        let (len, sum) = w.sum.finish();
        let mut f = w.inner.into_inner().map_err(|e| e.into_error())?;
        f.seek(SeekFrom::Start((head.len() - 16) as u64))?;
        f.write_all(&len.to_le_bytes())?;
        f.write_all(&sum.to_le_bytes())?;
        f.sync_data()?;
        std::fs::rename(&tmp, folder.join(FILE))?;
        Ok(head.len() as u64 + len)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The analysis kept in `folder` for `id`, its state handed to `read`
/// once its checksum holds: `Ok(None)` when there is none, `Ok(Some(bytes
/// the file takes))` when `read` took it, `Err(why)` when the one there is
/// of another capture, file version or rocescope, damaged, or refused by
/// `read` (then the frames are read again).
pub(crate) fn load(
    folder: &Path,
    id: &CaptureId,
    read: impl FnOnce(&mut dyn Read) -> Result<(), String>,
) -> Result<Option<u64>, String> {
    let cannot = |e: std::io::Error| format!("its analysis cannot be read ({e})");
    let mut f = match File::open(folder.join(FILE)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(cannot(e)),
    };
    let damaged = || "its analysis is damaged".to_string();
    let file_len = f.metadata().map_err(cannot)?.len();
    // Rebuild the header this capture would have and compare all of it but
    // the length and checksum.
    let want = header(id, 0, 0);
    let head = want.len() - 16;
    let mut got = vec![0u8; want.len()];
    if file_len < want.len() as u64 || f.read_exact(&mut got).is_err() || !got.starts_with(MAGIC) {
        return Err(damaged());
    }
    if got[..head] != want[..head] {
        return Err("its analysis belongs to another file, file version or rocescope".into());
    }
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&got[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let (len, sum) = (word(head), word(head + 8));
    if file_len - want.len() as u64 != len {
        return Err(damaged());
    }
    // The checksum first, over the whole payload: nothing damaged is
    // decoded (a damaged length inside could ask for any allocation).
    let mut summing = Summing::default();
    let mut block = vec![0u8; BLOCK];
    loop {
        let n = f.read(&mut block).map_err(cannot)?;
        if n == 0 {
            break;
        }
        summing.feed(&block[..n]);
    }
    drop(block);
    if summing.finish() != (len, sum) {
        return Err(damaged());
    }
    f.seek(SeekFrom::Start(want.len() as u64)).map_err(cannot)?;
    let mut payload = f.take(len);
    read(&mut payload)?;
    if payload.limit() != 0 {
        return Err("its analysis is damaged (trailing bytes)".into());
    }
    Ok(Some(file_len))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn id() -> CaptureId {
        CaptureId {
            path: PathBuf::from("/data/a.pcap"),
            size: 1000,
            mtime_s: 5,
            mtime_ns: 6,
        }
    }

    fn keep(dir: &Path, id: &CaptureId, state: &[u8]) -> u64 {
        save(dir, id, |w| w.write_all(state)).unwrap()
    }

    fn back(dir: &Path, id: &CaptureId) -> Result<Option<Vec<u8>>, String> {
        let mut got = Vec::new();
        let found = load(dir, id, |r| {
            r.read_to_end(&mut got)
                .map(|_| ())
                .map_err(|e| e.to_string())
        })?;
        Ok(found.map(|_| got))
    }

    #[test]
    fn saved_state_comes_back_and_damage_or_another_file_is_stale() {
        let tmp = rocescope_testkit::temp_dir("saved-analysis");
        let dir = tmp.path();
        assert_eq!(back(dir, &id()), Ok(None));
        // More than a block, so that the sums of blocks are taken.
        let state: Vec<u8> = (0..BLOCK + 1000).map(|i| (i % 251) as u8).collect();
        let n = keep(dir, &id(), &state);
        assert_eq!(n, std::fs::metadata(dir.join(FILE)).unwrap().len());
        assert_eq!(back(dir, &id()), Ok(Some(state.clone())));

        let other = CaptureId { size: 1001, ..id() };
        assert!(back(dir, &other).unwrap_err().contains("another file"));

        // A state that leaves bytes unread is refused.
        let short = load(dir, &id(), |r| {
            r.read_exact(&mut [0u8; 10]).map_err(|e| e.to_string())
        });
        assert!(short.unwrap_err().contains("trailing bytes"));

        let mut bytes = std::fs::read(dir.join(FILE)).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(dir.join(FILE), &bytes).unwrap();
        assert_eq!(back(dir, &id()), Err("its analysis is damaged".into()));
        std::fs::write(dir.join(FILE), &bytes[..bytes.len() - 3]).unwrap();
        assert_eq!(back(dir, &id()), Err("its analysis is damaged".into()));
        std::fs::write(dir.join(FILE), b"RSANALY\n").unwrap();
        assert_eq!(back(dir, &id()), Err("its analysis is damaged".into()));
    }
}

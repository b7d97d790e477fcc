//! A capture file's index kept in a folder (`--index-dir`), so that a
//! second open reads it back instead of indexing the file again.
//!
//! The folder holds one subfolder per capture (named after the file and a
//! hash of its absolute path), with a rows file (every chunk of the index
//! one after the other, as a spill segment holds a chunk) and a small
//! manifest: what the file was (its absolute path, size and modification
//! time), what shaped the rows (the decode settings, whether the RC
//! analysis marked them), the index's format and rocescope's version, and
//! what else a store holds besides the rows (conversations, counters,
//! reader warnings, link types, non-frame records). Each chunk has a
//! checksum, and so has the manifest: a damaged or cut index is said to
//! be stale and indexed again, never read as rows. The manifest is
//! written last, to a temporary name then renamed: a first open killed
//! half-way leaves no manifest, so nothing that is trusted.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::columns::{SavedChunk, SavedColumns};
use super::conv::{ConvKey, Conversation};
use super::slab::{Layout, Slab};
use super::{StoreStats, TimeBase};
use crate::capture::CaptureWarning;
use crate::record::Record;

/// The index's on-disk format: bumped whenever what a row holds or how
/// the files are laid out changes.
pub(crate) const FORMAT: u32 = 1;
const MAGIC: &[u8; 8] = b"RSINDEX\n";
const MANIFEST: &str = "manifest";

/// A checksum of `bytes`: FNV-1a over 64-bit words in four independent
/// lanes (so that the multiplies overlap: a few GB/s), folded with the
/// length at the end. It catches a changed, cut or zeroed segment; it is
/// no defence against a forger.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01B3;
    const BASIS: u64 = 0xCBF2_9CE4_8422_2325;
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    let mut lanes = [BASIS, BASIS ^ 1, BASIS ^ 2, BASIS ^ 3];
    let mut blocks = bytes.chunks_exact(32);
    for b in &mut blocks {
        for (k, lane) in lanes.iter_mut().enumerate() {
            *lane = (*lane ^ word(&b[k * 8..k * 8 + 8])).wrapping_mul(PRIME);
        }
    }
    let mut h = BASIS ^ bytes.len() as u64;
    for lane in lanes {
        h = (h ^ lane).wrapping_mul(PRIME);
    }
    for &b in blocks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(PRIME);
    }
    h
}

/// What became of a capture's saved index when it was opened with
/// `--index-dir`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexDirStatus {
    /// The folder given (`--index-dir`).
    pub dir: PathBuf,
    /// The capture's own folder in it.
    pub folder: PathBuf,
    /// The rows: taken from the saved index (the file was not indexed),
    /// or why the index found there was not used (the file was then
    /// indexed again and the index written anew).
    pub index: Reuse,
    /// Bytes the saved index takes on disk (reused, or once written).
    pub saved_bytes: Option<u64>,
    /// Why the index could not be kept (the open went on without it).
    pub error: Option<String>,
    /// The analysis kept with the rows: taken back (the frames were not
    /// read), or why not (the frames were read again, and the analysis
    /// they gave kept in its place).
    pub analysis: Reuse,
}

/// Whether something kept in the index folder was taken back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reuse {
    pub reused: bool,
    /// Why what was found there was not used.
    pub stale: Option<String>,
}

impl IndexDirStatus {
    /// The one line that says a stale index is being rebuilt.
    pub fn stale_line(&self) -> Option<String> {
        self.index.stale.as_ref().map(|why| {
            format!(
                "index in {} is stale: {why}; indexing again",
                self.dir.display()
            )
        })
    }

    /// The one line that says the analysis kept beside the index is not
    /// taken back (the frames are read again).
    pub fn analysis_stale_line(&self) -> Option<String> {
        self.analysis.stale.as_ref().map(|why| {
            format!(
                "the analysis kept in {} is not used: {why}; reading the frames again",
                self.dir.display()
            )
        })
    }

    /// What the status line and `info` say of the index: reused, written,
    /// or why it was not kept ("index: reused from DIR (1.2 MiB)").
    pub fn summary(&self) -> String {
        format!("index: {}", self.describe())
    }

    /// [`summary`](Self::summary) without its "index: ".
    pub fn describe(&self) -> String {
        let dir = self.dir.display();
        if let Some(e) = &self.error {
            return format!("not kept in {dir}: {e}");
        }
        let size = |b: u64| format!("{:.1} MiB", b as f64 / 1048576.0);
        let analysis = if self.analysis.reused {
            ", the analysis too"
        } else {
            ""
        };
        match (self.index.reused, self.saved_bytes) {
            (true, Some(b)) => format!("reused from {dir} ({}{analysis})", size(b)),
            (true, None) => format!("reused from {dir}"),
            (false, Some(b)) => format!("saved to {dir} ({})", size(b)),
            (false, None) => format!("being saved to {dir}"),
        }
    }
}

/// The capture a saved index belongs to, as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CaptureId {
    pub(crate) path: PathBuf,
    pub(crate) size: u64,
    pub(crate) mtime_s: u64,
    pub(crate) mtime_ns: u32,
}

impl CaptureId {
    pub(crate) fn of(path: &Path) -> std::io::Result<CaptureId> {
        let path = std::fs::canonicalize(path)?;
        let meta = std::fs::metadata(&path)?;
        let mtime = meta
            .modified()?
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Ok(CaptureId {
            path,
            size: meta.len(),
            mtime_s: mtime.as_secs(),
            mtime_ns: mtime.subsec_nanos(),
        })
    }

    /// The capture's folder in `dir`: its file name (made safe) and a hash
    /// of its absolute path, so that two files of one name stay apart.
    pub(crate) fn folder_in(&self, dir: &Path) -> PathBuf {
        let name: String = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(48)
            .collect();
        let hash = checksum(self.path.as_os_str().as_encoded_bytes());
        dir.join(format!("{name}-{hash:016x}"))
    }
}

/// Where and how a store being indexed saves its index at the end.
#[derive(Debug, Clone)]
pub(crate) struct SaveTo {
    pub(crate) folder: PathBuf,
    pub(crate) id: CaptureId,
    /// The analysis marks the rows (their verdicts are saved with them).
    pub(crate) analysed: bool,
}

/// Everything a saved index holds but the rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Manifest {
    pub(crate) capture: Option<CaptureId>,
    pub(crate) roce_ports: Vec<u16>,
    /// The rows carry the RC analysis' verdicts (retransmission, ...).
    pub(crate) analysed: bool,
    pub(crate) time_base: Option<TimeBase>,
    pub(crate) rows_file: String,
    pub(crate) rows_bytes: u64,
    pub(crate) cols: SavedColumns,
    pub(crate) convs: Vec<Conversation>,
    pub(crate) stats: StoreStats,
    pub(crate) warnings: Vec<CaptureWarning>,
    pub(crate) links: Vec<(u8, u32)>,
    pub(crate) records: Vec<Record>,
    pub(crate) bytes_done: u64,
}

/// A saved index found valid for the capture.
pub(crate) struct Loaded {
    pub(crate) manifest: Manifest,
    pub(crate) rows: File,
    pub(crate) rows_path: PathBuf,
    /// The chunks kept in memory (index in the chunk list, rows), the
    /// newest that fit the memory given; the others are read back from
    /// the rows file when asked for.
    pub(crate) hot: Vec<(usize, Slab)>,
    pub(crate) bytes: u64,
}

/// The saved index in `folder` for `id`, decoded with `roce_ports`;
/// `Ok(None)` when there is none, `Err(why)` when the one there is stale
/// (damaged, of another file or version, or made otherwise).
/// `need_analysed`: the rows must carry the RC analysis' verdicts;
/// `memory_bytes`: what the chunks kept in memory may take.
pub(crate) fn load(
    folder: &Path,
    id: &CaptureId,
    roce_ports: &[u16],
    need_analysed: bool,
    memory_bytes: u64,
) -> Result<Option<Loaded>, String> {
    let path = folder.join(MANIFEST);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("its manifest cannot be read ({e})")),
    };
    let m = decode(&bytes)?;
    let file = id.path.display();
    let Some(was) = &m.capture else {
        return Err("its manifest is damaged".into());
    };
    if was.path != id.path {
        return Err(format!("it is the index of {}", was.path.display()));
    }
    if was.size != id.size {
        return Err(format!(
            "{file} changed size ({} bytes, now {})",
            was.size, id.size
        ));
    }
    if (was.mtime_s, was.mtime_ns) != (id.mtime_s, id.mtime_ns) {
        return Err(format!(
            "{file} was modified (its modification time changed)"
        ));
    }
    if m.roce_ports != roce_ports {
        return Err(format!(
            "it was made with other RoCE ports (--roce-port {:?}, now {:?})",
            m.roce_ports, roce_ports
        ));
    }
    if need_analysed && !m.analysed {
        return Err("it was made without the RC analysis' verdicts on the rows".into());
    }
    // A name of the rows file's own shape only: never a path elsewhere.
    let named = m.rows_file.starts_with("rows-")
        && m.rows_file.ends_with(".seg")
        && !m.rows_file.contains(['/', '\\']);
    if !named {
        return Err("its manifest is damaged".into());
    }
    let rows_path = folder.join(&m.rows_file);
    let rows = File::open(&rows_path)
        .map_err(|e| format!("its rows file {} cannot be read ({e})", m.rows_file))?;
    let len = rows
        .metadata()
        .map_err(|e| format!("its rows file {} cannot be read ({e})", m.rows_file))?
        .len();
    if len != m.rows_bytes {
        return Err(format!(
            "its rows file {} is {len} bytes, not {}",
            m.rows_file, m.rows_bytes
        ));
    }
    let hot = check_rows(&m, &rows, memory_bytes)?;
    Ok(Some(Loaded {
        hot,
        bytes: m.rows_bytes + bytes.len() as u64,
        manifest: m,
        rows,
        rows_path,
    }))
}

/// The chunks' layout against the rows file, and each chunk's checksum:
/// read once at open (about 24 bytes a packet, a fraction of the capture),
/// so that a damaged segment makes the index stale rather than rows wrong.
fn check_rows(m: &Manifest, rows: &File, memory_bytes: u64) -> Result<Vec<(usize, Slab)>, String> {
    let mut at = 0u64;
    let mut total = 0u64;
    let chunk_rows = super::columns::CHUNK_ROWS;
    let n = m.cols.chunks.len();
    // The newest chunks that fit stay in memory, as indexing under the
    // same cap would have left them: the bytes are read here anyway.
    let mut room = memory_bytes;
    let first_hot = m
        .cols
        .chunks
        .iter()
        .rposition(|c| {
            let size = (c.len * c.layout.row_bytes()) as u64;
            let over = size > room;
            room = room.saturating_sub(size);
            over
        })
        .map_or(0, |k| k + 1);
    let mut hot = Vec::with_capacity(n - first_hot);
    let mut bytes = Vec::new();
    for (k, c) in m.cols.chunks.iter().enumerate() {
        let whole = k + 1 == n || c.len == chunk_rows;
        if c.at != at || c.len == 0 || c.len > chunk_rows || !whole {
            return Err("its manifest is damaged (chunk list)".into());
        }
        // One buffer for every chunk: no allocation and zeroing per chunk.
        bytes.resize(c.len * c.layout.row_bytes(), 0);
        super::read_exact_at(rows, &mut bytes, c.at)
            .map_err(|e| format!("its rows file {} cannot be read ({e})", m.rows_file))?;
        if checksum(&bytes) != c.sum {
            return Err(format!(
                "its rows file {} is damaged (chunk {k} fails its checksum)",
                m.rows_file
            ));
        }
        if k >= first_hot {
            let slab = Slab::from_segment(&bytes, c.len, c.layout)
                .ok_or_else(|| "its manifest is damaged (chunk list)".to_string())?;
            hot.push((k, slab));
        }
        at += bytes.len() as u64;
        total += c.len as u64;
    }
    if at != m.rows_bytes || total != m.cols.len {
        return Err("its manifest is damaged (row count)".into());
    }
    if m.cols.big_lens.iter().any(|&(row, _, _)| row >= total) {
        return Err("its manifest is damaged (lengths)".into());
    }
    if m.convs.iter().any(|c| c.last_row >= total.max(1)) {
        return Err("its manifest is damaged (conversations)".into());
    }
    Ok(hot)
}

/// Write the index of `id` into `folder`: the rows (`write_rows` writes
/// them and says what the manifest keeps of them), then the manifest, by
/// rename. Returns the bytes the index takes. Whatever of an earlier
/// index was there is removed once the new one is in place; on a failure
/// nothing new is left behind.
pub(crate) fn save(
    folder: &Path,
    mut manifest: Manifest,
    write_rows: impl FnOnce(&mut dyn Write) -> std::io::Result<SavedColumns>,
) -> std::io::Result<u64> {
    std::fs::create_dir_all(folder)?;
    let token = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let rows_file = format!("rows-{token}.seg");
    let rows_path = folder.join(&rows_file);
    let tmp = folder.join(format!("{MANIFEST}.tmp-{token}"));
    let result = (|| {
        let f = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&rows_path)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        manifest.cols = write_rows(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        manifest.rows_bytes = f.metadata()?.len();
        manifest.rows_file = rows_file.clone();
        let bytes = encode(&manifest)?;
        std::fs::write(&tmp, &bytes)?;
        std::fs::rename(&tmp, folder.join(MANIFEST))?;
        Ok(manifest.rows_bytes + bytes.len() as u64)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&rows_path);
        let _ = std::fs::remove_file(&tmp);
        return result;
    }
    // The rows files of earlier indexes, and what a killed save left.
    if let Ok(entries) = std::fs::read_dir(folder) {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let old_rows = name.starts_with("rows-") && name.ends_with(".seg") && name != rows_file;
            if old_rows || name.starts_with("manifest.tmp-") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    result
}

/// The manifest's bytes: the magic, the fields, then a checksum of all
/// before it.
pub(crate) fn encode(m: &Manifest) -> std::io::Result<Vec<u8>> {
    let mut e = Enc(Vec::with_capacity(4096));
    e.0.extend_from_slice(MAGIC);
    e.u32(FORMAT);
    e.str(env!("CARGO_PKG_VERSION"));
    let id = m.capture.clone().unwrap_or(CaptureId {
        path: PathBuf::new(),
        size: 0,
        mtime_s: 0,
        mtime_ns: 0,
    });
    e.bytes(id.path.as_os_str().as_encoded_bytes());
    e.u64(id.size);
    e.u64(id.mtime_s);
    e.u32(id.mtime_ns);
    e.u32(m.roce_ports.len() as u32);
    for &p in &m.roce_ports {
        e.u16(p);
    }
    e.u8(u8::from(m.analysed));
    e.u8(match m.time_base {
        Some(TimeBase::Ordinal) => 1,
        _ => 0,
    });
    e.str(&m.rows_file);
    e.u64(m.rows_bytes);
    e.u64(m.cols.len);
    e.u8(u8::from(m.cols.sorted));
    e.u64(m.cols.last_ts_ns);
    e.u32(m.cols.chunks.len() as u32);
    for c in &m.cols.chunks {
        e.u32(c.len as u32);
        match c.layout {
            Layout::Steps {
                ts_base_ns,
                offset_base,
            } => {
                e.u8(0);
                e.u64(ts_base_ns);
                e.u64(offset_base);
            }
            Layout::Wide => e.u8(1),
        }
        e.u64(c.first_ts_ns);
        e.u64(c.max_ts_ns);
        e.u64(c.at);
        e.u64(c.sum);
    }
    e.u32(m.cols.big_lens.len() as u32);
    for &(row, caplen, origlen) in &m.cols.big_lens {
        e.u64(row);
        e.u32(caplen);
        e.u32(origlen);
    }
    e.u32(m.convs.len() as u32);
    for c in &m.convs {
        e.0.extend_from_slice(&c.key.src);
        e.0.extend_from_slice(&c.key.dst);
        e.u32(c.key.dest_qp);
        e.u64(c.first_row);
        e.u64(c.last_row);
        e.u64(c.packets);
        e.u64(c.wire_bytes);
    }
    let s = &m.stats;
    for v in [
        s.packets,
        s.roce_packets,
        s.icrc_errors,
        s.truncated,
        s.malformed,
        s.undecoded,
        s.captured_bytes,
        s.wire_bytes,
    ] {
        e.u64(v);
    }
    for t in [s.first_ts_ns, s.last_ts_ns] {
        e.u8(u8::from(t.is_some()));
        e.u64(t.unwrap_or(0));
    }
    e.u32(m.warnings.len() as u32);
    for w in &m.warnings {
        e.u64(w.offset);
        e.str(&w.message);
    }
    e.u32(m.links.len() as u32);
    for &(port, linktype) in &m.links {
        e.u8(port);
        e.u32(linktype);
    }
    let mut payload = Vec::new();
    e.u32(m.records.len() as u32);
    for r in &m.records {
        payload.clear();
        if !r.encode_payload(&mut payload) {
            return Err(std::io::Error::other(
                "a record of the capture cannot be kept",
            ));
        }
        e.bytes(&payload);
    }
    e.u64(m.bytes_done);
    let sum = checksum(&e.0);
    e.u64(sum);
    Ok(e.0)
}

/// A manifest's fields, or why they cannot be trusted.
pub(crate) fn decode(bytes: &[u8]) -> Result<Manifest, String> {
    let damaged = || "its manifest is damaged".to_string();
    if bytes.len() < MAGIC.len() + 12 || !bytes.starts_with(MAGIC) {
        return Err(damaged());
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    let sum = u64::from_le_bytes(sum.try_into().map_err(|_| damaged())?);
    let mut d = Dec {
        b: body,
        at: MAGIC.len(),
    };
    // The format and version first: a newer index may be laid out
    // otherwise, and is stale rather than damaged.
    let format = d.u32().ok_or_else(damaged)?;
    let version = d.str().ok_or_else(damaged)?;
    if format != FORMAT || version != env!("CARGO_PKG_VERSION") {
        return Err(format!(
            "it was written by another version of rocescope ({version}, index format {format}; this is {}, format {FORMAT})",
            env!("CARGO_PKG_VERSION")
        ));
    }
    if checksum(body) != sum {
        return Err(damaged());
    }
    fields(&mut d).ok_or_else(damaged)
}

fn fields(d: &mut Dec<'_>) -> Option<Manifest> {
    let path = PathBuf::from(String::from_utf8(d.bytes()?.to_vec()).ok()?);
    let capture = Some(CaptureId {
        path,
        size: d.u64()?,
        mtime_s: d.u64()?,
        mtime_ns: d.u32()?,
    });
    let n = d.count(2)?;
    let roce_ports = (0..n).map(|_| d.u16()).collect::<Option<Vec<_>>>()?;
    let analysed = d.u8()? == 1;
    let time_base = Some(match d.u8()? {
        0 => TimeBase::Nanoseconds,
        1 => TimeBase::Ordinal,
        _ => return None,
    });
    let rows_file = d.str()?;
    let rows_bytes = d.u64()?;
    let len = d.u64()?;
    let sorted = d.u8()? == 1;
    let last_ts_ns = d.u64()?;
    let n = d.count(37)?;
    let mut chunks = Vec::with_capacity(n);
    for _ in 0..n {
        let len = d.u32()? as usize;
        let layout = match d.u8()? {
            0 => Layout::Steps {
                ts_base_ns: d.u64()?,
                offset_base: d.u64()?,
            },
            1 => Layout::Wide,
            _ => return None,
        };
        chunks.push(SavedChunk {
            len,
            layout,
            first_ts_ns: d.u64()?,
            max_ts_ns: d.u64()?,
            at: d.u64()?,
            sum: d.u64()?,
        });
    }
    let n = d.count(16)?;
    let big_lens = (0..n)
        .map(|_| Some((d.u64()?, d.u32()?, d.u32()?)))
        .collect::<Option<Vec<_>>>()?;
    let n = d.count(68)?;
    let mut convs = Vec::with_capacity(n);
    for _ in 0..n {
        let src = d.take(16)?.try_into().ok()?;
        let dst = d.take(16)?.try_into().ok()?;
        convs.push(Conversation {
            key: ConvKey {
                src,
                dst,
                dest_qp: d.u32()?,
            },
            first_row: d.u64()?,
            last_row: d.u64()?,
            packets: d.u64()?,
            wire_bytes: d.u64()?,
        });
    }
    let mut v = [0u64; 8];
    for x in &mut v {
        *x = d.u64()?;
    }
    let mut opt = || -> Option<Option<u64>> {
        let some = d.u8()? == 1;
        let t = d.u64()?;
        Some(some.then_some(t))
    };
    let (first_seen_ns, last_seen_ns) = (opt()?, opt()?);
    let stats = StoreStats {
        packets: v[0],
        roce_packets: v[1],
        icrc_errors: v[2],
        truncated: v[3],
        malformed: v[4],
        undecoded: v[5],
        captured_bytes: v[6],
        wire_bytes: v[7],
        first_ts_ns: first_seen_ns,
        last_ts_ns: last_seen_ns,
    };
    let n = d.count(12)?;
    let warnings = (0..n)
        .map(|_| {
            Some(CaptureWarning {
                offset: d.u64()?,
                message: d.str()?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let n = d.count(5)?;
    let links = (0..n)
        .map(|_| Some((d.u8()?, d.u32()?)))
        .collect::<Option<Vec<_>>>()?;
    let n = d.count(4)?;
    let records = (0..n)
        .map(|_| Record::decode_payload(d.bytes()?).ok())
        .collect::<Option<Vec<_>>>()?;
    let bytes_done = d.u64()?;
    (d.at == d.b.len()).then_some(Manifest {
        capture,
        roce_ports,
        analysed,
        time_base,
        rows_file,
        rows_bytes,
        cols: SavedColumns {
            len,
            sorted,
            last_ts_ns,
            big_lens,
            chunks,
        },
        convs,
        stats,
        warnings,
        links,
        records,
        bytes_done,
    })
}

struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
}

/// A reader of the manifest's fields that never reads past its end.
struct Dec<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Dec<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.b.get(self.at..end)?;
        self.at = end;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn str(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
    /// A count of items of at least `min_bytes` each: never more than the
    /// bytes left could hold (a damaged count allocates nothing).
    fn count(&mut self, min_bytes: usize) -> Option<usize> {
        let n = usize::try_from(self.u32()?).ok()?;
        let left = self.b.len().saturating_sub(self.at);
        (n.saturating_mul(min_bytes) <= left).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            capture: Some(CaptureId {
                path: PathBuf::from("/data/a b.pcap"),
                size: 123_456,
                mtime_s: 1_700_000_000,
                mtime_ns: 42,
            }),
            roce_ports: vec![4792, 5000],
            analysed: true,
            time_base: Some(TimeBase::Nanoseconds),
            rows_file: "rows-1-2.seg".into(),
            rows_bytes: 24 * 70_000,
            cols: SavedColumns {
                len: 70_000,
                sorted: true,
                last_ts_ns: 99,
                big_lens: vec![(7, 70_000, 70_004)],
                chunks: vec![
                    SavedChunk {
                        len: 65_536,
                        layout: Layout::Steps {
                            ts_base_ns: 5,
                            offset_base: 24,
                        },
                        first_ts_ns: 10,
                        max_ts_ns: 50,
                        at: 0,
                        sum: 77,
                    },
                    SavedChunk {
                        len: 4_464,
                        layout: Layout::Wide,
                        first_ts_ns: 51,
                        max_ts_ns: 99,
                        at: 24 * 65_536,
                        sum: 78,
                    },
                ],
            },
            convs: vec![Conversation {
                key: ConvKey {
                    src: [1; 16],
                    dst: [2; 16],
                    dest_qp: 0x11,
                },
                first_row: 0,
                last_row: 69_999,
                packets: 70_000,
                wire_bytes: 7_000_000,
            }],
            stats: StoreStats {
                packets: 70_000,
                roce_packets: 69_000,
                first_ts_ns: Some(10),
                last_ts_ns: Some(99),
                ..StoreStats::default()
            },
            warnings: vec![CaptureWarning {
                offset: 9,
                message: "cut".into(),
            }],
            links: vec![(0, 1), (3, 147)],
            records: vec![Record::Annotation {
                ts_ns: 5,
                text: "note".into(),
            }],
            bytes_done: 123_456,
        }
    }

    /// A manifest reads back as written; any byte changed, or the bytes
    /// cut anywhere, reads as damaged (or another version), never as
    /// other fields and never as a panic.
    #[test]
    fn manifests_round_trip_and_damage_is_caught() {
        let m = manifest();
        let bytes = encode(&m).unwrap();
        assert_eq!(decode(&bytes), Ok(m));
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x5A;
            assert!(decode(&bad).is_err(), "byte {i} changed");
            assert!(decode(&bytes[..i]).is_err(), "cut at {i}");
        }
        let mut newer = bytes.clone();
        newer[MAGIC.len()] = FORMAT as u8 + 1;
        let why = decode(&newer).unwrap_err();
        assert!(why.contains("another version"), "{why}");
    }

    #[test]
    fn checksums_see_every_byte_and_the_length() {
        let a = vec![0u8; 1000];
        let mut b = a.clone();
        b[999] = 1;
        assert_ne!(checksum(&a), checksum(&b));
        assert_ne!(checksum(&a), checksum(&a[..992]));
        for i in [0usize, 3, 8, 17, 24, 31, 500, 990] {
            let mut b = a.clone();
            b[i] = 1;
            assert_ne!(checksum(&a), checksum(&b), "byte {i}");
        }
        // Lanes swapped are another checksum.
        let mut c = a.clone();
        c[0] = 1;
        let mut d = a.clone();
        d[8] = 1;
        assert_ne!(checksum(&c), checksum(&d));
    }
}

//! Errors of the capture reader.
//!
//! Every variant names what went wrong and the byte offset where it was seen,
//! so a user can open the file in a hex viewer at that spot.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why a capture file could not be read (further).
///
/// Offsets are counted in bytes from the start of the file. After an error
/// [`CaptureReader::next_frame`](super::CaptureReader::next_frame) returns
/// `Ok(None)`: the frames returned before it stay valid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// A waveform (VCD, FST) could not be read as a capture; names the file.
    #[error(transparent)]
    Wave(#[from] crate::wave::WaveError),

    /// The path names no file a capture can be read back from (a pipe,
    /// a folder, a device): told before opening it, which for a pipe with
    /// no writer would wait forever.
    #[error(transparent)]
    NotAFile(#[from] NotAFile),

    /// The file could not be opened.
    #[error("cannot open {}", path.display())]
    Open {
        /// The path given to [`CaptureReader::open`](super::CaptureReader::open).
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },

    /// Reading from the file or stream failed.
    #[error("cannot read {name} at byte {offset}")]
    Io {
        /// The path of the file, or `input` for a stream.
        name: String,
        /// How many bytes had been read before the failing read.
        offset: u64,
        /// What the operating system said.
        source: io::Error,
    },

    /// The input ends before even a magic number could be read.
    #[error("not a capture file: it ends at byte {len}, before a 4-byte magic number")]
    TooShort {
        /// Length of the input in bytes.
        len: u64,
    },

    /// The first bytes are neither a pcap nor a pcapng magic number.
    #[error(
        "not a capture file: unknown magic 0x{magic:08x} at byte {offset}{}",
        magic_hint(*magic)
    )]
    UnknownMagic {
        /// The first four bytes, read in file order (big-endian).
        magic: u32,
        /// Where the magic was read (always 0 today).
        offset: u64,
    },

    /// A known but unsupported variant of a capture format.
    #[error("unsupported capture format at byte {offset}: {what}")]
    Unsupported {
        /// Where the variant was recognised.
        offset: u64,
        /// Which variant, e.g. the "modified" (Kuznetzov) pcap format.
        what: String,
    },

    /// A file header (pcap header, first pcapng section header) is cut off.
    #[error("{what} at byte {offset} is cut: the input ends after {have} of its {need} bytes")]
    Truncated {
        /// Which header.
        what: &'static str,
        /// Where the header starts.
        offset: u64,
        /// How many bytes the header needs.
        need: u64,
        /// How many bytes the input still had.
        have: u64,
    },

    /// A classic pcap record header claims more bytes than any sane record.
    #[error("record at byte {offset}: caplen {caplen} exceeds the {limit}-byte limit")]
    RecordTooLarge {
        /// Where the record header starts.
        offset: u64,
        /// The claimed captured length.
        caplen: u32,
        /// The limit ([`MAX_PCAP_RECORD_BYTES`](super::MAX_PCAP_RECORD_BYTES)).
        limit: u32,
    },

    /// A pcapng block length that cannot be right (0, too short, not a
    /// multiple of 4).
    #[error("pcapng block at byte {offset}: block length {len} is invalid ({reason})")]
    BlockLength {
        /// Where the block starts.
        offset: u64,
        /// The claimed block length.
        len: u32,
        /// Why it is invalid.
        reason: String,
    },

    /// A pcapng block claims more bytes than any sane block.
    #[error("pcapng block at byte {offset}: block length {len} exceeds the {limit}-byte limit")]
    BlockTooLarge {
        /// Where the block starts.
        offset: u64,
        /// The claimed block length.
        len: u32,
        /// The limit ([`MAX_PCAPNG_BLOCK_BYTES`](super::MAX_PCAPNG_BLOCK_BYTES)).
        limit: u32,
    },

    /// The length at the end of a pcapng block differs from the one at its
    /// start: the file is corrupt or not pcapng from here on.
    #[error(
        "pcapng block at byte {offset}: block length {len} at its start but {trailer} at its end"
    )]
    BlockLengthMismatch {
        /// Where the block starts.
        offset: u64,
        /// The length at the start of the block.
        len: u32,
        /// The length at the end of the block.
        trailer: u32,
    },

    /// A pcapng section header with an unknown byte-order magic.
    #[error("pcapng section header at byte {offset}: unknown byte-order magic 0x{bom:08x}")]
    ByteOrder {
        /// Where the section header starts.
        offset: u64,
        /// The byte-order magic in file order.
        bom: u32,
    },

    /// A packet block names an interface that its section did not declare.
    #[error(
        "pcapng {block} at byte {offset} refers to interface {interface} but only {declared} declared"
    )]
    UnknownInterface {
        /// `EPB`, `SPB` or `PB`.
        block: &'static str,
        /// Where the block starts.
        offset: u64,
        /// The interface id in the block (0 for an SPB).
        interface: u32,
        /// How many interfaces the section declared so far.
        declared: usize,
    },

    /// A block or record whose fields contradict each other.
    #[error("{what} at byte {offset}: {detail}")]
    Malformed {
        /// Which structure, e.g. `pcapng EPB`.
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// What is wrong with it.
        detail: String,
    },
}

/// A short hint for magics that are common non-capture files.
/// What a path names when it is not a file a capture can be read back
/// from: the store keeps the file and reads frames again by their offset,
/// which a stream cannot give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAFile {
    Folder,
    Pipe,
    Socket,
    Device,
    /// `-`, with no file of that name: standard input is a stream.
    StandardInput,
}

/// What a user can do with a stream instead.
const STREAM_ADVICE: &str = "a capture is read back by position, so save the stream to a file \
first (e.g. `zcat trace.pcap.gz > trace.pcap`), or stream pcap or pcapng into \
`rocescope attach - --headless --json` (its analysis as the frames arrive)";

impl fmt::Display for NotAFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotAFile::Folder => f.write_str("a folder, not a capture file: name a file in it"),
            NotAFile::Pipe => write!(f, "a pipe, not a file: {STREAM_ADVICE}"),
            NotAFile::Socket => write!(f, "a socket, not a file: {STREAM_ADVICE}"),
            NotAFile::Device => write!(f, "a device, not a file: {STREAM_ADVICE}"),
            NotAFile::StandardInput => write!(
                f,
                "no file of that name (standard input is not read here): {STREAM_ADVICE}"
            ),
        }
    }
}

impl std::error::Error for NotAFile {}

impl NotAFile {
    /// What `path` names, when it is not a regular file; `None` for a file,
    /// and for a path that cannot be looked up (opening it says why).
    /// Looked up without opening it, following links (`/dev/stdin`,
    /// `/dev/fd/63` from `<(...)`, name what they point at).
    pub fn of(path: &Path) -> Option<NotAFile> {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(_) if path == Path::new("-") => return Some(NotAFile::StandardInput),
            Err(_) => return None,
        };
        let kind = meta.file_type();
        if kind.is_file() {
            return None;
        }
        if kind.is_dir() {
            return Some(NotAFile::Folder);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if kind.is_fifo() {
                return Some(NotAFile::Pipe);
            }
            if kind.is_socket() {
                return Some(NotAFile::Socket);
            }
        }
        Some(NotAFile::Device)
    }

    /// [`NotAFile::of`] as a result.
    pub fn check(path: &Path) -> Result<(), NotAFile> {
        NotAFile::of(path).map_or(Ok(()), Err)
    }
}

fn magic_hint(magic: u32) -> &'static str {
    let bytes = magic.to_be_bytes();
    match bytes {
        [0x1f, 0x8b, ..] => " (gzip-compressed? decompress it to a file first)",
        [0x28, 0xb5, 0x2f, 0xfd] => " (zstd-compressed? decompress it to a file first)",
        [0xfd, b'7', b'z', b'X'] => " (xz-compressed? decompress it to a file first)",
        _ if bytes
            .iter()
            .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) =>
        {
            " (the file looks like text, e.g. a sniffer hex dump)"
        }
        _ => "",
    }
}

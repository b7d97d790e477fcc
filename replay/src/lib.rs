//! Capture formats, the indexed store and the playback clock of rocescope.
//!
//! [`capture`] reads classic pcap, pcapng and (through [`sniffer`]) the
//! BALBOA card's own text and raw slot dumps, recognised by content, frame
//! by frame without copying packet bytes; it never panics on bad input and
//! reports cut files as warnings. [`store`] indexes any of them into 24-byte
//! rows on a background thread, and [`clock`] replays a store like a live
//! feed. [`wave`] reads VCD and FST waveforms as captures: the Ethernet
//! frames on their AXI4-Stream interfaces.
//!
//! [`record`] defines [`Record`], the unit every source (file, live link,
//! simulator) produces; [`pcapng_writer`] records them as pcapng that
//! Wireshark opens, and [`CaptureReader::next_item`] reads them back.

pub mod capture;
pub mod clock;
pub mod contain;
pub mod endian;
pub mod pcapng;
pub mod points;
pub mod record;
pub mod sniffer;
pub mod store;
pub mod synth;
pub mod text;
pub mod wave;

pub use capture::{
    CaptureError, CaptureFormat, CaptureFrame, CaptureItem, CaptureReader, CaptureWarning,
    LinkType, NotAFile, TimeBase,
};
/// The recording writer's old path: [`pcapng::writer`].
pub use pcapng::writer as pcapng_writer;
pub use pcapng::writer::PcapngWriter;
pub use record::{Direction, FrameRef, Record, RecordError, SkippedRecords};
pub use sniffer::{SnifferFilter, SnifferReader};

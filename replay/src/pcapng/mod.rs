//! pcapng in one place: the reader of pcapng files and streams (sections,
//! interfaces, packet, statistics and custom blocks) and rocescope's
//! recording writer ([`PcapngWriter`]); `replay/FORMAT.md` describes the
//! recording format.

pub(crate) mod reader;
pub mod writer;

pub use writer::PcapngWriter;

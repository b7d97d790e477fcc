//! pcapng in one place: the vocabulary ([`consts`]: block types, option
//! codes, offsets), the option walk ([`for_each_option`]), timestamp
//! resolution ([`timestamp_ns`]), block framing, the reader of pcapng files
//! and streams (sections, interfaces, packet, statistics and custom blocks)
//! and rocescope's recording writer ([`PcapngWriter`]). The agent's stream
//! parser in device-link uses the same pieces. `replay/FORMAT.md`
//! describes the recording format.

mod block;
pub mod consts;
mod options;
pub(crate) mod reader;
mod timestamp;
pub mod writer;

pub use consts::*;
pub use options::for_each_option;
pub use timestamp::timestamp_ns;
pub use writer::PcapngWriter;

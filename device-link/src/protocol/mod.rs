//! The agent protocol (device-link/PROTOCOL.md): one TCP connection per
//! client. Agent -> client is a pcapng stream (what `PcapngWriter` writes);
//! the agent's control messages travel in it as do-not-copy custom blocks.
//! Client -> agent is text lines. This module has the message types, their
//! text forms, the in-band block codec, [`LinkReader`] (splits the control
//! blocks off the pcapng bytes) and [`LineReader`] (bounded lines).

use std::fmt;
use std::io::{self, Read};

use rocescope_replay::endian::{u16_at, u32_at};
use rocescope_replay::pcapng::{BOM, SHB_TYPE};
use rocescope_replay::record::ROCESCOPE_PEN;

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// Default TCP port of an agent.
pub const DEFAULT_PORT: u16 = 4790;

/// Longest client -> agent line, `\n` excluded.
pub const MAX_LINE_BYTES: usize = 512;

/// Longest agent -> client message text.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// Longest token accepted (bytes).
pub const MAX_TOKEN_BYTES: usize = 256;

/// Shortest token an agent accepts in its token file.
pub const MIN_TOKEN_BYTES: usize = 16;

/// Most probe ids in one SUBSCRIBE.
pub const MAX_PROBES: usize = 256;

/// pcapng Custom Block type that must not be copied into new files: the
/// agent's in-band control messages.
pub const LINK_BLOCK_TYPE: u32 = rocescope_replay::pcapng::CUSTOM_BLOCK_NOCOPY_TYPE;

/// Record type code of an in-band control message in the custom block
/// payload. Outside the range of `Record` type codes, so the replay reader
/// counts such blocks as an unknown type and skips them.
pub const LINK_MESSAGE_CODE: u16 = 0xff01;

/// Version byte of the in-band message payload.
pub const LINK_MESSAGE_VERSION: u8 = 1;

/// Block bytes before the message text: type, length, PEN, code, version,
/// flags, ts_ns, text length.
const LINK_HEAD_BYTES: usize = 4 + 4 + 4 + 2 + 1 + 1 + 8 + 4;

/// Largest in-band block.
pub const MAX_LINK_BLOCK_BYTES: usize = LINK_HEAD_BYTES + MAX_MESSAGE_BYTES + 3 + 4;

/// Interface id the agent puts into the `Drops` records that count what it
/// dropped for one client (its per-client queue was full). Not a declared
/// interface, so it travels as a custom block; the client recognises it.
pub const AGENT_QUEUE_INTERFACE: u32 = 0xffff_fffe;

/// Interface id of the `Drops` records a client writes into its recording
/// for its own queue between socket and ingest.
pub const CLIENT_QUEUE_INTERFACE: u32 = u32::MAX;

mod lines;
mod link;
mod reply;
mod request;
#[cfg(test)]
mod tests;

pub use lines::*;
pub use link::*;
pub use reply::*;
pub use request::*;

//! The pcapng vocabulary: block types, option codes, fixed offsets and
//! rocescope's custom options (replay/FORMAT.md). Readers and the writer
//! here and in device-link use these, not literals of their own.

/// Section Header Block type; a palindrome, so readable in either order.
pub const SHB_TYPE: u32 = 0x0a0d_0d0a;
/// Interface Description Block.
pub const IDB_TYPE: u32 = 1;
/// The obsolete Packet Block, still found in old files.
pub const PB_TYPE: u32 = 2;
/// Simple Packet Block.
pub const SPB_TYPE: u32 = 3;
/// Name Resolution Block.
pub const NRB_TYPE: u32 = 4;
/// Interface Statistics Block.
pub const ISB_TYPE: u32 = 5;
/// Enhanced Packet Block.
pub const EPB_TYPE: u32 = 6;
/// Custom Block that may be copied into new files.
pub const CUSTOM_BLOCK_TYPE: u32 = 0x0000_0bad;
/// Custom Block that must not be copied into new files.
pub const CUSTOM_BLOCK_NOCOPY_TYPE: u32 = 0x4000_0bad;

/// Byte-order magic of a section, as read in the section's own order.
pub const BOM: u32 = 0x1a2b_3c4d;
/// Type, length and trailing length.
pub const BLOCK_FRAMING_BYTES: usize = 12;
/// Offset of the packet data in an EPB or PB.
pub const EPB_DATA_OFFSET: usize = 28;
/// Offset of the packet data in an SPB.
pub const SPB_DATA_OFFSET: usize = 12;
/// Offset of the payload (after the enterprise number) in a custom block.
pub const CUSTOM_PAYLOAD_OFFSET: usize = 12;
/// Offset of the options in an ISB.
pub const ISB_OPTIONS_OFFSET: usize = 20;

/// Option codes. `opt_endofopt` ends every option list.
pub const OPT_ENDOFOPT: u16 = 0;
/// `opt_comment`: UTF-8 text, valid in every block (Wireshark's
/// `frame.comment` on a packet).
pub const OPT_COMMENT: u16 = 1;
pub const SHB_USERAPPL: u16 = 4;
pub const IF_NAME: u16 = 2;
/// `if_description`: free text (a waveform interface's scope path).
pub const IF_DESCRIPTION: u16 = 3;
pub const IF_TSRESOL: u16 = 9;
pub const IF_TSOFFSET: u16 = 14;
pub const EPB_FLAGS: u16 = 2;
pub const ISB_STARTTIME: u16 = 2;
pub const ISB_ENDTIME: u16 = 3;
pub const ISB_IFDROP: u16 = 5;
pub const ISB_OSDROP: u16 = 7;
/// Custom option, binary value, copyable.
pub const OPT_CUSTOM_BINARY: u16 = 2989;

/// `if_tsresol` when the option is absent: microseconds.
pub const DEFAULT_TSRESOL: u8 = 6;

/// First byte after the PEN in rocescope's custom options: what follows.
/// In an IDB: port (u8), direction (u8: 0 unknown, 1 rx, 2 tx).
pub const CUSTOM_OPT_INTERFACE: u8 = 1;
/// In an ISB: drop reason (u8, the
/// [`DropCount::reason`](crate::record::DropCount::reason) code).
pub const CUSTOM_OPT_DROP_REASON: u8 = 2;

/// `epb_flags` direction bits.
pub const EPB_FLAG_INBOUND: u32 = 1;
pub const EPB_FLAG_OUTBOUND: u32 = 2;

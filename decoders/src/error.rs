//! Decode errors: every one names the layer and the byte offset in the frame.

use std::fmt;

/// The protocol layer a decoder was working on when it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    Ethernet,
    Vlan,
    LinuxSll,
    LinuxSll2,
    Erf,
    Lrh,
    Ipv4,
    Ipv6,
    Udp,
    Grh,
    Bth,
    Rdeth,
    Deth,
    Xrceth,
    Reth,
    Feth,
    AtomicEth,
    Aeth,
    AtomicAckEth,
    ImmDt,
    Ieth,
    Cnp,
    Payload,
    Icrc,
    Vcrc,
}

impl Layer {
    /// Short display name, as the layer is called on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Ethernet => "Ethernet",
            Layer::Vlan => "802.1Q tag",
            Layer::LinuxSll => "Linux cooked header",
            Layer::LinuxSll2 => "Linux cooked header v2",
            Layer::Erf => "ERF header",
            Layer::Lrh => "LRH",
            Layer::Ipv4 => "IPv4",
            Layer::Ipv6 => "IPv6",
            Layer::Udp => "UDP",
            Layer::Grh => "GRH",
            Layer::Bth => "BTH",
            Layer::Rdeth => "RDETH",
            Layer::Deth => "DETH",
            Layer::Xrceth => "XRCETH",
            Layer::Reth => "RETH",
            Layer::Feth => "FETH",
            Layer::AtomicEth => "AtomicETH",
            Layer::Aeth => "AETH",
            Layer::AtomicAckEth => "AtomicAckETH",
            Layer::ImmDt => "ImmDt",
            Layer::Ieth => "IETH",
            Layer::Cnp => "CNP",
            Layer::Payload => "payload",
            Layer::Icrc => "ICRC",
            Layer::Vcrc => "VCRC",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What went wrong at a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The frame ends before the header does: `needed` bytes from the
    /// header start, `available` left. For header-only captures this is the
    /// expected way a decode stops, not a fault of the packet.
    Truncated { needed: usize, available: usize },
    /// A field holds a value the layer cannot carry on from.
    Invalid { field: &'static str, value: u64 },
}

/// A decoder stopped: which layer, at which byte offset of the frame, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub struct DecodeError {
    pub layer: Layer,
    /// Byte offset in the frame where the layer's header starts.
    pub offset: usize,
    pub kind: DecodeErrorKind,
}

impl DecodeError {
    pub(crate) fn truncated(layer: Layer, offset: usize, needed: usize, available: usize) -> Self {
        DecodeError {
            layer,
            offset,
            kind: DecodeErrorKind::Truncated { needed, available },
        }
    }

    pub(crate) fn invalid(layer: Layer, offset: usize, field: &'static str, value: u64) -> Self {
        DecodeError {
            layer,
            offset,
            kind: DecodeErrorKind::Invalid { field, value },
        }
    }

    /// True when the frame was merely cut short (snaplen, header-only capture).
    pub fn is_truncation(&self) -> bool {
        matches!(self.kind, DecodeErrorKind::Truncated { .. })
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            DecodeErrorKind::Truncated { needed, available } => write!(
                f,
                "{} at byte {}: truncated (needs {} bytes, {} captured)",
                self.layer, self.offset, needed, available
            ),
            DecodeErrorKind::Invalid { field, value } => write!(
                f,
                "{} at byte {}: invalid {} ({})",
                self.layer, self.offset, field, value
            ),
        }
    }
}

/// Take `len` bytes at `offset`, or say which layer was cut short.
#[inline(always)]
pub(crate) fn take(
    frame: &[u8],
    offset: usize,
    len: usize,
    layer: Layer,
) -> Result<&[u8], DecodeError> {
    match frame.get(offset..).and_then(|rest| rest.get(..len)) {
        Some(s) => Ok(s),
        None => Err(DecodeError::truncated(
            layer,
            offset,
            len,
            frame.len().saturating_sub(offset),
        )),
    }
}

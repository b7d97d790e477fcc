//! Zero-copy decoders for RoCE (v1 and v2) frames, ICRC, and packet builders.
//!
//! [`decode`] walks a captured frame from the link layer to the ICRC and
//! never panics: a frame cut short (header-only or snaplen captures) decodes
//! as far as its bytes go, and [`Packet::stop`] says which layer stopped at
//! which byte offset. Header views borrow the frame; nothing is copied.

pub mod analysis;
mod build;
mod endpoint;
mod error;
mod fields;
#[macro_use]
mod headers;
pub mod hint;
mod icrc;
pub mod mad;
mod opcode;
mod packet;
pub mod psn;

mod summary;
pub mod units;
mod wire;

pub use build::{NetHeader, PacketBuilder, ext_len};
pub use endpoint::{Endpoint, endpoint_lid, lid_endpoint};
pub use error::{DecodeError, DecodeErrorKind, Layer};
pub use fields::{FIELD_NAMES, Field, FieldValue};
pub use headers::*;
pub use icrc::{icrc_ib, icrc_v1, icrc_v2, vcrc};
pub use opcode::{Headers, MessagePosition, Opcode, OpcodeKind, OpcodeName, Operation, Transport};
pub use packet::{
    DecodeConfig, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_ROCEV1, IcrcStatus, IpHeader,
    LinkLayer, Packet, ROCEV2_UDP_PORT, RoceVersion, decode, decode_headers, v4_mapped,
};
pub use summary::Summary;

/// Decode `data` under every link layer and render everything: the body of
/// the fuzz targets, also run over the seed corpus by the tests.
#[doc(hidden)]
pub fn exercise(data: &[u8]) -> usize {
    use std::fmt::Write;
    let cfg = DecodeConfig {
        extra_roce_ports: vec![4792],
    };
    let mut out = String::new();
    for link in [
        LinkLayer::Ethernet,
        LinkLayer::RawIp,
        LinkLayer::LinuxSll,
        LinkLayer::LinuxSll2,
        LinkLayer::Infiniband,
        LinkLayer::Erf,
    ] {
        let p = decode(data, link, &cfg);
        let _ = write!(out, "{}", p.summary());
        p.for_each_field(&mut |f| {
            let _ = write!(out, "{}={:?}", f.name, f.value);
        });
        let _ = p.ext().to_owned();
        if let Some(bth) = p.bth() {
            let _ = bth.to_owned();
        }
    }
    out.len()
}

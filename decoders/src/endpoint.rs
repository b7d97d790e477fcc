//! The 16-byte endpoint a flow is keyed by: an IPv6 address, an IPv4
//! address mapped into IPv6, a RoCEv1/IB GID, or a native IB LID.
//!
//! A LID-only IB packet (no GRH) has no address; its LID is kept in the
//! discard-only prefix 100::/64 (RFC 6666), which no capture's traffic uses,
//! so that every table and key stays 16 bytes and one formatter names all.

use core::fmt;
use std::net::Ipv6Addr;

/// The two leading bytes of a LID endpoint (100::/64).
const LID_PREFIX: [u8; 2] = [0x01, 0x00];

/// The endpoint of LID `lid`.
#[inline]
pub fn lid_endpoint(lid: u16) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[..2].copy_from_slice(&LID_PREFIX);
    a[14..].copy_from_slice(&lid.to_be_bytes());
    a
}

/// The LID of a LID endpoint.
#[inline]
pub fn endpoint_lid(a: &[u8; 16]) -> Option<u16> {
    (a[..2] == LID_PREFIX && a[2..14].iter().all(|&b| b == 0))
        .then(|| u16::from_be_bytes([a[14], a[15]]))
}

/// Display adapter: `LID 0x0001`, `10.0.0.1` (IPv4-mapped as IPv4) or an
/// IPv6 address / GID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Endpoint(pub [u8; 16]);

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(lid) = endpoint_lid(&self.0) {
            return write!(f, "LID 0x{lid:04x}");
        }
        let v6 = Ipv6Addr::from(self.0);
        match v6.to_ipv4_mapped() {
            Some(v4) => fmt::Display::fmt(&v4, f),
            None => fmt::Display::fmt(&v6, f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lids_ipv4_and_gids_are_named_apart() {
        assert_eq!(Endpoint(lid_endpoint(1)).to_string(), "LID 0x0001");
        assert_eq!(endpoint_lid(&lid_endpoint(0xBEEF)), Some(0xBEEF));
        let mut v4 = [0u8; 16];
        v4[10] = 0xFF;
        v4[11] = 0xFF;
        v4[12..].copy_from_slice(&[10, 0, 0, 1]);
        assert_eq!(Endpoint(v4).to_string(), "10.0.0.1");
        assert_eq!(endpoint_lid(&v4), None);
        let gid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0, 0, 1];
        assert_eq!(Endpoint(gid).to_string(), "fe80::2:c903:0:1");
    }
}

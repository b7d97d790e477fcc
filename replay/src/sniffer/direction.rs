//! Inferring RX / TX for frames of a dump that does not record it.
//!
//! The sniffer merges both directions without a tag. Given the local card's
//! MAC or IP addresses, a frame sent from one of them is TX and a frame
//! addressed to one of them is RX; anything else (a broadcast from a third
//! host, traffic the card merely saw) stays unknown.

use std::net::IpAddr;

use crate::record::Direction;

/// The local card's addresses, for [`infer_direction`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalAddrs {
    /// Its MAC addresses.
    pub macs: Vec<[u8; 6]>,
    /// Its IPv4 / IPv6 addresses.
    pub ips: Vec<IpAddr>,
}

impl LocalAddrs {
    /// No addresses: every direction is unknown.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a MAC address.
    pub fn with_mac(mut self, mac: [u8; 6]) -> Self {
        self.macs.push(mac);
        self
    }

    /// Adds an IP address.
    pub fn with_ip(mut self, ip: impl Into<IpAddr>) -> Self {
        self.ips.push(ip.into());
        self
    }

    /// True when no address was given.
    pub fn is_empty(&self) -> bool {
        self.macs.is_empty() && self.ips.is_empty()
    }

    fn has_mac(&self, mac: &[u8]) -> bool {
        self.macs.iter().any(|m| m[..] == *mac)
    }

    fn has_ip(&self, ip: Option<IpAddr>) -> bool {
        ip.is_some_and(|ip| self.ips.contains(&ip))
    }
}

/// The direction of an Ethernet frame seen at the local card: `Tx` if its
/// source (MAC, IP, or ARP sender IP) is local, else `Rx` if its destination
/// (MAC, IP, or ARP target IP) is local, else `None`.
pub fn infer_direction(frame: &[u8], local: &LocalAddrs) -> Option<Direction> {
    let (dst_mac, src_mac) = (frame.get(0..6)?, frame.get(6..12)?);
    let (src_ip, dst_ip) = ip_addrs(frame);
    if local.has_mac(src_mac) || local.has_ip(src_ip) {
        Some(Direction::Tx)
    } else if local.has_mac(dst_mac) || local.has_ip(dst_ip) {
        Some(Direction::Rx)
    } else {
        None
    }
}

/// Source and destination IP (ARP: sender and target protocol address).
fn ip_addrs(frame: &[u8]) -> (Option<IpAddr>, Option<IpAddr>) {
    let mut off = 12;
    let mut tags = 0;
    let ethertype = loop {
        let Some(&[a, b]) = frame.get(off..off + 2) else {
            return (None, None);
        };
        let t = u16::from_be_bytes([a, b]);
        if matches!(t, 0x8100 | 0x88a8) && tags < 2 {
            tags += 1;
            off += 4;
        } else {
            break t;
        }
    };
    let l3 = off + 2;
    let v4 = |at: usize| -> Option<IpAddr> {
        let b: [u8; 4] = frame.get(at..at + 4)?.try_into().ok()?;
        Some(IpAddr::from(b))
    };
    let v6 = |at: usize| -> Option<IpAddr> {
        let b: [u8; 16] = frame.get(at..at + 16)?.try_into().ok()?;
        Some(IpAddr::from(b))
    };
    match ethertype {
        0x0800 => (v4(l3 + 12), v4(l3 + 16)),
        0x86dd | 0x8915 => (v6(l3 + 8), v6(l3 + 24)),
        0x0806 => (v4(l3 + 14), v4(l3 + 24)),
        _ => (None, None),
    }
}

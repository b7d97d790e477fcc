//! One-line, tshark-like summaries of decoded frames.

use std::fmt;

use crate::headers::Syndrome;
use crate::packet::{IcrcStatus, IpHeader, Packet, RoceVersion};

/// Display adapter: `src → dst PROTO info`, without frame number or time.
#[derive(Debug, Clone, Copy)]
pub struct Summary<'p, 'a>(&'p Packet<'a>);

impl<'a> Packet<'a> {
    pub fn summary(&self) -> Summary<'_, 'a> {
        Summary(self)
    }
}

fn mac(f: &mut fmt::Formatter<'_>, m: [u8; 6]) -> fmt::Result {
    write!(
        f,
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

impl fmt::Display for Summary<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0;
        match (p.ip(), p.grh()) {
            (Some(ip), _) => write!(f, "{} → {} ", ip.src_addr(), ip.dst_addr())?,
            (None, Some(grh)) => write!(
                f,
                "{} → {} ",
                std::net::Ipv6Addr::from(grh.src()),
                std::net::Ipv6Addr::from(grh.dst())
            )?,
            (None, None) if p.lrh().is_some() => {
                if let Some(lrh) = p.lrh() {
                    write!(f, "LID 0x{:04x} → LID 0x{:04x} ", lrh.slid(), lrh.dlid())?;
                }
            }
            (None, None) => {
                if let Some(eth) = p.eth() {
                    mac(f, eth.src())?;
                    f.write_str(" → ")?;
                    mac(f, eth.dst())?;
                    f.write_str(" ")?;
                }
            }
        }
        if let (Some(b), Some(version)) = (p.bth(), p.roce_version()) {
            let proto = match version {
                RoceVersion::V1 => "RoCEv1",
                RoceVersion::V2 => "RoCEv2",
                RoceVersion::Ib => "IB",
            };
            write!(
                f,
                "{proto} {} QP=0x{:06x} PSN={}",
                b.opcode(),
                b.dest_qp(),
                b.psn()
            )?;
            if b.ack_req() {
                f.write_str(" A")?;
            }
            if b.solicited() {
                f.write_str(" SE")?;
            }
            if b.fecn() {
                f.write_str(" FECN")?;
            }
            if b.becn() {
                f.write_str(" BECN")?;
            }
            if p.ip().is_some_and(|ip| ip.ecn() == 3) {
                f.write_str(" CE")?;
            }
            let x = p.ext();
            if let Some(h) = x.reth() {
                write!(
                    f,
                    " va=0x{:x} rkey=0x{:x} dmalen={}",
                    h.va(),
                    h.rkey(),
                    h.dma_len()
                )?;
            }
            if let Some(h) = x.aeth() {
                match h.syndrome() {
                    Syndrome::Ack { credits } => write!(f, " ACK credits={credits}")?,
                    Syndrome::RnrNak { timer } => write!(
                        f,
                        " RNR-NAK timer={timer} ({})",
                        crate::units::duration_text(Syndrome::rnr_timer_ns(timer))
                    )?,
                    Syndrome::Nak(code) => write!(f, " NAK ({})", code.name())?,
                    Syndrome::Reserved(s) => write!(f, " syndrome=0x{s:02x} (reserved)")?,
                }
                write!(f, " MSN={}", h.msn())?;
            }
            if let Some(h) = x.deth() {
                write!(f, " srcQP=0x{:06x} qkey=0x{:08x}", h.src_qp(), h.qkey())?;
            }
            if let Some(h) = x.immdt() {
                write!(f, " imm=0x{:08x}", h.value())?;
            }
            if let Some(h) = x.ieth() {
                write!(f, " inv_rkey=0x{:x}", h.rkey())?;
            }
            if let Some(h) = x.atomic_eth() {
                write!(
                    f,
                    " va=0x{:x} swap=0x{:x} cmp=0x{:x}",
                    h.va(),
                    h.swap_add(),
                    h.compare()
                )?;
            }
            if let Some(h) = x.atomic_ack_eth() {
                write!(f, " orig=0x{:x}", h.orig_rem_data())?;
            }
            if let Some(mad) = p.mad() {
                write!(f, " {}", mad.name())?;
            }
            if p.payload_len() > 0 {
                write!(f, " len={}", p.payload_len())?;
            }
            crc_status(f, "ICRC", p.icrc(), 8)?;
            crc_status(f, "VCRC", p.vcrc(), 4)?;
        } else if !other_layers(f, p)? {
            if let Some(udp) = p.udp() {
                write!(
                    f,
                    "UDP {} → {} len={}",
                    udp.src_port(),
                    udp.dst_port(),
                    udp.length()
                )?;
            } else if let Some(ip) = p.ip() {
                let proto = match ip {
                    IpHeader::V4(h) => h.protocol(),
                    IpHeader::V6(h) => h.next_header(),
                };
                write!(f, "IP proto {proto}")?;
            } else if let Some(lrh) = p.lrh() {
                write!(
                    f,
                    "IB LNH={} len={}",
                    lrh.lnh().bits(),
                    4 * lrh.pkt_len_words()
                )?;
            } else if let Some(et) = p.ethertype() {
                write!(f, "EtherType 0x{et:04x}")?;
            }
        }
        if let Some(e) = p.stop()
            && !(e.is_truncation() && p.icrc() == IcrcStatus::Truncated)
        {
            write!(
                f,
                " [{}: {e}]",
                if e.is_truncation() {
                    "cut"
                } else {
                    "malformed"
                }
            )?;
        }
        Ok(())
    }
}

/// EtherTypes summarised here that etherparse does not slice.
const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
const ETHERTYPE_LLDP: u16 = 0x88cc;

/// The layers rocescope does not analyse, named as a capture tool names
/// them: TCP, UDP, ICMP and ICMPv6 (behind any IPv6 extension headers),
/// ARP, LLDP, PAUSE and PFC frames. `Ok(false)` when none applies.
fn other_layers(f: &mut fmt::Formatter<'_>, p: &Packet<'_>) -> Result<bool, fmt::Error> {
    use etherparse::{LaxNetSlice, LaxSlicedPacket, TransportSlice};
    if p.link() != crate::packet::LinkLayer::Ethernet {
        return Ok(false);
    }
    let frame = p.frame();
    let l2 = frame.get(p.net_offset()..).unwrap_or_default();
    match p.ethertype() {
        Some(ETHERTYPE_MAC_CONTROL) => return mac_control(f, l2).map(|()| true),
        Some(ETHERTYPE_LLDP) => return lldp(f, l2).map(|()| true),
        _ => {}
    }
    let Ok(sliced) = LaxSlicedPacket::from_ethernet(frame) else {
        return Ok(false);
    };
    match (&sliced.transport, &sliced.net) {
        (Some(TransportSlice::Tcp(t)), _) => {
            write!(f, "TCP {} → {} [", t.source_port(), t.destination_port())?;
            let mut sep = "";
            for (on, name) in [
                (t.syn(), "SYN"),
                (t.fin(), "FIN"),
                (t.rst(), "RST"),
                (t.psh(), "PSH"),
                (t.ack(), "ACK"),
                (t.urg(), "URG"),
            ] {
                if on {
                    write!(f, "{sep}{name}")?;
                    sep = ", ";
                }
            }
            write!(f, "] seq={}", t.sequence_number())?;
            if t.ack() {
                write!(f, " ack={}", t.acknowledgment_number())?;
            }
            write!(f, " win={} len={}", t.window_size(), t.payload().len())?;
        }
        (Some(TransportSlice::Udp(u)), _) => write!(
            f,
            "UDP {} → {} len={}",
            u.source_port(),
            u.destination_port(),
            u.length()
        )?,
        (Some(TransportSlice::Icmpv4(i)), _) => {
            write!(f, "ICMP {}", icmpv4_name(i.type_u8(), i.code_u8()))?;
            if matches!(i.type_u8(), 0 | 8) {
                let b = i.bytes5to8();
                write!(
                    f,
                    " id=0x{:04x} seq={}",
                    u16::from_be_bytes([b[0], b[1]]),
                    u16::from_be_bytes([b[2], b[3]])
                )?;
            }
        }
        (Some(TransportSlice::Icmpv6(i)), _) => {
            write!(f, "ICMPv6 {}", icmpv6_name(i.type_u8(), i.code_u8()))?;
        }
        (None, Some(LaxNetSlice::Arp(a))) => {
            let ip = |b: &[u8]| {
                <[u8; 4]>::try_from(b)
                    .map(|b| std::net::Ipv4Addr::from(b).to_string())
                    .unwrap_or_else(|_| format!("{b:02x?}"))
            };
            match a.operation().0 {
                1 => write!(
                    f,
                    "ARP Who has {}? Tell {}",
                    ip(a.target_protocol_addr()),
                    ip(a.sender_protocol_addr())
                )?,
                2 => {
                    write!(f, "ARP {} is at ", ip(a.sender_protocol_addr()))?;
                    match <[u8; 6]>::try_from(a.sender_hw_addr()) {
                        Ok(m) => mac(f, m)?,
                        Err(_) => write!(f, "{:02x?}", a.sender_hw_addr())?,
                    }
                }
                op => write!(f, "ARP operation {op}")?,
            }
        }
        (None, Some(LaxNetSlice::Ipv4(ip))) => {
            write!(f, "IPv4 proto {}", ip.header().protocol().0)?;
        }
        (None, Some(LaxNetSlice::Ipv6(ip))) => {
            write!(f, "IPv6 next header {}", ip.payload().ip_number.0)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// IEEE 802.3 MAC Control: PAUSE (opcode 1) and PFC (opcode 0x0101, per
/// priority class), the frames that pause a lossless RoCE link.
fn mac_control(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    let u16_at = |i: usize| b.get(i..i + 2).map(|x| u16::from_be_bytes([x[0], x[1]]));
    match u16_at(0) {
        Some(1) => match u16_at(2) {
            Some(q) => write!(f, "MAC PAUSE quanta={q}"),
            None => f.write_str("MAC PAUSE"),
        },
        Some(0x0101) => {
            f.write_str("PFC")?;
            let Some(enabled) = u16_at(2) else {
                return Ok(());
            };
            let mut any = false;
            for class in 0..8 {
                if enabled >> class & 1 == 1 {
                    any = true;
                    match u16_at(4 + 2 * class) {
                        Some(0) => write!(f, " P{class}=resume")?,
                        Some(q) => write!(f, " P{class}={q}")?,
                        None => write!(f, " P{class}")?,
                    }
                }
            }
            if !any {
                f.write_str(" (no class enabled)")?;
            }
            Ok(())
        }
        Some(op) => write!(f, "MAC Control opcode 0x{op:04x}"),
        None => f.write_str("MAC Control"),
    }
}

/// LLDP: the chassis and port IDs and the TTL, from the TLVs.
fn lldp(f: &mut fmt::Formatter<'_>, mut b: &[u8]) -> fmt::Result {
    f.write_str("LLDP")?;
    for _ in 0..64 {
        let Some(&[hi, lo]) = b.get(..2).and_then(|x| <&[u8; 2]>::try_from(x).ok()) else {
            break;
        };
        let (kind, len) = (hi >> 1, usize::from(hi & 1) << 8 | usize::from(lo));
        let Some(value) = b.get(2..2 + len) else {
            f.write_str(" [cut]")?;
            break;
        };
        b = &b[2 + len..];
        match kind {
            0 => break,
            1 | 2 => {
                f.write_str(if kind == 1 { " chassis=" } else { " port=" })?;
                match value.split_first() {
                    // MAC address subtypes (chassis 4, port 3).
                    Some((&st, id))
                        if id.len() == 6 && (st == 4 && kind == 1 || st == 3 && kind == 2) =>
                    {
                        let mut m = [0u8; 6];
                        m.copy_from_slice(id);
                        mac(f, m)?;
                    }
                    Some((_, id)) if id.iter().all(|c| c.is_ascii_graphic() || *c == b' ') => {
                        f.write_str(&String::from_utf8_lossy(id))?;
                    }
                    Some((_, id)) => {
                        for c in id {
                            write!(f, "{c:02x}")?;
                        }
                    }
                    None => {}
                }
            }
            3 if len >= 2 => write!(f, " ttl={}", u16::from_be_bytes([value[0], value[1]]))?,
            _ => {}
        }
    }
    Ok(())
}

/// ICMP type names as tshark gives them.
fn icmpv4_name(kind: u8, code: u8) -> String {
    match kind {
        0 => "Echo (ping) reply".into(),
        3 => match code {
            0 => "Destination unreachable (Network unreachable)".into(),
            1 => "Destination unreachable (Host unreachable)".into(),
            3 => "Destination unreachable (Port unreachable)".into(),
            4 => "Destination unreachable (Fragmentation needed)".into(),
            c => format!("Destination unreachable (code {c})"),
        },
        5 => "Redirect".into(),
        8 => "Echo (ping) request".into(),
        11 => "Time-to-live exceeded".into(),
        12 => "Parameter problem".into(),
        k => format!("type {k} code {code}"),
    }
}

/// ICMPv6 type names as tshark gives them.
fn icmpv6_name(kind: u8, code: u8) -> String {
    match kind {
        1 => "Destination Unreachable".into(),
        2 => "Packet Too Big".into(),
        3 => "Time Exceeded".into(),
        4 => "Parameter Problem".into(),
        128 => "Echo (ping) request".into(),
        129 => "Echo (ping) reply".into(),
        130 => "Multicast Listener Query".into(),
        131 => "Multicast Listener Report".into(),
        132 => "Multicast Listener Done".into(),
        133 => "Router Solicitation".into(),
        134 => "Router Advertisement".into(),
        135 => "Neighbor Solicitation".into(),
        136 => "Neighbor Advertisement".into(),
        137 => "Redirect".into(),
        143 => "Multicast Listener Report Message v2".into(),
        k => format!("type {k} code {code}"),
    }
}

/// The ICRC's or VCRC's verdict, `name`d (`digits`: its width in hex).
fn crc_status(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    status: IcrcStatus,
    digits: usize,
) -> fmt::Result {
    match status {
        IcrcStatus::Ok => write!(f, " {name} ok"),
        IcrcStatus::Bad { stored, computed } => write!(
            f,
            " [{name} BAD 0x{stored:0digits$x}, expected 0x{computed:0digits$x}]"
        ),
        IcrcStatus::Truncated => write!(f, " {name} not captured"),
        IcrcStatus::Unchecked | IcrcStatus::None => Ok(()),
    }
}

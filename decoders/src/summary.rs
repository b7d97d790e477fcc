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
                        " RNR-NAK timer={timer} ({} µs)",
                        Syndrome::rnr_timer_ns(timer) / 1000
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
            if p.payload_len() > 0 {
                write!(f, " len={}", p.payload_len())?;
            }
            match p.icrc() {
                IcrcStatus::Ok => f.write_str(" ICRC ok")?,
                IcrcStatus::Bad { stored, computed } => {
                    write!(f, " [ICRC BAD 0x{stored:08x}, expected 0x{computed:08x}]")?
                }
                IcrcStatus::Truncated => f.write_str(" ICRC not captured")?,
                IcrcStatus::Unchecked | IcrcStatus::None => {}
            }
        } else if let Some(udp) = p.udp() {
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
        } else if let Some(et) = p.ethertype() {
            write!(f, "EtherType 0x{et:04x}")?;
        }
        if let Some(e) = p.stop() {
            if !(e.is_truncation() && p.icrc() == IcrcStatus::Truncated) {
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
        }
        Ok(())
    }
}

//! One-line summaries of the frames around RoCE on a real link: TCP, ICMP,
//! ICMPv6 behind an IPv6 extension header, ARP, LLDP, PAUSE and PFC.
#![allow(clippy::unwrap_used)]

use rocescope_decoders::{DecodeConfig, LinkLayer, decode};

const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 2];
const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 1];

fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&DST);
    f.extend_from_slice(&SRC);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    while f.len() < 60 {
        f.push(0);
    }
    f
}

fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let mut h = vec![
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    h[2..4].copy_from_slice(&total.to_be_bytes());
    let sum = rocescope_decoders::ipv4_checksum(&h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    h.extend_from_slice(payload);
    eth(0x0800, &h)
}

fn summary(frame: &[u8]) -> String {
    decode(frame, LinkLayer::Ethernet, &DecodeConfig::default())
        .summary()
        .to_string()
}

#[test]
fn tcp_shows_ports_flags_and_sequence() {
    let mut tcp = vec![0u8; 20];
    tcp[0..2].copy_from_slice(&5201u16.to_be_bytes());
    tcp[2..4].copy_from_slice(&34567u16.to_be_bytes());
    tcp[4..8].copy_from_slice(&1000u32.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = 0x12; // SYN, ACK
    tcp[8..12].copy_from_slice(&77u32.to_be_bytes());
    tcp[14..16].copy_from_slice(&64240u16.to_be_bytes());
    let s = summary(&ipv4(6, &tcp));
    assert_eq!(
        s,
        "10.0.0.1 → 10.0.0.2 TCP 5201 → 34567 [SYN, ACK] seq=1000 ack=77 win=64240 len=0"
    );
}

#[test]
fn icmp_echo_is_named() {
    let icmp = [8u8, 0, 0, 0, 0x12, 0x34, 0, 7];
    assert_eq!(
        summary(&ipv4(1, &icmp)),
        "10.0.0.1 → 10.0.0.2 ICMP Echo (ping) request id=0x1234 seq=7"
    );
}

#[test]
fn icmpv6_behind_a_hop_by_hop_header_is_named() {
    // IPv6, next header 0 (hop-by-hop: router alert), then ICMPv6 type 143.
    let hbh = [58u8, 0, 5, 2, 0, 0, 1, 0];
    let icmp = [143u8, 0, 0, 0, 0, 0, 0, 0];
    let mut ip = vec![0x60, 0, 0, 0];
    ip.extend_from_slice(&((hbh.len() + icmp.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&[0, 1]); // next header hop-by-hop, hop limit 1
    ip.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    ip.extend_from_slice(&[0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x16]);
    ip.extend_from_slice(&hbh);
    ip.extend_from_slice(&icmp);
    let s = summary(&eth(0x86dd, &ip));
    assert_eq!(
        s,
        "fe80::1 → ff02::16 ICMPv6 Multicast Listener Report Message v2"
    );
}

#[test]
fn arp_asks_and_answers() {
    let arp = |op: u8| {
        let mut a = vec![0, 1, 8, 0, 6, 4, 0, op];
        a.extend_from_slice(&SRC);
        a.extend_from_slice(&[10, 0, 0, 1]);
        a.extend_from_slice(&[0; 6]);
        a.extend_from_slice(&[10, 0, 0, 2]);
        eth(0x0806, &a)
    };
    assert!(
        summary(&arp(1)).ends_with("ARP Who has 10.0.0.2? Tell 10.0.0.1"),
        "{}",
        summary(&arp(1))
    );
    assert!(
        summary(&arp(2)).ends_with("ARP 10.0.0.1 is at 02:00:00:00:00:01"),
        "{}",
        summary(&arp(2))
    );
}

#[test]
fn lldp_names_chassis_port_and_ttl() {
    let tlv = |kind: u8, value: &[u8]| {
        let len = value.len() as u16;
        let mut t = vec![(kind << 1) | (len >> 8) as u8, len as u8];
        t.extend_from_slice(value);
        t
    };
    let mut l = tlv(1, &[4, 0x02, 0, 0, 0, 0, 1]);
    l.extend(tlv(2, b"\x05Ethernet1/1"));
    l.extend(tlv(3, &120u16.to_be_bytes()));
    l.extend(tlv(0, &[]));
    let s = summary(&eth(0x88cc, &l));
    assert!(
        s.ends_with("LLDP chassis=02:00:00:00:00:01 port=Ethernet1/1 ttl=120"),
        "{s}"
    );
}

#[test]
fn pause_and_pfc_frames_say_what_they_pause() {
    let pause = eth(0x8808, &[0, 1, 0xff, 0xff]);
    assert!(
        summary(&pause).ends_with("MAC PAUSE quanta=65535"),
        "{}",
        summary(&pause)
    );
    // PFC: classes 3 and 4 enabled; 3 paused, 4 resumed.
    let mut pfc = vec![0x01, 0x01, 0, 0b0001_1000];
    for class in 0..8u16 {
        let q: u16 = if class == 3 { 0xffff } else { 0 };
        pfc.extend_from_slice(&q.to_be_bytes());
    }
    let s = summary(&eth(0x8808, &pfc));
    assert!(s.ends_with("PFC P3=65535 P4=resume"), "{s}");
}

#[test]
fn truncated_frames_of_other_layers_never_panic() {
    let mut tcp = vec![0u8; 20];
    tcp[12] = 5 << 4;
    let full = ipv4(6, &tcp);
    for n in 0..full.len() {
        let _ = summary(&full[..n]);
    }
    for bytes in [
        &[0x88u8, 0xcc][..],
        &[0x88, 0x08, 1, 1],
        &[0x08, 0x06, 0, 1],
    ] {
        let mut f = DST.to_vec();
        f.extend_from_slice(&SRC);
        f.extend_from_slice(bytes);
        let _ = summary(&f);
    }
}

//! Writes assets/captures/sample-write-read.pcap, the capture `rocescope`
//! shows with no arguments: an RC WRITE of 4 KiB (PMTU 1024) whose second
//! packet is lost on the wire, the NAK and Go-Back-N resend that follow, then
//! a READ of 2 KiB and a CNP. Built by rocescope's own packet builders.
//!
//! `cargo run -p rocescope --example make_sample`
#![allow(clippy::unwrap_used)]

use std::io::Write;

use rocescope_decoders::{NakCode, Opcode, PacketBuilder, Reth, Syndrome};

const REQ: [u8; 4] = [10, 0, 0, 1];
const RESP: [u8; 4] = [10, 0, 0, 2];
const QP_AT_RESP: u32 = 0x12;
const QP_AT_REQ: u32 = 0x11;

fn request(opcode: Opcode, psn: u32, payload_len: usize, reth_len: Option<u32>) -> Vec<u8> {
    let mut b = PacketBuilder::rocev2_ipv4(REQ, RESP, opcode, QP_AT_RESP, psn);
    if let Some(len) = reth_len {
        b.ext.reth = Reth {
            va: 0x7f3a_0000_0000,
            rkey: 0x2d5,
            dma_len: len,
        };
    }
    let payload: Vec<u8> = (0..payload_len)
        .map(|i| (i * 7 + psn as usize) as u8)
        .collect();
    b.build(&payload)
}

fn response(opcode: Opcode, psn: u32, syndrome: Syndrome, msn: u32, payload_len: usize) -> Vec<u8> {
    let mut b = PacketBuilder::rocev2_ipv4(RESP, REQ, opcode, QP_AT_REQ, psn);
    b.ext.aeth.syndrome = syndrome.to_u8();
    b.ext.aeth.msn = msn;
    b.build(&vec![0x5a; payload_len])
}

fn main() {
    let ack = Syndrome::Ack { credits: 31 };
    let nak = Syndrome::Nak(NakCode::PsnSequenceError);
    let mut frames: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut t_ns = 1_764_400_000_000_000_000u64;
    let mut push = |gap_ns: u64, f: Vec<u8>| {
        t_ns += gap_ns;
        frames.push((t_ns, f));
    };
    push(0, request(Opcode::RC_WRITE_FIRST, 100, 1024, Some(4096)));
    push(3_000, response(Opcode::RC_ACK, 100, ack, 0, 0));
    // PSN 101 is lost on the wire: the sniffer never sees it.
    push(200, request(Opcode::RC_WRITE_MIDDLE, 102, 1024, None));
    push(2_800, response(Opcode::RC_ACK, 101, nak, 0, 0));
    push(100, request(Opcode::RC_WRITE_LAST, 103, 1024, None));
    // Go-Back-N from the NAKed PSN.
    push(1_900, request(Opcode::RC_WRITE_MIDDLE, 101, 1024, None));
    push(100, request(Opcode::RC_WRITE_MIDDLE, 102, 1024, None));
    push(100, request(Opcode::RC_WRITE_LAST, 103, 1024, None));
    push(2_700, response(Opcode::RC_ACK, 101, ack, 0, 0));
    push(100, response(Opcode::RC_ACK, 102, ack, 0, 0));
    push(100, response(Opcode::RC_ACK, 103, ack, 1, 0));
    // READ of 2 KiB: one request consumes two PSNs; responses reuse them.
    push(5_000, request(Opcode::RC_READ_REQUEST, 104, 0, Some(2048)));
    push(
        4_200,
        response(Opcode::RC_READ_RESPONSE_FIRST, 104, ack, 1, 1024),
    );
    push(100, response(Opcode(0x0F), 105, ack, 2, 1024));
    // The switch marked a packet; the responder's NIC answers with a CNP.
    let mut cnp = PacketBuilder::rocev2_ipv4(RESP, REQ, Opcode::CNP, QP_AT_REQ, 0);
    cnp.bth.becn = true;
    cnp.udp_src_port = 0;
    push(1_000, cnp.build(&[]));

    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/captures/sample-write-read.pcap");
    // Classic pcap, nanosecond magic, Ethernet.
    let out = rocescope_testkit::pcap_ns_bytes(1, frames.iter().map(|(ts, f)| (*ts, f)));
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&out)
        .unwrap();
    println!("wrote {} frames to {}", frames.len(), path.display());
}

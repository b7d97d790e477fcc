//! Native InfiniBand captures end to end through the real binary: a WRITE
//! stream between LID 0x0001 and LID 0x0002 with a NAK and its Go-Back-N
//! resend, written as pcap LINKTYPE_INFINIBAND (247) and as ERF InfiniBand
//! records (LINKTYPE_ERF, 197), read by `decode --format jsonl` and `stats`.
#![allow(clippy::unwrap_used)]

mod support;

use support::{rocescope, rocescope_json, sample_qp, tmp};

use rocescope_decoders::{Aeth, NakCode, Opcode, PacketBuilder, Syndrome};

fn write(psn: u32) -> Vec<u8> {
    PacketBuilder::ib(0x0001, 0x0002, Opcode::RC_WRITE_MIDDLE, 0x12, psn).build(&[0xAB; 256])
}

fn ack(psn: u32, syndrome: Syndrome) -> Vec<u8> {
    let mut b = PacketBuilder::ib(0x0002, 0x0001, Opcode::RC_ACK, 0x11, psn);
    b.ext.aeth = Aeth {
        syndrome: syndrome.to_u8(),
        msn: 0,
    };
    b.build(&[])
}

/// 100 acknowledged; 101 lost; 102 out of sequence; NAK 101; 103; the
/// requester goes back to 101 and resends 101..=103; ACKs; new data 104.
fn frames() -> Vec<Vec<u8>> {
    let ok = Syndrome::Ack { credits: 31 };
    vec![
        write(100),
        ack(100, ok),
        write(102),
        ack(101, Syndrome::Nak(NakCode::PsnSequenceError)),
        write(103),
        write(101),
        write(102),
        write(103),
        ack(103, ok),
        write(104),
        ack(104, ok),
    ]
}

/// A pcap of `records` 10 µs apart from 1 s on.
fn pcap(linktype: u32, records: &[Vec<u8>]) -> Vec<u8> {
    let each = records.iter().enumerate();
    rocescope_testkit::pcap_bytes(linktype, each.map(|(i, f)| (1_000_000 + i as u64 * 10, f)))
}

/// An ERF InfiniBand record with one extension header (as a DAG card adds).
fn erf(frame: &[u8]) -> Vec<u8> {
    let mut r = vec![0u8; 8];
    r.push(21 | 0x80); // ERF_TYPE_INFINIBAND, an extension header follows
    r.push(0x04);
    r.extend_from_slice(&((24 + frame.len()) as u16).to_be_bytes());
    r.extend_from_slice(&0u16.to_be_bytes());
    r.extend_from_slice(&(frame.len() as u16).to_be_bytes());
    r.extend_from_slice(&[0x03, 0, 0, 0, 0, 0, 0, 0]); // last extension header
    r.extend_from_slice(frame);
    r
}

fn check(path: &std::path::Path) {
    let p = path.to_str().unwrap();
    let rows = support::decode_jsonl(path);
    assert_eq!(rows.len(), 11);
    for r in &rows {
        assert_eq!(r["icrc"], "ok", "{r}");
        assert_eq!(r["vcrc"], "ok", "{r}");
    }
    assert_eq!(rows[0]["infiniband.lrh.slid"], 1);
    assert_eq!(rows[0]["infiniband.lrh.dlid"], 2);
    assert_eq!(rows[0]["infiniband.lrh.lnh"], 2);
    assert_eq!(rows[0]["infiniband.bth.psn"], 100);
    assert_eq!(rows[3]["infiniband.aeth.syndrome"], 0x60);
    support::sample_flags(&rows);

    let text = String::from_utf8(rocescope(&["decode", p]).stdout).unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("LID 0x0001 → LID 0x0002 IB RC RDMA WRITE Middle"),
        "{text}"
    );

    let v = rocescope_json(&["stats", p, "--json"]);
    sample_qp(&v, "LID 0x0001", "LID 0x0002");
    let text = String::from_utf8(rocescope(&["stats", p]).stdout).unwrap();
    assert!(text.contains("LID 0x0001 > LID 0x0002"), "{text}");
}

#[test]
fn an_ib_capture_decodes_and_its_go_back_n_episode_is_found() {
    let frames = frames();
    let dlt = tmp("ib-cli", "ib.pcap");
    std::fs::write(&dlt, pcap(247, &frames)).unwrap();
    check(&dlt);
    let records: Vec<Vec<u8>> = frames.iter().map(|f| erf(f)).collect();
    let erf_path = tmp("ib-cli", "ib-erf.pcap");
    std::fs::write(&erf_path, pcap(197, &records)).unwrap();
    check(&erf_path);
    let _ = std::fs::remove_file(&dlt);
    let _ = std::fs::remove_file(&erf_path);
}

/// SENDs both ways on one QP pair: `stats` shows each end's requests as a
/// row of its own, named by which end sent them.
#[test]
fn stats_shows_each_requesting_end_of_a_qp_pair_apart() {
    let ok = Syndrome::Ack { credits: 31 };
    let send =
        |slid, dlid, qp, psn| PacketBuilder::ib(slid, dlid, Opcode(0x04), qp, psn).build(&[1; 64]);
    let ack = |slid, dlid, qp, psn| {
        let mut b = PacketBuilder::ib(slid, dlid, Opcode::RC_ACK, qp, psn);
        b.ext.aeth = Aeth {
            syndrome: ok.to_u8(),
            msn: 0,
        };
        b.build(&[])
    };
    // LID 1 (QP 0x11) sends 2 SENDs to LID 2 (QP 0x12), which sends 5 back.
    let mut frames = Vec::new();
    for psn in 0..2 {
        frames.push(send(1, 2, 0x12, psn));
        frames.push(ack(2, 1, 0x11, psn));
    }
    for psn in 700..705 {
        frames.push(send(2, 1, 0x11, psn));
        frames.push(ack(1, 2, 0x12, psn));
    }
    let path = tmp("ib-cli", "both.pcap");
    std::fs::write(&path, pcap(247, &frames)).unwrap();
    let p = path.to_str().unwrap();
    let v = rocescope_json(&["stats", p, "--json"]);
    let qps = v["qps"].as_array().unwrap();
    assert_eq!(qps.len(), 2, "{v}");
    let row = |src: &str| qps.iter().find(|q| q["src_ip"] == src).unwrap();
    let (one, two) = (row("LID 0x0001"), row("LID 0x0002"));
    assert_eq!(
        (one["dest_qp"].as_u64(), one["requests"].as_u64()),
        (Some(0x12), Some(2))
    );
    assert_eq!(
        (two["dest_qp"].as_u64(), two["requests"].as_u64()),
        (Some(0x11), Some(5))
    );
    assert_eq!(two["next_psn"], 705);
    assert_eq!(one["both_request"], true);
    let text = String::from_utf8(rocescope(&["stats", p]).stdout).unwrap();
    rocescope_testkit::assert_contains(&text, "LID 0x0001 > LID 0x0002 (both ends request)");
    rocescope_testkit::assert_contains(&text, "LID 0x0002 > LID 0x0001 (both ends request)");
    let _ = std::fs::remove_file(&path);
}

//! Native InfiniBand frames built by rocescope's builders (RC SEND, WRITE,
//! READ and its response, ACK, a global packet with a GRH, SMP and SA MADs,
//! a CM REQ), written as pcap LINKTYPE_INFINIBAND (247) and as ERF records
//! (LINKTYPE_ERF, 197, the InfiniBand record type), read back by real
//! tshark: every field tshark shows must hold the value rocescope decodes.
//! Skipped where tshark is not installed, unless ROCESCOPE_REQUIRE_TSHARK is
//! set (as in .ci/run).
#![allow(clippy::unwrap_used)]

use rocescope_decoders::*;

mod support;
use support::tshark_available;

/// The fields compared, by tshark's names.
fn fields() -> Vec<&'static str> {
    support::fields_around(
        &[
            "frame.number",
            "infiniband.lrh.vl",
            "infiniband.lrh.lver",
            "infiniband.lrh.sl",
            "infiniband.lrh.lnh",
            "infiniband.lrh.dlid",
            "infiniband.lrh.pktlen",
            "infiniband.lrh.slid",
            "infiniband.grh.tclass",
            "infiniband.grh.flowlabel",
            "infiniband.grh.paylen",
            "infiniband.grh.nxthdr",
            "infiniband.grh.hoplmt",
            "infiniband.bth.opcode",
        ],
        &[
            "infiniband.mad.mgmtclass",
            "infiniband.mad.method",
            "infiniband.mad.attributeid",
            "infiniband.mad.transactionid",
            "infiniband.invariant.crc",
            "infiniband.variant.crc",
            "erf.types.type",
            "erf.wlen",
            "erf.rlen",
        ],
    )
}

/// A MAD: base header (class, method, attribute, TID) and `data` after it.
fn mad(class: u8, method: u8, attr: u16, tid: u64, data: &[u8]) -> Vec<u8> {
    let mut m = vec![1, class, if class == 0x07 { 2 } else { 1 }, method];
    m.extend_from_slice(&[0; 4]);
    m.extend_from_slice(&tid.to_be_bytes());
    m.extend_from_slice(&attr.to_be_bytes());
    m.extend_from_slice(&[0; 6]);
    m.extend_from_slice(data);
    m.resize(256, 0);
    m
}

/// The frames, their payloads, and the MAD name each should get.
fn frames() -> Vec<(Vec<u8>, Option<&'static str>)> {
    let mut out = Vec::new();
    let data: Vec<u8> = (0..40).collect();
    let send = PacketBuilder::ib(0x0001, 0x0002, Opcode(0x04), 0x000012, 100);
    out.push((send.build(&data), None));
    let mut write = PacketBuilder::ib(0x0001, 0x0002, Opcode(0x0A), 0x000012, 101);
    write.ext.reth = Reth {
        va: 0x7f00_1234_5000,
        rkey: 0x1357,
        dma_len: 27,
    };
    out.push((write.build(&data[..27]), None));
    let mut read = PacketBuilder::ib(0x0001, 0x0002, Opcode(0x0C), 0x000012, 102);
    read.ext.reth = Reth {
        va: 0x7f00_1234_6000,
        rkey: 0x2468,
        dma_len: 16,
    };
    out.push((read.build(&[]), None));
    let mut resp = PacketBuilder::ib(0x0002, 0x0001, Opcode(0x10), 0x000034, 102);
    resp.ext.aeth = Aeth {
        syndrome: 0x1F,
        msn: 3,
    };
    out.push((resp.build(&data[..16]), None));
    let mut ack = PacketBuilder::ib(0x0002, 0x0001, Opcode(0x11), 0x000034, 101);
    ack.ext.aeth = Aeth {
        syndrome: 0x60,
        msn: 2,
    };
    out.push((ack.build(&[]), None));
    let mut global = PacketBuilder::ib(0x0001, 0x0002, Opcode(0x04), 0x000012, 103);
    global.lrh.lnh = Lnh::IbaGlobal;
    global.lrh.sl = 3;
    global.lrh.vl = 2;
    global.net = NetHeader::Ipv6 {
        src: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0, 0, 1],
        dst: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 0, 0, 2],
        traffic_class: 0x20,
        flow_label: 0x12345,
        hop_limit: 7,
    };
    out.push((global.build(&data[..5]), None));
    // SMP to QP0 on the management lane, SA query and CM REQ to QP1.
    let ud = |dqp: u32, vl: u8, payload: Vec<u8>, name| {
        let mut b = PacketBuilder::ib(0x0001, 0x0005, Opcode(0x64), dqp, 7);
        b.lrh.vl = vl;
        b.bth.ack_req = false;
        b.ext.deth = Deth {
            qkey: if dqp == 0 { 0 } else { 0x8001_0000 },
            src_qp: dqp,
        };
        (b.build(&payload), Some(name))
    };
    out.push(ud(
        0,
        15,
        mad(0x01, 0x01, 0x0020, 0x11, &[]),
        "SubnGet(SMInfo)",
    ));
    out.push(ud(
        1,
        0,
        mad(0x03, 0x01, 0x0035, 0x12, &[]),
        "SubnAdmGet(PathRecord)",
    ));
    let mut req = vec![0u8; 232];
    req[0..4].copy_from_slice(&0x0000_abcdu32.to_be_bytes()); // local comm id
    req[32..36].copy_from_slice(&(0x12u32 << 8).to_be_bytes()); // local QPN
    out.push(ud(
        1,
        0,
        mad(0x07, 0x03, 0x0010, 0x13, &req),
        "CM: ConnectRequest",
    ));
    out
}

/// An ERF record of the InfiniBand type around `frame`, as ibdump writes.
/// A pcap of `frames` a second apart from 1 s on.
fn pcap(linktype: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let secs = frames.iter().enumerate();
    rocescope_testkit::pcap_bytes(linktype, secs.map(|(i, f)| ((i as u64 + 1) * 1_000_000, f)))
}

fn erf(i: usize, frame: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(16 + frame.len());
    r.extend_from_slice(&(((i as u64) + 1) << 32).to_le_bytes());
    r.push(21); // ERF_TYPE_INFINIBAND, no extension header
    r.push(0x04); // varying-length record
    r.extend_from_slice(&((16 + frame.len()) as u16).to_be_bytes());
    r.extend_from_slice(&0u16.to_be_bytes());
    r.extend_from_slice(&(frame.len() as u16).to_be_bytes());
    r.extend_from_slice(frame);
    r
}

/// tshark 4.0's wiretap does not map LINKTYPE_INFINIBAND (247) in pcap
/// files; the same frames go to its InfiniBand dissector as DLT_USER0 (147)
/// through its user DLT table, as a Wireshark user reads such a file.
const USER_DLT_INFINIBAND: &str =
    "uat:user_dlts:\"User 0 (DLT=147)\",\"infiniband\",\"0\",\"\",\"0\",\"\"";

/// What tshark shows of the frames in `path`: the compared fields, then
/// its info column.
fn tshark_fields(path: &std::path::Path) -> Vec<Vec<String>> {
    let mut fields = fields();
    fields.push("_ws.col.Info");
    support::tshark_fields(
        path,
        // Its RPC-over-RDMA heuristic takes short SEND payloads for its own.
        &["-o", USER_DLT_INFINIBAND, "--disable-protocol", "rpcordma"],
        &fields,
    )
}

fn compare(link: LinkLayer, records: &[Vec<u8>], names: &[Option<&str>], rows: &[Vec<String>]) {
    assert_eq!(rows.len(), records.len(), "tshark frame count");
    let mut compared = 0;
    for ((rec, name), cols) in records.iter().zip(names).zip(rows) {
        let p = decode(rec, link, &DecodeConfig::default());
        assert_eq!(p.roce_version(), Some(RoceVersion::Ib), "{}", p.summary());
        assert_eq!(p.stop(), None, "{}", p.summary());
        assert_eq!(p.icrc(), IcrcStatus::Ok, "{}", p.summary());
        assert_eq!(p.vcrc(), IcrcStatus::Ok, "{}", p.summary());
        let ours = support::our_fields(&p);
        for (field, theirs) in fields().iter().zip(cols).skip(1) {
            if theirs.is_empty() {
                assert!(
                    !ours.contains_key(field),
                    "{field}: we decode {:?}, tshark shows nothing: {cols:?}",
                    ours.get(field)
                );
                continue;
            }
            assert_eq!(
                ours.get(field).copied(),
                rocescope_testkit::tshark_number(theirs),
                "{field}: tshark says {theirs}; {}",
                p.summary()
            );
            compared += 1;
        }
        let info = cols.last().unwrap();
        if let Some(name) = name {
            assert!(info.contains(name), "tshark's info {info:?} lacks {name}");
            let ours = p.summary().to_string();
            assert!(ours.contains(name), "our summary {ours:?} lacks {name}");
        }
    }
    assert!(compared > 150, "only {compared} values compared");
}

#[test]
fn tshark_reads_our_ib_frames_as_we_do_from_dlt_infiniband_and_erf() {
    if !tshark_available() {
        return;
    }
    let (frames, names): (Vec<Vec<u8>>, Vec<Option<&str>>) = frames().into_iter().unzip();
    let folder = rocescope_testkit::temp_dir("ib");
    let dir = folder.path().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();

    // rocescope maps 247 to native IB; tshark reads the same records as
    // user DLT 0.
    assert_eq!(LinkLayer::from_linktype(247), Some(LinkLayer::Infiniband));
    assert_eq!(LinkLayer::from_linktype(197), Some(LinkLayer::Erf));
    let path = dir.join("ib-user0.pcap");
    std::fs::write(&path, pcap(147, &frames)).unwrap();
    compare(
        LinkLayer::Infiniband,
        &frames,
        &names,
        &tshark_fields(&path),
    );

    let records: Vec<Vec<u8>> = frames.iter().enumerate().map(|(i, f)| erf(i, f)).collect();
    let path = dir.join("ib-erf.pcap");
    std::fs::write(&path, pcap(197, &records)).unwrap();
    compare(LinkLayer::Erf, &records, &names, &tshark_fields(&path));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The ICRC covers what a switch keeps (VL masked), the VCRC every byte of
/// the LRH through the ICRC: changing the VL breaks only the VCRC, a
/// payload byte both, and a frame without its VCRC checks the ICRC alone.
#[test]
fn ib_icrc_masks_the_vl_and_the_vcrc_covers_it() {
    let b = PacketBuilder::ib(1, 2, Opcode(0x04), 0x12, 5);
    let frame = b.build(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let cfg = DecodeConfig::default();
    let mut vl = frame.clone();
    vl[0] ^= 0x30;
    let p = decode(&vl, LinkLayer::Infiniband, &cfg);
    assert_eq!(p.icrc(), IcrcStatus::Ok);
    assert!(matches!(p.vcrc(), IcrcStatus::Bad { .. }), "{:?}", p.vcrc());
    let mut data = frame.clone();
    let at = data.len() - 7;
    data[at] ^= 1;
    let p = decode(&data, LinkLayer::Infiniband, &cfg);
    assert!(matches!(p.icrc(), IcrcStatus::Bad { .. }));
    assert!(matches!(p.vcrc(), IcrcStatus::Bad { .. }));
    assert!(p.summary().to_string().contains("ICRC BAD"));
    let cut = &frame[..frame.len() - 2];
    let p = decode(cut, LinkLayer::Infiniband, &cfg);
    assert_eq!(
        (p.icrc(), p.vcrc()),
        (IcrcStatus::Ok, IcrcStatus::Truncated)
    );
    // Every prefix decodes without a panic and says where it stopped.
    for n in 0..frame.len() {
        let p = decode(&frame[..n], LinkLayer::Infiniband, &cfg);
        if n < frame.len() - 2 {
            assert!(p.stop().is_some_and(|e| e.is_truncation()), "prefix {n}");
        }
    }
    // An ERF record of another type is named, not decoded as IB.
    let mut rec = vec![0u8; 16];
    rec[8] = 2; // ERF_TYPE_ETH
    rec.extend_from_slice(&frame);
    let p = decode(&rec, LinkLayer::Erf, &cfg);
    assert!(
        p.stop()
            .is_some_and(|e| e.to_string().contains("record type"))
    );
}

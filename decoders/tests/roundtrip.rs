//! Property tests: build -> decode -> equal, for every opcode the tables
//! define, over IPv4, IPv6 and RoCEv1, with and without VLAN tags; cut frames
//! decode as far as their bytes go; arbitrary bytes never panic.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use rocescope_decoders::*;

fn known_opcodes() -> Vec<u8> {
    (0..=255u8)
        .filter(|b| !matches!(Opcode(*b).kind(), OpcodeKind::Unknown(_)))
        .collect()
}

/// Zero the extended-header values the opcode does not carry.
fn mask_ext(x: Ext, h: Headers) -> Ext {
    fn kept<T: Default>(h: Headers, flag: Headers, v: T) -> T {
        if h.contains(flag) { v } else { T::default() }
    }
    Ext {
        rdeth_ee_context: kept(h, Headers::RDETH, x.rdeth_ee_context),
        deth: kept(h, Headers::DETH, x.deth),
        xrc_srq: kept(h, Headers::XRCETH, x.xrc_srq),
        feth_selectivity: kept(h, Headers::FETH, x.feth_selectivity),
        feth_placement: kept(h, Headers::FETH, x.feth_placement),
        reth: kept(h, Headers::RETH, x.reth),
        atomic_eth: kept(h, Headers::ATOMICETH, x.atomic_eth),
        aeth: kept(h, Headers::AETH, x.aeth),
        atomic_ack_orig: kept(h, Headers::ATOMICACKETH, x.atomic_ack_orig),
        immdt: kept(h, Headers::IMMDT, x.immdt),
        ieth_rkey: kept(h, Headers::IETH, x.ieth_rkey),
    }
}

prop_compose! {
    fn arb_ext()(
        rdeth in 0..0x100_0000u32, qkey in any::<u32>(), src_qp in 0..0x100_0000u32,
        xrc in 0..0x100_0000u32, sel in 0..4u8, plt in 0..16u8,
        va in any::<u64>(), rkey in any::<u32>(), dma_len in any::<u32>(),
        ava in any::<u64>(), arkey in any::<u32>(), swap in any::<u64>(), cmp in any::<u64>(),
        syn in any::<u8>(), msn in 0..0x100_0000u32, orig in any::<u64>(),
        imm in any::<u32>(), inv in any::<u32>(),
    ) -> Ext {
        Ext {
            rdeth_ee_context: rdeth,
            deth: Deth { qkey, src_qp },
            xrc_srq: xrc,
            feth_selectivity: sel,
            feth_placement: plt,
            reth: Reth { va, rkey, dma_len },
            atomic_eth: AtomicEth { va: ava, rkey: arkey, swap_add: swap, compare: cmp },
            aeth: Aeth { syndrome: syn, msn },
            atomic_ack_orig: orig,
            immdt: imm,
            ieth_rkey: inv,
        }
    }
}

fn link(b: &PacketBuilder) -> LinkLayer {
    match b.version {
        RoceVersion::Ib => LinkLayer::Infiniband,
        _ => LinkLayer::Ethernet,
    }
}

prop_compose! {
    fn arb_builder()(
        opcode in proptest::sample::select(known_opcodes()),
        flavour in 0..5u8,
        slid in any::<u16>(), dlid in any::<u16>(), sl in 0..16u8, vl in 0..16u8,
        vlans in proptest::collection::vec(0..0x1000u16, 0..=2),
        src4 in any::<[u8; 4]>(), dst4 in any::<[u8; 4]>(),
        src6 in any::<[u8; 16]>(), dst6 in any::<[u8; 16]>(),
        dscp in 0..64u8, ecn in 0..4u8, ttl in any::<u8>(), id in any::<u16>(),
        flow in 0..0x10_0000u32,
        sport in any::<u16>(),
        se in any::<bool>(), m in any::<bool>(), tver in 0..16u8, pkey in any::<u16>(),
        fecn in any::<bool>(), becn in any::<bool>(), qp in 0..0x100_0000u32,
        a in any::<bool>(), psn in 0..0x100_0000u32,
        ext in arb_ext(),
    ) -> PacketBuilder {
        let (version, net) = match flavour {
            0 => (RoceVersion::V2, NetHeader::Ipv4 { src: src4, dst: dst4, dscp, ecn, ttl, id }),
            1 => (RoceVersion::V2, NetHeader::Ipv6 { src: src6, dst: dst6, traffic_class: (dscp << 2) | ecn, flow_label: flow, hop_limit: ttl }),
            3 | 4 => (RoceVersion::Ib, NetHeader::Ipv6 { src: src6, dst: dst6, traffic_class: (dscp << 2) | ecn, flow_label: flow, hop_limit: ttl }),
            _ => (RoceVersion::V1, NetHeader::Ipv6 { src: src6, dst: dst6, traffic_class: (dscp << 2) | ecn, flow_label: flow, hop_limit: ttl }),
        };
        PacketBuilder {
            eth_dst: [2, 0, 0, 0, 0, 2],
            eth_src: [2, 0, 0, 0, 0, 1],
            // Native IB has no Ethernet header, so no tags.
            vlans: if flavour >= 3 { Vec::new() } else { vlans },
            version,
            net,
            udp_src_port: sport,
            udp_dst_port: ROCEV2_UDP_PORT,
            bth: Bth { opcode, solicited: se, mig_req: m, pad_count: 0, tver, pkey, fecn, becn, dest_qp: qp, ack_req: a, psn },
            ext,
            pad_to_min_frame: true,
            lrh: Lrh {
                slid, dlid, sl, vl, lver: 0,
                lnh: if flavour == 4 { Lnh::IbaGlobal } else { Lnh::IbaLocal },
                pkt_len_words: 0,
            },
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn build_decode_equal(b in arb_builder(), payload in proptest::collection::vec(any::<u8>(), 0..200)) {
        let opcode = Opcode(b.bth.opcode);
        let payload: &[u8] = if opcode.is_cnp() { &[] } else { &payload };
        let frame = b.build(payload);
        let p = decode(&frame, link(&b), &DecodeConfig::default());
        prop_assert_eq!(p.stop(), None, "{}", p.summary());
        prop_assert_eq!(p.icrc(), IcrcStatus::Ok);
        prop_assert_eq!(p.roce_version(), Some(b.version));
        let pad = ((4 - payload.len() % 4) % 4) as u8;
        prop_assert_eq!(p.bth().unwrap().to_owned(), Bth { pad_count: pad, ..b.bth });
        prop_assert_eq!(p.ext().to_owned(), mask_ext(b.ext, opcode.headers()));
        prop_assert_eq!(p.payload(), payload);
        prop_assert_eq!(p.payload_len(), payload.len());
        prop_assert_eq!(p.vlans().map(|v| v.vid()).collect::<Vec<_>>(), b.vlans.clone());
        match (b.version, b.net, p.ip()) {
            (RoceVersion::V2, NetHeader::Ipv4 { src, dst, dscp, ecn, ttl, .. }, Some(IpHeader::V4(ip))) => {
                prop_assert_eq!((ip.src(), ip.dst(), ip.dscp(), ip.ecn(), ip.ttl()), (src, dst, dscp, ecn, ttl));
                prop_assert!(ip.checksum_ok());
                prop_assert_eq!(p.udp().unwrap().src_port(), b.udp_src_port);
            }
            (RoceVersion::V2, NetHeader::Ipv6 { src, dst, traffic_class, flow_label, .. }, Some(IpHeader::V6(ip))) => {
                prop_assert_eq!((ip.src(), ip.dst(), ip.traffic_class(), ip.flow_label()), (src, dst, traffic_class, flow_label));
            }
            (RoceVersion::V1, NetHeader::Ipv6 { src, dst, .. }, None) => {
                let grh = p.grh().unwrap();
                prop_assert_eq!((grh.src(), grh.dst()), (src, dst));
            }
            (RoceVersion::Ib, NetHeader::Ipv6 { src, dst, .. }, None) => {
                let lrh = p.lrh().unwrap();
                prop_assert_eq!((lrh.slid(), lrh.dlid(), lrh.sl(), lrh.vl()), (b.lrh.slid, b.lrh.dlid, b.lrh.sl, b.lrh.vl));
                prop_assert_eq!(p.vcrc(), IcrcStatus::Ok);
                match b.lrh.lnh {
                    Lnh::IbaGlobal => prop_assert_eq!(p.grh().map(|g| (g.src(), g.dst())), Some((src, dst))),
                    _ => prop_assert!(p.grh().is_none()),
                }
            }
            other => prop_assert!(false, "unexpected network layer {:?}", other),
        }
        // Flipping any bit of the invariant part breaks the ICRC.
        let mut bad = frame.clone();
        let i = p.bth_offset();
        bad[i + 2] ^= 0x01; // P_Key
        let q = decode(&bad, link(&b), &DecodeConfig::default());
        let is_bad = matches!(q.icrc(), IcrcStatus::Bad { .. });
        prop_assert!(is_bad);
        // ...but the variant FECN/BECN bits do not.
        let mut variant = frame.clone();
        variant[i + 4] ^= 0xC0;
        prop_assert_eq!(decode(&variant, link(&b), &DecodeConfig::default()).icrc(), IcrcStatus::Ok);
    }

    #[test]
    fn header_only_frames_decode_all_headers(b in arb_builder(), payload_len in 0usize..9000) {
        let opcode = Opcode(b.bth.opcode);
        let payload_len = if opcode.is_cnp() { 0 } else { payload_len };
        // An LRH's PktLen (11 bits of words) carries at most an IB MTU of 4096.
        let payload_len = if b.version == RoceVersion::Ib { payload_len.min(4096) } else { payload_len };
        let mut frame = Vec::new();
        b.build_headers_into(payload_len, &mut frame);
        prop_assert_eq!(frame.len(), b.header_len());
        let p = decode(&frame, link(&b), &DecodeConfig::default());
        prop_assert_eq!(p.icrc(), IcrcStatus::Truncated);
        prop_assert_eq!(p.payload_len(), payload_len);
        prop_assert_eq!(p.ext().to_owned(), mask_ext(b.ext, opcode.headers()));
        let stop = p.stop().unwrap();
        prop_assert!(stop.is_truncation());
        let want = if payload_len == 0 { Layer::Icrc } else { Layer::Payload };
        prop_assert_eq!(stop.layer, want);
        prop_assert_eq!(stop.offset, b.header_len());
    }

    #[test]
    fn every_prefix_of_a_frame_decodes_without_panic(b in arb_builder(), payload in proptest::collection::vec(any::<u8>(), 0..64)) {
        let opcode = Opcode(b.bth.opcode);
        let payload: &[u8] = if opcode.is_cnp() { &[] } else { &payload };
        let frame = b.build(payload);
        let roce_end = b.header_len() + payload.len() + (4 - payload.len() % 4) % 4 + 4;
        for n in 0..frame.len() {
            let cut = &frame[..n];
            let p = decode(cut, link(&b), &DecodeConfig::default());
            // Cut inside the announced packet: decoding must say where it stopped.
            prop_assert_eq!(p.stop().is_some(), n < roce_end, "n={} {}", n, p.summary());
            if let Some(e) = p.stop() {
                prop_assert!(e.offset <= n, "stop offset {} beyond cut {}", e.offset, n);
            }
            prop_assert!(p.icrc() != IcrcStatus::Ok || n >= b.header_len() + payload.len() + 4);
            let _ = p.summary().to_string();
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        rocescope_decoders::exercise(&data);
    }
}

#[test]
fn errors_name_layer_and_offset() {
    let b = PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_WRITE_FIRST, 7, 1);
    let frame = b.build(&[1, 2, 3, 4]);
    // Cut inside the RETH: BTH at 42, RETH at 54.
    let p = decode(&frame[..60], LinkLayer::Ethernet, &DecodeConfig::default());
    let e = p.stop().unwrap();
    assert_eq!(e.layer, Layer::Reth);
    assert_eq!(e.offset, 54);
    assert_eq!(
        e.to_string(),
        "RETH at byte 54: truncated (needs 16 bytes, 6 captured)"
    );
    assert!(p.ext().reth().is_none());

    // A UDP length too short for the opcode's headers is malformed, not truncated.
    let mut bad = frame.clone();
    bad[38..40].copy_from_slice(&30u16.to_be_bytes()); // UDP len = 8 + 12 + 10
    bad[16..18].copy_from_slice(&50u16.to_be_bytes()); // IP total length
    let p = decode(&bad, LinkLayer::Ethernet, &DecodeConfig::default());
    let e = p.stop().unwrap();
    assert!(!e.is_truncation());
    assert_eq!(e.layer, Layer::Reth);
    assert_eq!(e.offset, 54);
}

#[test]
fn extra_roce_ports_are_honoured() {
    let mut b = PacketBuilder::rocev2_ipv4([10, 0, 0, 1], [10, 0, 0, 2], Opcode::RC_ACK, 7, 1);
    b.udp_dst_port = 4792;
    let frame = b.build(&[]);
    assert!(
        decode(&frame, LinkLayer::Ethernet, &DecodeConfig::default())
            .roce_version()
            .is_none()
    );
    let cfg = DecodeConfig {
        extra_roce_ports: vec![4792],
    };
    assert_eq!(
        decode(&frame, LinkLayer::Ethernet, &cfg).icrc(),
        IcrcStatus::Ok
    );
}

//! Decode + ICRC cost per packet, header-only and full 4 KiB frames, RoCEv2
//! and native InfiniBand.
//!
//! `cargo bench -p rocescope-decoders --bench decode`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rocescope_decoders::{
    DecodeConfig, IcrcStatus, LinkLayer, Opcode, PacketBuilder, Reth, decode,
};

fn write_first(payload_len: usize, header_only: bool) -> Vec<u8> {
    let mut b = PacketBuilder::rocev2_ipv4(
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        Opcode::RC_WRITE_FIRST,
        0x12,
        811,
    );
    b.ext.reth = Reth {
        va: 0x7f00_0000_1000,
        rkey: 0x2d5,
        dma_len: 1 << 20,
    };
    let mut out = Vec::new();
    if header_only {
        b.build_headers_into(payload_len, &mut out);
    } else {
        out = b.build(&vec![0xA5; payload_len]);
    }
    out
}

/// What an indexer keeps of a decoded frame: every value depends on the whole
/// walk (link, IP, UDP, BTH, extended headers, lengths, ICRC verdict), so
/// the compiler cannot skip any of it, without storing the whole packet.
#[inline(always)]
fn index_fields(
    p: &rocescope_decoders::Packet<'_>,
) -> (u32, u32, u8, u32, u8, usize, [u8; 16], bool) {
    let bth = p.bth();
    (
        bth.map_or(0, |b| b.psn()),
        bth.map_or(0, |b| b.dest_qp()),
        bth.map_or(0, |b| b.opcode().0),
        p.ext().reth().map_or(0, |r| r.dma_len()),
        p.icrc().as_str().len() as u8,
        p.payload_len(),
        p.ip().map_or([0; 16], |ip| ip.src_v6()),
        p.stop().is_some(),
    )
}

fn bench(c: &mut Criterion) {
    let cfg = DecodeConfig::default();
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(1));
    // An Ethernet frame decoded and its index fields read, as the indexer
    // does.
    let mut index = |name: &str, frame: &[u8]| {
        g.bench_function(name, |b| {
            b.iter(|| {
                let p = decode(black_box(frame), LinkLayer::Ethernet, &cfg);
                black_box(index_fields(&p))
            })
        });
    };

    let hdr = write_first(4096, true);
    assert_eq!(
        decode(&hdr, LinkLayer::Ethernet, &cfg).icrc(),
        IcrcStatus::Truncated
    );
    index("header_only_write_first_70B", &hdr);

    let mut ack = Vec::new();
    let mut ab =
        PacketBuilder::rocev2_ipv4([10, 0, 0, 2], [10, 0, 0, 1], Opcode::RC_ACK, 0x12, 811);
    ab.ext.aeth.syndrome = 0x1F;
    ab.build_headers_into(0, &mut ack);
    index("header_only_ack_58B", &ack);

    let full = write_first(4096, false);
    assert_eq!(
        decode(&full, LinkLayer::Ethernet, &cfg).icrc(),
        IcrcStatus::Ok
    );
    index("full_4KiB_write_first_with_icrc", &full);

    // Native InfiniBand: LRH, BTH, RETH, 4 KiB, ICRC and VCRC (LIDs, not IPs).
    let mut ib = PacketBuilder::ib(1, 2, Opcode::RC_WRITE_FIRST, 0x12, 811);
    ib.ext.reth = Reth {
        va: 0x7f00_0000_1000,
        rkey: 0x2d5,
        dma_len: 1 << 20,
    };
    let ib_full = ib.build(&[0xA5; 4096]);
    let p = decode(&ib_full, LinkLayer::Infiniband, &cfg);
    assert_eq!((p.icrc(), p.vcrc()), (IcrcStatus::Ok, IcrcStatus::Ok));
    // An InfiniBand frame: its index fields, VCRC and source LID.
    let mut index_ib = |name: &str, frame: &[u8]| {
        g.bench_function(name, |b| {
            b.iter(|| {
                let p = decode(black_box(frame), LinkLayer::Infiniband, &cfg);
                black_box((
                    index_fields(&p),
                    p.vcrc().as_str().len(),
                    p.lrh().map_or(0, |l| l.slid()),
                ))
            })
        });
    };
    index_ib("ib_full_4KiB_write_first_with_icrc_vcrc", &ib_full);
    let mut ib_hdr = Vec::new();
    ib.build_headers_into(4096, &mut ib_hdr);
    index_ib("ib_header_only_write_first_36B", &ib_hdr);
    let bytes = vec![0xA5u8; 4096];
    g.bench_function("vcrc_4KiB", |b| {
        b.iter(|| black_box(rocescope_decoders::vcrc(black_box(&bytes))))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

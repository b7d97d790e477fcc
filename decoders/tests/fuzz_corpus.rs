//! Every fuzz seed and regression input runs through the fuzz target's body.
#![allow(clippy::unwrap_used)]

#[test]
fn fuzz_seed_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(rocescope_decoders::exercise(&bytes) > 0);
        n += 1;
    }
    assert!(n >= 60, "seed corpus has only {n} files");
}

/// `FIELD_NAMES` is what the field walk emits, no more and no less: every
/// name the corpus' frames yield is listed (the display filter would refuse
/// it otherwise), and every listed name is yielded by some frame.
#[test]
fn field_names_are_what_the_walk_emits() {
    use rocescope_decoders::{
        Aeth, DecodeConfig, FIELD_NAMES, LinkLayer, Opcode, PacketBuilder, decode,
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode");
    let cfg = DecodeConfig {
        extra_roce_ports: vec![4792],
    };
    let mut seen = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for link in [LinkLayer::Ethernet, LinkLayer::Infiniband, LinkLayer::Erf] {
            decode(&bytes, link, &cfg).for_each_field(&mut |f| {
                seen.insert(f.name);
            });
        }
    }
    // Frames the corpus lacks: an RDMA CM REQ (a MAD), native InfiniBand
    // (its VCRC) and an RNR NAK (its timer).
    let mut rnr = PacketBuilder::rocev2_ipv4([10, 0, 0, 2], [10, 0, 0, 1], Opcode::RC_ACK, 7, 9);
    rnr.ext.aeth = Aeth {
        syndrome: 0x2e,
        msn: 1,
    };
    let ib = PacketBuilder::ib(1, 2, Opcode::RC_ACK, 7, 9);
    for (bytes, link) in [
        (
            PacketBuilder::cm_frame([10, 0, 0, 1], [10, 0, 0, 2], false, 5, 0, 7),
            LinkLayer::Ethernet,
        ),
        (rnr.build(&[]), LinkLayer::Ethernet),
        (ib.build(&[]), LinkLayer::Infiniband),
    ] {
        decode(&bytes, link, &cfg).for_each_field(&mut |f| {
            seen.insert(f.name);
        });
    }
    assert!(FIELD_NAMES.is_sorted(), "FIELD_NAMES must stay sorted");
    let unlisted: Vec<_> = seen.iter().filter(|n| !FIELD_NAMES.contains(n)).collect();
    assert!(
        unlisted.is_empty(),
        "emitted but not in FIELD_NAMES: {unlisted:?}"
    );
    let unseen: Vec<_> = FIELD_NAMES.iter().filter(|n| !seen.contains(*n)).collect();
    assert!(
        unseen.is_empty(),
        "in FIELD_NAMES but no corpus frame has them: {unseen:?}"
    );
}

#![allow(dead_code)]
use rocescope_decoders::{DecodeConfig, IcrcStatus, LinkLayer, decode};
use rocescope_replay::Record;
use rocescope_replay::record::{Direction, TruthEvent};
use rocescope_sim::{Scenario, Simulator};

pub fn run(sc: Scenario, until_ns: u64) -> Vec<Record> {
    let mut out = Vec::new();
    let mut sim = Simulator::new(sc);
    sim.run_until(until_ns, &mut |r| out.push(r));
    out
}

/// A frame seen by the sniffer, decoded.
#[derive(Debug, Clone)]
pub struct F {
    pub ts_ns: u64,
    pub dir: Option<Direction>,
    pub opcode: u8,
    pub psn: u32,
    pub qp: u32,
    pub syndrome: Option<u8>,
    pub dma_len: Option<u32>,
    pub payload: Vec<u8>,
    pub icrc: IcrcStatus,
    pub cut: bool,
}

pub fn frames(records: &[Record]) -> Vec<F> {
    let cfg = DecodeConfig::default();
    records
        .iter()
        .filter_map(Record::as_frame)
        .filter_map(|f| {
            let p = decode(f.data, LinkLayer::Ethernet, &cfg);
            // The switch's PFC frames are the only ones without a BTH.
            if p.pause_quanta().is_some() {
                return None;
            }
            let bth = p.bth().expect("every frame but PFC has a BTH");
            Some(F {
                ts_ns: f.ts_ns,
                dir: f.direction,
                opcode: bth.opcode().0,
                psn: bth.psn(),
                qp: bth.dest_qp(),
                syndrome: p.ext().aeth().map(|a| a.syndrome_raw()),
                dma_len: p.ext().reth().map(|r| r.dma_len()),
                payload: p.payload().to_vec(),
                icrc: p.icrc(),
                cut: (f.data.len() as u32) < f.orig_len,
            })
        })
        .collect()
}

pub fn truths(records: &[Record]) -> Vec<(u64, u32, u32, TruthEvent)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Truth(t) => Some((t.ts_ns, t.qpn, t.psn, t.event)),
            _ => None,
        })
        .collect()
}

/// Full capture without the RX cut quirk, so every header is visible.
pub fn full_capture(mut sc: Scenario) -> Scenario {
    if let Some(s) = &mut sc.sniffer {
        s.filter = 0;
        s.rx_cut_quirk = false;
    }
    sc
}

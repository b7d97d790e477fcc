//! `rocescope export FILE --to OUT.pcapng --annotate`: the capture again,
//! each analysed packet carrying its verdict as a pcapng packet comment, so
//! that a Wireshark user can filter `frame.comment contains "Retransmission"`.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;

use anyhow::Context as _;
use rocescope_decoders::analysis::{Episode, Report};
use rocescope_decoders::{LinkLayer, Syndrome, decode};
use rocescope_replay::PcapngWriter;
use rocescope_replay::store::{Flags, Row, Store};

/// What the analysis said of one frame, in words, or `None` for nothing.
pub fn verdict(
    row: &Row,
    nak: Option<Syndrome>,
    icrc_bad: bool,
    episode: Option<(usize, &Episode)>,
) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    let f = row.flags;
    if f.contains(Flags::RETRANSMISSION) {
        words.push(match episode {
            Some((n, e)) => format!(
                "Retransmission (episode {}: {}, from PSN {}, {} packets resent)",
                n + 1,
                e.cause.name(),
                e.from_psn,
                e.packets_resent
            ),
            None => "Retransmission".into(),
        });
    }
    match nak {
        Some(Syndrome::Nak(code)) => words.push(format!("NAK ({})", code.name())),
        Some(Syndrome::RnrNak { timer }) => words.push(format!(
            "RNR NAK (wait {})",
            rocescope_decoders::units::duration_text(Syndrome::rnr_timer_ns(timer))
        )),
        _ => {}
    }
    for (flag, text) in [
        (
            Flags::OUT_OF_SEQUENCE,
            "Out of sequence (PSN beyond the expected one)",
        ),
        (
            Flags::DUPLICATE,
            "Duplicate (READ response or ACK seen before)",
        ),
        (
            Flags::CAPTURE_LOSS,
            "Capture loss (frames before this one were not captured)",
        ),
        (Flags::CNP, "CNP (congestion notification)"),
        (Flags::ECN_CE, "ECN CE (marked by a switch)"),
    ] {
        if f.contains(flag) {
            words.push(text.into());
        }
    }
    if icrc_bad {
        words.push("ICRC bad".into());
    }
    (!words.is_empty()).then(|| format!("rocescope: {}", words.join("; ")))
}

/// The episode a retransmitted frame belongs to: the one whose resends span
/// its row on the QP it is sent to.
fn episode_of<'r>(
    report: &'r Report,
    by_first: &[usize],
    index: u64,
    dest_qp: Option<u32>,
) -> Option<(usize, &'r Episode)> {
    let end = by_first.partition_point(|&e| report.episodes[e].first_index <= index);
    by_first[..end].iter().rev().take(64).find_map(|&e| {
        let ep = &report.episodes[e];
        let qp_matches = dest_qp.is_none_or(|d| {
            report
                .qps
                .get(ep.qp as usize)
                .is_none_or(|q| q.dest_qp == d)
        });
        (ep.last_index >= index && qp_matches).then_some((e, ep))
    })
}

/// Write `store`'s frames to `out` as pcapng with each verdict as the
/// packet's comment; returns (frames, frames annotated).
pub fn write(store: &Store, report: &Report, out: &Path) -> anyhow::Result<(u64, u64)> {
    let file = std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let mut w = PcapngWriter::new(std::io::BufWriter::new(file))
        .with_context(|| format!("writing {}", out.display()))?;
    let cfg = store.decode_config();
    let mut by_first: Vec<usize> = (0..report.episodes.len()).collect();
    by_first.sort_by_key(|&e| report.episodes[e].first_index);
    let (mut frames, mut annotated) = (0u64, 0u64);
    let mut failed: Option<anyhow::Error> = None;
    store
        .for_each_frame(0..store.len(), |i, row, bytes| {
            let link = store.link_layer(row.port);
            if link.is_some_and(|l| l != LinkLayer::Ethernet) {
                failed = Some(anyhow::anyhow!(
                    "frame {}: --annotate writes Ethernet captures only (port {} is {:?})",
                    i + 1,
                    row.port,
                    link
                ));
                return ControlFlow::Break(());
            }
            let p = link.map(|l| decode(bytes, l, &cfg));
            let nak = p
                .as_ref()
                .filter(|_| row.flags.contains(Flags::NAK))
                .and_then(|p| p.ext().aeth())
                .map(|a| a.syndrome());
            let dest_qp = p.as_ref().and_then(|p| p.bth()).map(|b| b.dest_qp());
            let episode = row
                .flags
                .contains(Flags::RETRANSMISSION)
                .then(|| episode_of(report, &by_first, i, dest_qp))
                .flatten();
            let comment = verdict(row, nak, row.flags.contains(Flags::ICRC_BAD), episode);
            annotated += u64::from(comment.is_some());
            frames += 1;
            match w.write_frame_with_comment(
                row.ts_ns,
                row.port,
                row.dir,
                row.origlen.max(bytes.len() as u32),
                bytes,
                comment.as_deref(),
            ) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    failed = Some(anyhow::Error::new(e).context(format!(
                        "writing frame {} to {}",
                        i + 1,
                        out.display()
                    )));
                    ControlFlow::Break(())
                }
            }
        })
        .with_context(|| format!("reading the frames of {}", out.display()))?;
    if let Some(e) = failed {
        return Err(e);
    }
    let mut inner = w
        .finish()
        .with_context(|| format!("finishing {}", out.display()))?;
    inner
        .flush()
        .with_context(|| format!("writing {}", out.display()))?;
    Ok((frames, annotated))
}

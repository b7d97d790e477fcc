//! Short explanations of what a packet, a header or an event means in RC
//! terms, written for a student.

use rocescope_decoders::analysis::{EpisodeCause, FindingCause};
use rocescope_decoders::{MessagePosition, NakCode, OpcodeKind, Operation, Packet, Syndrome};

/// Paragraphs explaining one decoded packet and its analysis verdicts.
pub fn packet(p: &Packet<'_>, flags: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(bth) = p.bth() else {
        out.push(
            "This frame is not RoCE: rocescope decodes its Ethernet and IP headers only.".into(),
        );
        return out;
    };
    let opcode = bth.opcode();
    out.push(format!(
        "{opcode}: the Base Transport Header (BTH) says which operation this is, which queue pair (QP 0x{:06x}) at the receiver it is for, and its packet sequence number (PSN {}). PSNs are 24 bits and wrap; every request packet takes the next PSN so the responder can tell a lost or repeated packet at once.",
        bth.dest_qp(),
        bth.psn()
    ));
    match opcode.kind() {
        OpcodeKind::Rc(op) => out.push(rc_operation(op)),
        OpcodeKind::Cnp => out.push("A Congestion Notification Packet (CNP, opcode 0x81). A switch marked a packet of this flow with ECN CE because its queue was filling; the receiving NIC answers the sender with a CNP so that it slows down (DCQCN). BALBOA does not react to CNPs: its only flow control is the 16-packet window.".into()),
        OpcodeKind::Ud(_) => out.push("Unreliable Datagram: no connection, no ACK. RDMA CM uses UD QP 1 to set up RC connections (the DETH carries the source QP and Q_Key).".into()),
        OpcodeKind::Uc(_) => out.push("Unreliable Connection: like RC without ACKs or retransmission; a lost packet loses its message.".into()),
        _ => {}
    }
    if let Some(op) = opcode.operation() {
        out.push(match op.position() {
            MessagePosition::First => "FIRST packet of a multi-packet message: more packets with consecutive PSNs follow, each a full path MTU.".into(),
            MessagePosition::Middle => "MIDDLE packet of a message: a full path-MTU payload, no extra headers.".into(),
            MessagePosition::Last => "LAST packet of a message: it may be shorter than the MTU (pad bytes round it to 4).".into(),
            MessagePosition::Only => "ONLY packet: the whole message fits in one packet.".into(),
        });
    }
    let x = p.ext();
    if let Some(r) = x.reth() {
        out.push(format!(
            "RETH (RDMA Extended Transport Header): the remote virtual address 0x{:x}, the R_Key 0x{:x} that grants access to it, and the DMA length {} bytes of the whole operation. Only the first packet of a WRITE (and a READ request) carries it; the responder remembers it for the rest.",
            r.va(), r.rkey(), r.dma_len()
        ));
    }
    if let Some(a) = x.aeth() {
        out.push(match a.syndrome() {
            Syndrome::Ack { credits } => format!("AETH with an ACK: everything up to PSN {} arrived (ACKs are cumulative). MSN {} counts the completed messages; credit count {credits} (31 = not limited). BALBOA ACKs every request packet; a ConnectX coalesces ACKs.", bth.psn(), a.msn()),
            Syndrome::RnrNak { timer } => format!("AETH with an RNR NAK: the responder was Not Ready (no receive buffer posted). The requester must wait {} µs (timer code {timer}) and retry from PSN {}.", Syndrome::rnr_timer_ns(timer) / 1000, bth.psn()),
            Syndrome::Nak(NakCode::PsnSequenceError) => format!("AETH with a NAK (PSN sequence error): the responder expected PSN {} but got a later one, so a packet was lost. It sends one NAK and drops everything until PSN {} comes again; the requester goes back to PSN {} and resends from there (Go-Back-N), even packets the responder already had.", bth.psn(), bth.psn(), bth.psn()),
            Syndrome::Nak(code) => format!("AETH with a NAK ({}): a fatal error for the QP; the requester's work request completes in error.", code.name()),
            Syndrome::Reserved(s) => format!("AETH with a reserved syndrome 0x{s:02x}."),
        });
    }
    if x.cnp().is_some() {
        out.push("The 16 reserved bytes after the BTH are part of every RoCEv2 CNP.".into());
    }
    if p.ip().is_some_and(|ip| ip.ecn() == 3) {
        out.push("The IP header's ECN field is CE (11): a switch on the path marked this packet because its queue was congested.".into());
    }
    for f in flags {
        out.push(match *f {
            "retransmission" => "rocescope: RETRANSMISSION. This PSN was sent before; the requester is sending it again, after a NAK (Go-Back-N) or after its ACK timer expired.".into(),
            "duplicate" => "rocescope: DUPLICATE. An ACK or READ response for a PSN already answered: harmless, but it costs bandwidth.".into(),
            "out_of_sequence" => "rocescope: OUT OF SEQUENCE. The PSN jumped ahead: the packets in between were lost before this capture point. Expect a NAK, then a resend.".into(),
            "capture_loss" => "rocescope: PREVIOUS PACKETS NOT CAPTURED. PSNs before this one never appeared, yet the responder ACKed them without a NAK: the wire carried them and the capture missed them. Not a retransmission.".into(),
            "icrc_bad" => "rocescope: BAD ICRC. The invariant CRC does not match: the packet was corrupted. The receiver drops it silently, so the sender will see a NAK or a timeout.".into(),
            "cut" => "rocescope: CUT. The capture kept only the headers (header-only sniffing or a snaplen); lengths come from the headers, the payload and ICRC are missing.".into(),
            _ => continue,
        });
    }
    out
}

fn rc_operation(op: Operation) -> String {
    match op {
        Operation::WriteFirst | Operation::WriteMiddle | Operation::WriteLast | Operation::WriteOnly | Operation::WriteLastImm | Operation::WriteOnlyImm => "RDMA WRITE: the requester places data straight into the responder's memory at the address in the RETH; the responder's CPU is not involved. Each packet must be ACKed before the window lets more go.".into(),
        Operation::ReadRequest => "RDMA READ request: asks the responder for DMA-length bytes at the address in the RETH. One request takes as many PSNs as there will be response packets: a READ of N packets consumes N PSNs.".into(),
        Operation::ReadResponseFirst | Operation::ReadResponseMiddle | Operation::ReadResponseLast | Operation::ReadResponseOnly => "RDMA READ response: the data of a READ, flowing back from responder to requester. Responses reuse the PSNs of the request's span; the first and last carry an AETH that also acknowledges earlier requests.".into(),
        Operation::Acknowledge => "Acknowledge: the responder's answer to requests, carrying an AETH.".into(),
        Operation::SendFirst | Operation::SendMiddle | Operation::SendLast | Operation::SendOnly | Operation::SendLastImm | Operation::SendOnlyImm | Operation::SendLastInv | Operation::SendOnlyInv => "SEND: a two-sided message consumed by a receive buffer the responder posted. BALBOA only receives SENDs.".into(),
        Operation::CompareSwap | Operation::FetchAdd => "ATOMIC: an 8-byte compare-and-swap or fetch-and-add at the remote address, answered by an ATOMIC Acknowledge with the original value.".into(),
        _ => format!("{}: an RC operation.", op.name()),
    }
}

/// One sentence on an episode cause, for the retransmission list.
pub fn episode(cause: EpisodeCause) -> &'static str {
    match cause {
        EpisodeCause::NakSeqErr => {
            "NAK (PSN sequence error): the responder saw a PSN gap, NAKed the first missing PSN, and the requester went back to it and resent everything from there (Go-Back-N)."
        }
        EpisodeCause::Timeout => {
            "Timeout (no NAK, the timer fired): no ACK came back (the packet or its ACK was lost with nothing after it to trigger a NAK), so the requester's timer fired and it resent from the oldest unacknowledged PSN."
        }
        EpisodeCause::Rnr => {
            "RNR NAK (no receive buffer): the responder had no receive buffer; the requester waited the RNR timer and retried."
        }
        EpisodeCause::ImpliedNak => {
            "READ response lost (READ re-issued): a response went missing, which the requester takes as an implied NAK, and it re-issued the READ from the first missing PSN."
        }
    }
}

/// One sentence on a finding cause.
pub fn finding(cause: FindingCause) -> &'static str {
    match cause {
        FindingCause::LossGoBackN => {
            "Loss: one lost packet costs a NAK round trip plus resending every packet after it (Go-Back-N)."
        }
        FindingCause::TimeoutStall => {
            "Timeout stall: the sender waits a whole retransmission timeout with nothing in flight."
        }
        FindingCause::ReceiverNotReady => "RNR: the receiver ran out of receive buffers.",
        FindingCause::ReadResponseLoss => "READ response loss: the READ is re-issued.",
        FindingCause::WindowLimited => {
            "Window-limited: with W packets allowed in flight (BALBOA: 16), throughput is at most W x MTU per round trip; a long RTT caps it."
        }
        FindingCause::Congestion => "Congestion: switches marked packets (ECN) and CNPs came back.",
        FindingCause::PfcPause => "PFC pause: the link partner paused the port.",
        FindingCause::ReadTagLimit => {
            "PCIe read tags: medium-size READs are limited by outstanding host reads."
        }
        FindingCause::DpiDrop => {
            "DPI drop: the DPI slot rejected packets, which are NAKed and resent."
        }
        FindingCause::CaptureLoss => {
            "Capture loss: the sniffer or a queue on the way to rocescope dropped frames there; the rate fell in what was captured, not in what was sent."
        }
        FindingCause::SenderIdle => {
            "Sender idle: between messages, nothing posted; the application, not the network, set the pace."
        }
        FindingCause::HostLimited => {
            "Host-limited: mid-message with the window open and the link free, the next packet was not ready: the host, PCIe or the card's payload fetch held it."
        }
        FindingCause::LinkShared => {
            "Link shared: other QPs' packets took the link this QP sends on; it waited its turn."
        }
        FindingCause::Unexplained => {
            "Not told: the capture holds none of this QP's requests, so where its time went is not known."
        }
        FindingCause::RetriesExceeded => {
            "Retries exceeded: the timer fired on the same PSN until the retry count ran out; the QP is in the error state and must be reset."
        }
        FindingCause::RnrRetriesExceeded => {
            "RNR retries exceeded: the responder kept answering RNR (no receive buffer) until the requester's RNR retry count ran out; the QP is in the error state."
        }
        FindingCause::FatalNak => {
            "Fatal NAK: the responder rejected a request (invalid request, remote access or remote operational error); the requester's QP goes to the error state."
        }
        FindingCause::CardCounterMismatch => {
            "The card's own counters disagree with the capture over the same interval: the sniffer missed frames, or the capture holds another sender's."
        }
        FindingCause::StreamDown => {
            "STRM down: the card's network stack is down until the card is reprogrammed."
        }
        FindingCause::QpStuck => {
            "Stuck QP: its traffic ends with data unacknowledged, so it is dead (or retrying), not done."
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocescope_replay::text::{CAUSES, cause_text};

    /// The explanation opens with the cause as the tables word it, so a
    /// reader matches the sentence to the row.
    #[test]
    fn episode_explanations_open_with_the_table_wording() {
        for c in CAUSES {
            let lead = format!("{}: ", cause_text(c)).to_lowercase();
            let said = episode(c).to_lowercase();
            assert!(said.starts_with(&lead), "{c:?}: {}", episode(c));
        }
    }
}

//! Ethernet wire time: the exact bytes a frame occupies on the link.

/// Preamble (7) + start-of-frame delimiter (1).
pub const PREAMBLE_BYTES: u64 = 8;
/// Minimum inter-frame gap.
pub const IFG_BYTES: u64 = 12;
/// Frame check sequence.
pub const FCS_BYTES: u64 = 4;
/// Smallest Ethernet frame without FCS (padding brings shorter ones up).
pub const MIN_FRAME_BYTES: u64 = 60;

/// Bytes a frame of `frame_bytes` (Ethernet header to ICRC, no FCS) takes on
/// the wire, including padding, FCS, preamble and inter-frame gap.
pub fn wire_bytes(frame_bytes: u64) -> u64 {
    frame_bytes.max(MIN_FRAME_BYTES) + FCS_BYTES + PREAMBLE_BYTES + IFG_BYTES
}

/// Time in picoseconds to serialise `frame_bytes` at `link_gbps`.
pub fn wire_time_ps(frame_bytes: u64, link_gbps: u64) -> u64 {
    // bits / (Gbit/s) = ns; keep ps for integer precision at 100G+.
    wire_bytes(frame_bytes) * 8 * 1000 / link_gbps.max(1)
}

/// Frame bytes (Ethernet + IPv4 + UDP + BTH + ICRC, no FCS) around a RoCEv2
/// payload with `ext_bytes` of extended headers.
pub fn rocev2_ipv4_frame_bytes(payload_bytes: u64, ext_bytes: u64) -> u64 {
    let pad = (4 - payload_bytes % 4) % 4;
    14 + 20 + 8 + 12 + ext_bytes + payload_bytes + pad + 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_rate_ceiling_matches_the_paper() {
        // A 4096 B WRITE Middle: 62 B of headers/ICRC/FCS + 20 B preamble/IFG.
        let frame = rocev2_ipv4_frame_bytes(4096, 0);
        assert_eq!(wire_bytes(frame), 4178);
        let ps = wire_time_ps(frame, 100);
        let mpps = 1e6 / ps as f64;
        assert!((mpps - 2.99).abs() < 0.01, "{mpps}");
        let payload_gbytes_s = mpps * 1e6 * 4096.0 / 1e9;
        assert!(
            (payload_gbytes_s - 12.25).abs() < 0.03,
            "{payload_gbytes_s}"
        );
        // Minimum frames: 148.8 Mpps.
        let min = 1e6 / wire_time_ps(60, 100) as f64;
        assert!((min - 148.8).abs() < 0.1, "{min}");
    }
}

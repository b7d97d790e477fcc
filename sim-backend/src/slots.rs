//! BALBOA's service slots: AES-CTR on the datapath, the DPI classifier on the
//! parallel path, and the DLRM application slot. Pure functions, so the
//! workbench and tests can check what the simulator put on the wire.

use aes::Aes128;
use ctr::cipher::{KeyIvInit, StreamCipher};

use crate::rng::mix64;
use crate::scenario::AppOp;

type Aes128Ctr = ctr::Ctr128BE<Aes128>;

/// The AES-128 key of a QP, derived from the scenario seed and the QPN of
/// the requester (both cards of a connection share it).
pub fn aes_key(seed: u64, qpn: u32) -> [u8; 16] {
    let a = mix64(seed ^ 0xAE5_0000_0000 ^ u64::from(qpn));
    let b = mix64(a ^ 0x5EED);
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&a.to_be_bytes());
    k[8..].copy_from_slice(&b.to_be_bytes());
    k
}

/// The initial counter block: QPN (4 bytes), per-packet counter (8 bytes),
/// block counter (4 bytes, from 0).
pub fn aes_counter_block(qpn: u32, packet_counter: u64) -> [u8; 16] {
    let mut iv = [0u8; 16];
    iv[..4].copy_from_slice(&qpn.to_be_bytes());
    iv[4..12].copy_from_slice(&packet_counter.to_be_bytes());
    iv
}

/// Encrypts or decrypts (CTR is its own inverse) `data` in place.
pub fn aes_ctr_apply(key: &[u8; 16], qpn: u32, packet_counter: u64, data: &mut [u8]) {
    let iv = aes_counter_block(qpn, packet_counter);
    let mut c = Aes128Ctr::new(key.into(), &iv.into());
    c.apply_keystream(data);
}

/// DPI classes; class [`DPI_UNACCEPTABLE`] rejects the packet.
pub const DPI_CLASSES: usize = 4;
/// The class the DPI rejects.
pub const DPI_UNACCEPTABLE: u8 = 3;
const DPI_MARGIN: i32 = 3000;

/// Ternary weights (-1, 0, +1) of the classifier: 64 byte inputs + 1 QPN
/// input per class, fixed (the "trained" model).
fn dpi_weight(class: usize, input: usize) -> i32 {
    let h = mix64(0xD1_u64 << 40 | (class as u64) << 16 | input as u64);
    (h % 3) as i32 - 1
}

struct DpiModel {
    w: [[i8; 65]; DPI_CLASSES],
}

fn model() -> &'static DpiModel {
    static MODEL: std::sync::OnceLock<DpiModel> = std::sync::OnceLock::new();
    MODEL.get_or_init(|| {
        let mut w = [[0i8; 65]; DPI_CLASSES];
        for (c, row) in w.iter_mut().enumerate() {
            for (i, x) in row.iter_mut().enumerate() {
                *x = dpi_weight(c, i) as i8;
            }
        }
        DpiModel { w }
    })
}

/// Class of one 512-bit beat (bytes past the end count as zero) and QPN.
pub fn dpi_classify_beat(beat: &[u8], qpn: u32) -> u8 {
    let m = model();
    let mut s = [0i32; DPI_CLASSES];
    for (c, sc) in s.iter_mut().enumerate() {
        let w = &m.w[c];
        let mut acc = 0i32;
        for (i, wi) in w.iter().take(64).enumerate() {
            let x = i32::from(beat.get(i).copied().unwrap_or(0)) - 128;
            acc += i32::from(*wi) * x;
        }
        acc += i32::from(w[64]) * ((qpn & 0xFF) as i32 - 128);
        *sc = acc;
    }
    let best_other = (0..3)
        .max_by_key(|&c| (s[c], std::cmp::Reverse(c)))
        .unwrap_or(0);
    if s[3] > s[best_other] + DPI_MARGIN {
        DPI_UNACCEPTABLE
    } else {
        best_other as u8
    }
}

/// Verdict for a packet: acceptable unless a beat is unacceptable; the
/// returned class is the first unacceptable beat's, else the first beat's.
pub fn dpi_verdict(payload: &[u8], qpn: u32) -> (bool, u8) {
    let mut first = 0;
    for (i, beat) in payload.chunks(64).enumerate() {
        let c = dpi_classify_beat(beat, qpn);
        if c == DPI_UNACCEPTABLE {
            return (false, c);
        }
        if i == 0 {
            first = c;
        }
    }
    (true, first)
}

/// A beat the classifier rejects: bytes pushed along class 3's weights.
pub fn dpi_signature_beat() -> [u8; 64] {
    let m = model();
    let mut b = [0u8; 64];
    for (i, x) in b.iter_mut().enumerate() {
        *x = match m.w[3][i] {
            1 => 255,
            -1 => 0,
            _ => 128,
        };
    }
    b
}

/// Applies the application-slot operator to `data` as little-endian 32-bit
/// words (a trailing partial word is left as is).
pub fn app_apply(op: AppOp, modulus: u32, data: &mut [u8]) {
    for w in data.chunks_exact_mut(4) {
        let v = [w[0], w[1], w[2], w[3]];
        let out = match op {
            AppOp::None => continue,
            AppOp::Neg2zero => i32::from_le_bytes(v).max(0).to_le_bytes(),
            AppOp::Logarithm => {
                let x = f32::from_le_bytes(v);
                let x = if x.is_finite() && x > 0.0 { x } else { 0.0 };
                x.ln_1p().to_le_bytes()
            }
            AppOp::Modulus => (u32::from_le_bytes(v) % modulus.max(1)).to_le_bytes(),
        };
        w.copy_from_slice(&out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_really_encrypts_and_decrypts_back() {
        let key = aes_key(1, 0x100);
        let plain: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        let mut c = plain.clone();
        aes_ctr_apply(&key, 0x100, 42, &mut c);
        assert_ne!(c, plain);
        // A different packet counter gives a different keystream.
        let mut c2 = plain.clone();
        aes_ctr_apply(&key, 0x100, 43, &mut c2);
        assert_ne!(c, c2);
        aes_ctr_apply(&key, 0x100, 42, &mut c);
        assert_eq!(c, plain);
        assert_ne!(aes_key(1, 0x100), aes_key(1, 0x101));
    }

    #[test]
    fn aes_matches_fips197_block() {
        // FIPS-197 C.1 AES-128: CTR with a zero counter block encrypts the
        // counter block itself, so XOR with the plaintext reveals it.
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let mut data = [0u8; 16];
        // keystream for counter block 0 = AES_k(0^128)
        let mut c = Aes128Ctr::new((&key).into(), &[0u8; 16].into());
        c.apply_keystream(&mut data);
        use aes::cipher::{BlockEncrypt, KeyInit};
        let cipher = Aes128::new((&key).into());
        let mut block = aes::Block::default();
        cipher.encrypt_block(&mut block);
        assert_eq!(&data[..], &block[..]);
    }

    #[test]
    fn dpi_accepts_ordinary_payloads_and_rejects_the_signature() {
        let mut s = 5u64;
        let mut rejected = 0;
        for _ in 0..200 {
            let p: Vec<u8> = (0..4096)
                .map(|_| crate::rng::splitmix64(&mut s) as u8)
                .collect();
            if !dpi_verdict(&p, 0x100).0 {
                rejected += 1;
            }
        }
        assert_eq!(rejected, 0);
        let bad = dpi_signature_beat();
        assert_eq!(dpi_classify_beat(&bad, 0x100), DPI_UNACCEPTABLE);
        let mut p = vec![0x41u8; 4096];
        p[128..192].copy_from_slice(&bad);
        assert_eq!(dpi_verdict(&p, 0x100), (false, DPI_UNACCEPTABLE));
    }

    #[test]
    fn app_slot_operators() {
        let mut d = Vec::new();
        d.extend_from_slice(&(-5i32).to_le_bytes());
        d.extend_from_slice(&7i32.to_le_bytes());
        app_apply(AppOp::Neg2zero, 0, &mut d);
        assert_eq!(d[..4], 0i32.to_le_bytes());
        assert_eq!(d[4..], 7i32.to_le_bytes());
        let mut m = 1234u32.to_le_bytes().to_vec();
        app_apply(AppOp::Modulus, 1000, &mut m);
        assert_eq!(m, 234u32.to_le_bytes());
        let mut l = (std::f32::consts::E - 1.0).to_le_bytes().to_vec();
        app_apply(AppOp::Logarithm, 0, &mut l);
        let v = f32::from_le_bytes([l[0], l[1], l[2], l[3]]);
        assert!((v - 1.0).abs() < 1e-5, "{v}");
    }
}

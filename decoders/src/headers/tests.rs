use super::*;

#[test]
fn syndrome_decoding_covers_every_byte() {
    assert_eq!(Syndrome::from_u8(0x1F), Syndrome::Ack { credits: 31 });
    assert_eq!(
        Syndrome::from_u8(0x60),
        Syndrome::Nak(NakCode::PsnSequenceError)
    );
    assert_eq!(
        Syndrome::from_u8(0x63),
        Syndrome::Nak(NakCode::RemoteOperationalError)
    );
    assert_eq!(Syndrome::from_u8(0x2E), Syndrome::RnrNak { timer: 14 });
    assert_eq!(Syndrome::from_u8(0x41), Syndrome::Reserved(0x41));
    assert_eq!(Syndrome::from_u8(0x80), Syndrome::Reserved(0x80));
    for s in 0..=255u8 {
        let d = Syndrome::from_u8(s);
        if s & 0x80 == 0 {
            assert_eq!(d.to_u8(), s);
        }
    }
    assert_eq!(Syndrome::rnr_timer_ns(0), 655_360_000);
    assert_eq!(Syndrome::rnr_timer_ns(1), 10_000);
    assert_eq!(Syndrome::rnr_timer_ns(31), 491_520_000);
}

#[test]
fn ipv4_rejects_bad_ihl_and_version() {
    let mut h = [0u8; 20];
    h[0] = 0x44;
    let e = Ipv4Slice::from_slice(&h, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "IPv4 at byte 0: invalid header length (bytes) (16)"
    );
    h[0] = 0x65;
    assert!(Ipv4Slice::from_slice(&h, 0).is_err());
}

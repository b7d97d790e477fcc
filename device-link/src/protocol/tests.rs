use super::*;

#[test]
fn requests_round_trip() {
    for r in [
        Request::Hello {
            version: 1,
            name: "rocescope-attach".into(),
        },
        Request::Auth {
            token: "abcdefabcdefabcdef".into(),
        },
        Request::Subscribe(ProbeSet::All),
        Request::Subscribe(ProbeSet::None),
        Request::Subscribe(ProbeSet::Some(vec![1, 2, 65535])),
        Request::Filter(0x8000_0000_0000_00ff),
        Request::Start,
        Request::Stop,
        Request::Ping("7".into()),
        Request::Bye,
    ] {
        assert_eq!(Request::parse(r.to_string().as_bytes()).unwrap(), r);
    }
}

#[test]
fn bad_requests_are_errors_with_codes() {
    for (line, code) in [
        (&b"FROB"[..], ErrorCode::Unknown),
        (b"", ErrorCode::Malformed),
        (b"HELLO", ErrorCode::Malformed),
        (b"HELLO x", ErrorCode::Malformed),
        (b"FILTER 0x12345678901234567", ErrorCode::Malformed),
        (b"FILTER zz", ErrorCode::Malformed),
        (b"SUBSCRIBE probes=1,x", ErrorCode::Malformed),
        (b"SUBSCRIBE 1", ErrorCode::Malformed),
        (b"START now", ErrorCode::Malformed),
        (b"\x00\x01\xff", ErrorCode::Malformed),
    ] {
        assert_eq!(Request::parse(line).unwrap_err().code, code, "{line:?}");
    }
    let long = vec![b'A'; MAX_LINE_BYTES + 1];
    assert_eq!(Request::parse(&long).unwrap_err().code, ErrorCode::TooLong);
}

#[test]
fn replies_round_trip() {
    for r in [
        Reply::Hello {
            version: 1,
            agent: "rocescope-agent/0.1.0".into(),
            auth_required: true,
            caps: vec!["frames".into(), "probes".into()],
            source: "stdin".into(),
        },
        Reply::Ok {
            verb: "FILTER".into(),
            detail: "applied 0x1".into(),
        },
        Reply::Err {
            code: ErrorCode::Auth,
            text: "wrong token".into(),
        },
        Reply::Pong("9".into()),
        Reply::Heartbeat {
            seq: 3,
            sent_frames: 10,
            dropped_frames: 2,
            dropped_records: 1,
        },
        Reply::End {
            source: "follow:/tmp/x.pcapng".into(),
            frames: 1000,
            records: 7,
        },
        Reply::Bye {
            reason: "end".into(),
            text: "source ended".into(),
        },
    ] {
        let mut block = Vec::new();
        r.encode_block(5, &mut block);
        assert_eq!(block.len() % 4, 0);
        let text = decode_link_block(&block).unwrap();
        assert_eq!(Reply::parse(std::str::from_utf8(text).unwrap()).unwrap(), r);
    }
}

#[test]
fn tokens_compare() {
    assert!(token_matches(b"0123456789abcdef", b"0123456789abcdef"));
    assert!(!token_matches(b"0123456789abcdeF", b"0123456789abcdef"));
    assert!(!token_matches(b"0123456789abcde", b"0123456789abcdef"));
    assert!(!token_matches(b"", b""));
}

#[test]
fn lines_are_bounded() {
    let mut input = Vec::new();
    input.extend_from_slice(b"PING 1\r\n");
    input.extend(std::iter::repeat_n(b'x', 5000));
    input.extend_from_slice(b"\nSTART\nST");
    let mut r = LineReader::new(&input[..]);
    assert_eq!(r.next_line().unwrap(), Line::Text(b"PING 1".to_vec()));
    assert_eq!(r.next_line().unwrap(), Line::TooLong(5000));
    assert_eq!(r.next_line().unwrap(), Line::Text(b"START".to_vec()));
    assert_eq!(r.next_line().unwrap(), Line::Cut(2));
    assert_eq!(r.next_line().unwrap(), Line::Eof);
}

#[derive(Default)]
struct Collect(std::rc::Rc<std::cell::RefCell<Vec<String>>>);
impl LinkEvents for Collect {
    fn message(&mut self, text: &str) {
        self.0.borrow_mut().push(text.to_owned());
    }
}

/// Reads one byte at a time, to exercise every split point.
struct Trickle<'a>(&'a [u8]);
impl Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let Some((&b, rest)) = self.0.split_first() else {
            return Ok(0);
        };
        out[0] = b;
        self.0 = rest;
        Ok(1)
    }
}

#[test]
fn link_reader_splits_messages_from_pcapng() {
    use rocescope_replay::{CaptureItem, CaptureReader, PcapngWriter};
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    w.write_frame(1, 0, None, 60, &[7; 60]).unwrap();
    let mut bytes = w.finish().unwrap();
    Reply::Pong("a".into()).encode_block(0, &mut bytes);
    let mut w2 = PcapngWriter::new(Vec::new()).unwrap();
    w2.write_frame(2, 0, None, 64, &[8; 64]).unwrap();
    let b2 = w2.finish().unwrap();
    // Same stream continues after the SHB of the first writer: append
    // only the frame's blocks (skip w2's SHB).
    let shb_len = u32::from_le_bytes([b2[4], b2[5], b2[6], b2[7]]) as usize;
    bytes.extend_from_slice(&b2[shb_len..]);
    Reply::Pong("b".into()).encode_block(0, &mut bytes);
    for trickle in [false, true] {
        let inner: Box<dyn Read> = if trickle {
            Box::new(Trickle(&bytes))
        } else {
            Box::new(&bytes[..])
        };
        let seen = Collect::default();
        let got = seen.0.clone();
        let lr = LinkReader::new(inner, seen, true);
        let mut cr = CaptureReader::new(lr).unwrap();
        let mut frames = 0;
        while let Some(item) = cr.next_item().unwrap() {
            if let CaptureItem::Frame(_) = item {
                frames += 1;
            }
        }
        assert_eq!(frames, 2);
        assert_eq!(cr.skipped_records().total(), 0);
        assert!(cr.warnings().is_empty(), "{:?}", cr.warnings());
        assert_eq!(*got.borrow(), ["PONG a", "PONG b"]);
    }
}

//! The agent protocol (device-link/PROTOCOL.md): one TCP connection per
//! client. Agent -> client is a pcapng stream (what `PcapngWriter` writes);
//! the agent's control messages travel in it as do-not-copy custom blocks.
//! Client -> agent is text lines. This module has the message types, their
//! text forms, the in-band block codec, [`LinkReader`] (splits the control
//! blocks off the pcapng bytes) and [`LineReader`] (bounded lines).

use std::fmt;
use std::io::{self, Read};

use rocescope_replay::record::ROCESCOPE_PEN;

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// Default TCP port of an agent.
pub const DEFAULT_PORT: u16 = 4790;

/// Longest client -> agent line, `\n` excluded.
pub const MAX_LINE_BYTES: usize = 512;

/// Longest agent -> client message text.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// Longest token accepted (bytes).
pub const MAX_TOKEN_BYTES: usize = 256;

/// Shortest token an agent accepts in its token file.
pub const MIN_TOKEN_BYTES: usize = 16;

/// Most probe ids in one SUBSCRIBE.
pub const MAX_PROBES: usize = 256;

/// pcapng Custom Block type that must not be copied into new files: the
/// agent's in-band control messages.
pub const LINK_BLOCK_TYPE: u32 = 0x4000_0bad;

/// Record type code of an in-band control message in the custom block
/// payload. Outside the range of `Record` type codes, so the replay reader
/// counts such blocks as an unknown type and skips them.
pub const LINK_MESSAGE_CODE: u16 = 0xff01;

/// Version byte of the in-band message payload.
pub const LINK_MESSAGE_VERSION: u8 = 1;

/// Block bytes before the message text: type, length, PEN, code, version,
/// flags, ts_ns, text length.
const LINK_HEAD_BYTES: usize = 4 + 4 + 4 + 2 + 1 + 1 + 8 + 4;

/// Largest in-band block.
pub const MAX_LINK_BLOCK_BYTES: usize = LINK_HEAD_BYTES + MAX_MESSAGE_BYTES + 3 + 4;

const SHB_TYPE: u32 = 0x0a0d_0d0a;

/// Interface id the agent puts into the `Drops` records that count what it
/// dropped for one client (its per-client queue was full). Not a declared
/// interface, so it travels as a custom block; the client recognises it.
pub const AGENT_QUEUE_INTERFACE: u32 = 0xffff_fffe;

/// Interface id of the `Drops` records a client writes into its recording
/// for its own queue between socket and ingest.
pub const CLIENT_QUEUE_INTERFACE: u32 = u32::MAX;

/// Which probes a client wants profiler samples of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeSet {
    All,
    None,
    Some(Vec<u16>),
}

impl ProbeSet {
    pub fn contains(&self, probe: u16) -> bool {
        match self {
            ProbeSet::All => true,
            ProbeSet::None => false,
            ProbeSet::Some(ids) => ids.contains(&probe),
        }
    }
}

impl fmt::Display for ProbeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeSet::All => f.write_str("all"),
            ProbeSet::None => f.write_str("none"),
            ProbeSet::Some(ids) => {
                for (i, id) in ids.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{id}")?;
                }
                Ok(())
            }
        }
    }
}

/// A client -> agent message (one text line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `HELLO <version> [name]`
    Hello { version: u32, name: String },
    /// `AUTH <token>`
    Auth { token: String },
    /// `SUBSCRIBE probes=all|none|ID[,ID...]`
    Subscribe(ProbeSet),
    /// `FILTER <64-bit sniffer filter word, hex>`
    Filter(u64),
    /// `START`
    Start,
    /// `STOP`
    Stop,
    /// `PING [nonce]`
    Ping(String),
    /// `BYE`
    Bye,
}

/// Why a request was rejected (the code word of an `ERR` reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The line is not a known message.
    Unknown,
    /// A known message with bad arguments, or bytes that are not text.
    Malformed,
    /// Longer than [`MAX_LINE_BYTES`].
    TooLong,
    /// HELLO with a version this agent does not speak.
    Version,
    /// Wrong token.
    Auth,
    /// A message other than HELLO/AUTH/PING/BYE before AUTH.
    AuthRequired,
    /// No AUTH in time.
    Timeout,
    /// The agent has no means to do it (e.g. no `--control-cmd`).
    Unsupported,
    /// The card's control program failed.
    ControlFailed,
    /// Too many errors: the agent closes the connection.
    TooManyErrors,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Unknown => "unknown",
            ErrorCode::Malformed => "malformed",
            ErrorCode::TooLong => "too-long",
            ErrorCode::Version => "version",
            ErrorCode::Auth => "auth",
            ErrorCode::AuthRequired => "auth-required",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::ControlFailed => "control-failed",
            ErrorCode::TooManyErrors => "too-many-errors",
        }
    }

    fn parse(s: &str) -> Option<ErrorCode> {
        Some(match s {
            "unknown" => ErrorCode::Unknown,
            "malformed" => ErrorCode::Malformed,
            "too-long" => ErrorCode::TooLong,
            "version" => ErrorCode::Version,
            "auth" => ErrorCode::Auth,
            "auth-required" => ErrorCode::AuthRequired,
            "timeout" => ErrorCode::Timeout,
            "unsupported" => ErrorCode::Unsupported,
            "control-failed" => ErrorCode::ControlFailed,
            "too-many-errors" => ErrorCode::TooManyErrors,
            _ => return None,
        })
    }
}

/// A protocol error: a line that is not a valid [`Request`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {text}", code.as_str())]
pub struct ProtocolError {
    pub code: ErrorCode,
    pub text: String,
}

fn perr(code: ErrorCode, text: impl Into<String>) -> ProtocolError {
    ProtocolError {
        code,
        text: text.into(),
    }
}

/// Whether every byte is printable ASCII or a space/tab.
fn is_text(s: &[u8]) -> bool {
    s.iter()
        .all(|&b| b == b' ' || b == b'\t' || (0x21..0x7f).contains(&b))
}

impl Request {
    /// Parses one line (without its `\n`; a trailing `\r` is allowed).
    pub fn parse(line: &[u8]) -> Result<Request, ProtocolError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > MAX_LINE_BYTES {
            return Err(perr(
                ErrorCode::TooLong,
                format!("line of {} bytes, limit {MAX_LINE_BYTES}", line.len()),
            ));
        }
        if !is_text(line) {
            return Err(perr(
                ErrorCode::Malformed,
                "not a text line (bytes outside printable ASCII)",
            ));
        }
        let text = String::from_utf8_lossy(line);
        let mut words = text.split_ascii_whitespace();
        let Some(verb) = words.next() else {
            return Err(perr(ErrorCode::Malformed, "empty line"));
        };
        let args: Vec<&str> = words.collect();
        let nargs = |lo: usize, hi: usize| {
            if args.len() < lo || args.len() > hi {
                Err(perr(
                    ErrorCode::Malformed,
                    format!("{verb} takes {lo}..={hi} arguments, got {}", args.len()),
                ))
            } else {
                Ok(())
            }
        };
        let verb_uc = verb.to_ascii_uppercase();
        Ok(match verb_uc.as_str() {
            "HELLO" => {
                nargs(1, 2)?;
                let version = args[0]
                    .parse()
                    .map_err(|_| perr(ErrorCode::Malformed, "HELLO version is not a number"))?;
                Request::Hello {
                    version,
                    name: args.get(1).copied().unwrap_or("").to_owned(),
                }
            }
            "AUTH" => {
                nargs(1, 1)?;
                if args[0].len() > MAX_TOKEN_BYTES {
                    return Err(perr(ErrorCode::TooLong, "token longer than 256 bytes"));
                }
                Request::Auth {
                    token: args[0].to_owned(),
                }
            }
            "SUBSCRIBE" => {
                nargs(1, 1)?;
                let v = args[0].strip_prefix("probes=").ok_or_else(|| {
                    perr(
                        ErrorCode::Malformed,
                        "SUBSCRIBE takes probes=all|none|ID,...",
                    )
                })?;
                Request::Subscribe(match v {
                    "all" | "*" => ProbeSet::All,
                    "none" => ProbeSet::None,
                    list => {
                        let mut ids = Vec::new();
                        for id in list.split(',') {
                            if ids.len() == MAX_PROBES {
                                return Err(perr(ErrorCode::TooLong, "more than 256 probe ids"));
                            }
                            ids.push(id.parse::<u16>().map_err(|_| {
                                perr(
                                    ErrorCode::Malformed,
                                    format!("probe id {id:?} is not 0-65535"),
                                )
                            })?);
                        }
                        ProbeSet::Some(ids)
                    }
                })
            }
            "FILTER" => {
                nargs(1, 1)?;
                let h = args[0];
                let h = h
                    .strip_prefix("0x")
                    .or_else(|| h.strip_prefix("0X"))
                    .unwrap_or(h);
                if h.is_empty() || h.len() > 16 {
                    return Err(perr(ErrorCode::Malformed, "FILTER takes 1-16 hex digits"));
                }
                Request::Filter(
                    u64::from_str_radix(h, 16).map_err(|_| {
                        perr(ErrorCode::Malformed, "FILTER word is not hexadecimal")
                    })?,
                )
            }
            "START" => {
                nargs(0, 0)?;
                Request::Start
            }
            "STOP" => {
                nargs(0, 0)?;
                Request::Stop
            }
            "PING" => {
                nargs(0, 1)?;
                Request::Ping(args.first().copied().unwrap_or("").to_owned())
            }
            "BYE" => {
                nargs(0, 0)?;
                Request::Bye
            }
            _ => {
                let shown: String = verb.chars().take(32).collect();
                return Err(perr(
                    ErrorCode::Unknown,
                    format!("unknown message {shown:?}"),
                ));
            }
        })
    }

    /// The verb, for replies.
    pub fn verb(&self) -> &'static str {
        match self {
            Request::Hello { .. } => "HELLO",
            Request::Auth { .. } => "AUTH",
            Request::Subscribe(_) => "SUBSCRIBE",
            Request::Filter(_) => "FILTER",
            Request::Start => "START",
            Request::Stop => "STOP",
            Request::Ping(_) => "PING",
            Request::Bye => "BYE",
        }
    }
}

impl fmt::Display for Request {
    /// The line as sent, without `\n`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::Hello { version, name } if name.is_empty() => write!(f, "HELLO {version}"),
            Request::Hello { version, name } => write!(f, "HELLO {version} {name}"),
            Request::Auth { token } => write!(f, "AUTH {token}"),
            Request::Subscribe(p) => write!(f, "SUBSCRIBE probes={p}"),
            Request::Filter(w) => write!(f, "FILTER 0x{w:016x}"),
            Request::Start => f.write_str("START"),
            Request::Stop => f.write_str("STOP"),
            Request::Ping(n) if n.is_empty() => f.write_str("PING"),
            Request::Ping(n) => write!(f, "PING {n}"),
            Request::Bye => f.write_str("BYE"),
        }
    }
}

/// An agent -> client message (in-band, in a custom block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `HELLO 1 agent=NAME auth=none|token caps=a,b,c source=...`: sent
    /// first, right after the section header.
    Hello {
        version: u32,
        agent: String,
        auth_required: bool,
        caps: Vec<String>,
        source: String,
    },
    /// `OK VERB [detail]`
    Ok { verb: String, detail: String },
    /// `ERR CODE text`
    Err { code: ErrorCode, text: String },
    /// `PONG [nonce]`
    Pong(String),
    /// `HEARTBEAT seq=N sent=N dropped=N dropped_records=N`: every second;
    /// counts of this connection.
    Heartbeat {
        seq: u64,
        sent_frames: u64,
        dropped_frames: u64,
        dropped_records: u64,
    },
    /// `END source=NAME frames=N records=N`: the agent's source (a file,
    /// stdin) ended and nothing more will come; totals the source
    /// published. Sent once the client's queue is drained, before `BYE end`.
    End {
        source: String,
        frames: u64,
        records: u64,
    },
    /// `BYE REASON [text]`: the agent closes the connection. Reasons: `end`
    /// (the source ended), `shutdown`, `error`.
    Bye { reason: String, text: String },
}

/// Capabilities an agent may announce in its HELLO.
pub const CAPS: &[&str] = &[
    "frames",
    "records",
    "probes",
    "filter",
    "startstop",
    "heartbeat",
    "drops",
];

fn sanitize(s: &str, max: usize) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .take(max)
        .collect()
}

fn nospace(s: &str) -> String {
    sanitize(s, 200).replace(' ', "_")
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Hello {
                version,
                agent,
                auth_required,
                caps,
                source,
            } => write!(
                f,
                "HELLO {version} agent={} auth={} caps={} source={}",
                nospace(agent),
                if *auth_required { "token" } else { "none" },
                nospace(&caps.join(",")),
                nospace(source)
            ),
            Reply::Ok { verb, detail } if detail.is_empty() => write!(f, "OK {}", nospace(verb)),
            Reply::Ok { verb, detail } => {
                write!(f, "OK {} {}", nospace(verb), sanitize(detail, 800))
            }
            Reply::Err { code, text } => write!(f, "ERR {} {}", code.as_str(), sanitize(text, 800)),
            Reply::Pong(n) if n.is_empty() => f.write_str("PONG"),
            Reply::Pong(n) => write!(f, "PONG {}", nospace(n)),
            Reply::Heartbeat {
                seq,
                sent_frames,
                dropped_frames,
                dropped_records,
            } => write!(
                f,
                "HEARTBEAT seq={seq} sent={sent_frames} dropped={dropped_frames} \
                 dropped_records={dropped_records}"
            ),
            Reply::End {
                source,
                frames,
                records,
            } => write!(
                f,
                "END source={} frames={frames} records={records}",
                nospace(source)
            ),
            Reply::Bye { reason, text } => {
                write!(f, "BYE {} {}", nospace(reason), sanitize(text, 800))
            }
        }
    }
}

impl Reply {
    /// Parses a message text; `None` for anything not understood (a client
    /// ignores those, so later agents may add messages).
    pub fn parse(text: &str) -> Option<Reply> {
        let (verb, rest) = text.split_once(' ').unwrap_or((text, ""));
        let kv = |key: &str| {
            rest.split(' ')
                .find_map(|w| w.strip_prefix(key).and_then(|w| w.strip_prefix('=')))
        };
        let num = |key: &str| kv(key).and_then(|v| v.parse::<u64>().ok());
        Some(match verb {
            "HELLO" => Reply::Hello {
                version: rest.split(' ').next()?.parse().ok()?,
                agent: kv("agent").unwrap_or("").to_owned(),
                auth_required: kv("auth") == Some("token"),
                caps: kv("caps")
                    .unwrap_or("")
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect(),
                source: kv("source").unwrap_or("").to_owned(),
            },
            "OK" => {
                let (v, d) = rest.split_once(' ').unwrap_or((rest, ""));
                Reply::Ok {
                    verb: v.to_owned(),
                    detail: d.to_owned(),
                }
            }
            "ERR" => {
                let (c, t) = rest.split_once(' ').unwrap_or((rest, ""));
                Reply::Err {
                    code: ErrorCode::parse(c)?,
                    text: t.to_owned(),
                }
            }
            "PONG" => Reply::Pong(rest.to_owned()),
            "HEARTBEAT" => Reply::Heartbeat {
                seq: num("seq")?,
                sent_frames: num("sent")?,
                dropped_frames: num("dropped")?,
                dropped_records: num("dropped_records").unwrap_or(0),
            },
            "END" => Reply::End {
                source: kv("source").unwrap_or("").to_owned(),
                frames: num("frames").unwrap_or(0),
                records: num("records").unwrap_or(0),
            },
            "BYE" => {
                let (r, t) = rest.split_once(' ').unwrap_or((rest, ""));
                Reply::Bye {
                    reason: r.to_owned(),
                    text: t.to_owned(),
                }
            }
            _ => return None,
        })
    }

    /// The in-band block carrying this message, appended to `out`.
    pub fn encode_block(&self, ts_ns: u64, out: &mut Vec<u8>) {
        let mut text = self.to_string();
        text.truncate(MAX_MESSAGE_BYTES);
        encode_link_block(ts_ns, text.as_bytes(), out);
    }
}

/// A do-not-copy custom block carrying `text` (at most
/// [`MAX_MESSAGE_BYTES`], longer is cut).
pub fn encode_link_block(ts_ns: u64, text: &[u8], out: &mut Vec<u8>) {
    let text = &text[..text.len().min(MAX_MESSAGE_BYTES)];
    let pad = (4 - text.len() % 4) % 4;
    let total = (LINK_HEAD_BYTES + text.len() + pad + 4) as u32;
    out.extend_from_slice(&LINK_BLOCK_TYPE.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(&ROCESCOPE_PEN.to_le_bytes());
    out.extend_from_slice(&LINK_MESSAGE_CODE.to_le_bytes());
    out.push(LINK_MESSAGE_VERSION);
    out.push(0);
    out.extend_from_slice(&ts_ns.to_le_bytes());
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text);
    out.extend_from_slice(&[0; 3][..pad]);
    out.extend_from_slice(&total.to_le_bytes());
}

/// The text of an in-band block, if `block` (a whole block) is one.
pub(crate) fn decode_link_block(block: &[u8]) -> Option<&[u8]> {
    let u32_at = |i: usize| {
        block
            .get(i..i + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    if u32_at(0)? != LINK_BLOCK_TYPE || u32_at(8)? != ROCESCOPE_PEN {
        return None;
    }
    let code = u16::from_le_bytes([*block.get(12)?, *block.get(13)?]);
    if code != LINK_MESSAGE_CODE || *block.get(14)? != LINK_MESSAGE_VERSION {
        return None;
    }
    let n = u32_at(24)? as usize;
    let end = LINK_HEAD_BYTES.checked_add(n)?;
    if n > MAX_MESSAGE_BYTES || end + 4 > block.len() {
        return None;
    }
    block.get(LINK_HEAD_BYTES..end)
}

/// Compares a presented token with the expected one in time that depends
/// on neither's content (only on the fixed [`MAX_TOKEN_BYTES`]).
pub fn token_matches(presented: &[u8], expected: &[u8]) -> bool {
    let mut diff: u32 = u32::from(presented.len() != expected.len())
        | u32::from(presented.len() > MAX_TOKEN_BYTES)
        | u32::from(expected.is_empty());
    for i in 0..MAX_TOKEN_BYTES {
        let a = presented.get(i).copied().unwrap_or(0);
        let b = expected.get(i).copied().unwrap_or(0);
        diff |= u32::from(std::hint::black_box(a ^ b));
    }
    std::hint::black_box(diff) == 0
}

/// What a [`LinkReader`] tells its owner.
pub trait LinkEvents {
    /// Just before a read from the underlying stream that may block: hand
    /// on what was read so far.
    fn before_read(&mut self) {}
    /// An in-band message (text, not yet parsed).
    fn message(&mut self, _text: &str) {}
    /// The underlying read timed out (no bytes for a while). Return an
    /// error to stop reading (it surfaces from `read`).
    fn idle(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Bytes arrived.
    fn received(&mut self, _bytes: usize) {}
}

/// Nothing to report to.
#[derive(Debug, Default)]
pub struct NoEvents;
impl LinkEvents for NoEvents {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Split {
    /// At the start of the stream: look at the first block.
    Start,
    /// At a block boundary.
    Boundary,
    /// Inside a block: this many bytes to pass on.
    Pass(usize),
    /// Not our pcapng (classic pcap, big-endian, damaged): pass everything.
    Raw,
}

/// Reads a stream, passes its pcapng bytes on and takes the in-band
/// control blocks out (handing them to [`LinkEvents::message`]). With
/// `demux` false (stdin, files) it only passes through and reports.
///
/// Read timeouts (`WouldBlock`/`TimedOut`) of the underlying stream call
/// [`LinkEvents::idle`] and are retried, so a socket with a read timeout
/// or a followed file can sit under a `CaptureReader`.
#[derive(Debug)]
pub struct LinkReader<R, E> {
    inner: R,
    pub events: E,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    split: Split,
}

const LINK_BUFFER_BYTES: usize = 256 * 1024;

impl<R: Read, E: LinkEvents> LinkReader<R, E> {
    pub fn new(inner: R, events: E, demux: bool) -> Self {
        LinkReader {
            inner,
            events,
            buf: vec![0; LINK_BUFFER_BYTES],
            start: 0,
            end: 0,
            eof: false,
            split: if demux { Split::Start } else { Split::Raw },
        }
    }

    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    fn avail(&self) -> usize {
        self.end - self.start
    }

    /// One read from the underlying stream into the buffer; false at EOF.
    fn fill_once(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        self.events.before_read();
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(k) => {
                    let k = k.min(self.buf.len() - self.end);
                    self.end += k;
                    self.events.received(k);
                    return Ok(true);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    self.events.idle()?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Makes `n` bytes available (n <= buffer); false if the stream ends.
    fn ensure(&mut self, n: usize) -> io::Result<bool> {
        if self.start + n > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        while self.avail() < n {
            if !self.fill_once()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn u32_at(&self, i: usize) -> u32 {
        let s = self.start + i;
        u32::from_le_bytes([
            self.buf[s],
            self.buf[s + 1],
            self.buf[s + 2],
            self.buf[s + 3],
        ])
    }

    fn pass(&mut self, out: &mut [u8], limit: usize) -> io::Result<usize> {
        if self.avail() == 0 && !self.fill_once()? {
            return Ok(0);
        }
        let k = self.avail().min(out.len()).min(limit);
        out[..k].copy_from_slice(&self.buf[self.start..self.start + k]);
        self.start += k;
        Ok(k)
    }
}

impl<R: Read, E: LinkEvents> Read for LinkReader<R, E> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            match self.split {
                Split::Raw => return self.pass(out, usize::MAX),
                Split::Pass(n) if n > 0 => {
                    let k = self.pass(out, n)?;
                    self.split = Split::Pass(n - k);
                    return Ok(k);
                }
                Split::Start => {
                    if !self.ensure(12)? {
                        self.split = Split::Raw;
                        continue;
                    }
                    // Our stream: little-endian pcapng.
                    let ours = self.u32_at(0) == SHB_TYPE && self.u32_at(8) == 0x1a2b_3c4d;
                    self.split = if ours { Split::Boundary } else { Split::Raw };
                }
                Split::Boundary | Split::Pass(_) => {
                    if !self.ensure(8)? {
                        self.split = Split::Raw;
                        continue;
                    }
                    let ty = self.u32_at(0);
                    let len = self.u32_at(4) as usize;
                    if len < 12 || len % 4 != 0 {
                        // Damaged: let the capture reader report it.
                        self.split = Split::Raw;
                        continue;
                    }
                    if ty == LINK_BLOCK_TYPE && len <= MAX_LINK_BLOCK_BYTES {
                        if !self.ensure(len)? {
                            self.split = Split::Raw;
                            continue;
                        }
                        let block = &self.buf[self.start..self.start + len];
                        if let Some(text) = decode_link_block(block) {
                            let text = String::from_utf8_lossy(text).into_owned();
                            self.start += len;
                            self.events.message(&text);
                            continue;
                        }
                    }
                    self.split = Split::Pass(len);
                }
            }
        }
    }
}

/// One line read by [`LineReader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A complete line, `\n` removed.
    Text(Vec<u8>),
    /// A line over the limit (its bytes were discarded up to the `\n`).
    TooLong(usize),
    /// The stream ended (a last line without `\n` is returned first as
    /// `Cut`).
    Eof,
    /// The stream ended inside a line of this many bytes.
    Cut(usize),
}

/// Reads `\n`-terminated lines of at most [`MAX_LINE_BYTES`], holding
/// never more than that (plus its read buffer) in memory.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    max: usize,
}

impl<R: Read> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_LINE_BYTES)
    }

    pub fn with_limit(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            buf: vec![0; 4096].into_boxed_slice(),
            start: 0,
            end: 0,
            max,
        }
    }

    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The next line. Read timeouts of the inner reader surface as errors
    /// (the caller decides whether to retry; the partial line is kept).
    pub fn next_line(&mut self) -> io::Result<Line> {
        let mut line: Vec<u8> = Vec::new();
        let mut over = 0usize;
        loop {
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
                let k = loop {
                    match self.inner.read(&mut self.buf) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        r => break r?,
                    }
                };
                if k == 0 {
                    return Ok(if line.is_empty() && over == 0 {
                        Line::Eof
                    } else {
                        Line::Cut(line.len() + over)
                    });
                }
                self.end = k.min(self.buf.len());
            }
            let chunk = &self.buf[self.start..self.end];
            let (part, found) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (&chunk[..i], Some(i)),
                None => (chunk, None),
            };
            if over == 0 && line.len() + part.len() <= self.max + 1 {
                line.extend_from_slice(part);
            } else {
                over += part.len() + line.len();
                line.clear();
            }
            self.start += part.len() + usize::from(found.is_some());
            if found.is_some() {
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if over > 0 || line.len() > self.max {
                    return Ok(Line::TooLong(over + line.len()));
                }
                return Ok(Line::Text(line));
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
}

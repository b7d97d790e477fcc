//! Client -> agent messages: [`Request`] and its text form, the probe set,
//! and the error codes a request can be refused with.

use super::*;

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

    pub(super) fn parse(s: &str) -> Option<ErrorCode> {
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

pub(super) fn perr(code: ErrorCode, text: impl Into<String>) -> ProtocolError {
    ProtocolError {
        code,
        text: text.into(),
    }
}

/// Whether every byte is printable ASCII or a space/tab.
pub(super) fn is_text(s: &[u8]) -> bool {
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

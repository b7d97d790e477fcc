//! Agent -> client messages: [`Reply`], its text form and its in-band block.

use super::*;

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

pub(super) fn sanitize(s: &str, max: usize) -> String {
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

pub(super) fn nospace(s: &str) -> String {
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

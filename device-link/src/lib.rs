//! Live attach for rocescope: where a live feed comes from, the agent
//! protocol and the client with bounded queues and drop accounting.
//!
//! - [`AttachUrl`]: the attach-URL grammar the CLI and the workbench share.
//! - [`protocol`]: the wire protocol (PROTOCOL.md): a pcapng stream with
//!   in-band control messages one way, text lines the other.
//! - [`agent`]: serves a [`source::Source`] to clients over TCP, with a
//!   bounded queue per client; [`sim::SimSource`] is the bundled simulator
//!   as one such source.
//! - [`client`]: attaches to an agent (or stdin, or a followed file) and
//!   feeds a live `Store`, with a bounded queue, drop accounting,
//!   reconnects and an optional recording.

pub mod agent;
pub mod batch;
pub mod client;
pub mod protocol;
pub mod queue;
pub mod sim;
pub mod source;
pub mod stream;

pub use agent::{Agent, AgentConfig, AgentStats, CardControl};
pub use batch::{Batch, Entry, Item};
pub use client::{
    Client, ClientConfig, LinkEvent, LinkState, LinkStats, LinkStatsSnapshot, SourceEnd,
};
pub use sim::SimSource;
pub use source::{CaptureSource, CounterSource, FollowFile, Source, SourceStatus};

use std::fmt;
use std::path::PathBuf;

/// Where `rocescope attach URL` reads a live feed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachUrl {
    /// `tcp://HOST:PORT`: a rocescope agent.
    Tcp { host: String, port: u16 },
    /// `-`: a pcap or pcapng stream on standard input.
    Stdin,
    /// `file:PATH` or `file:PATH?follow` (keep reading as the file grows).
    File { path: PathBuf, follow: bool },
}

/// Why an attach URL was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("attach URL {url:?}: expected tcp://HOST:PORT, - or file:PATH[?follow]")]
    Scheme { url: String },
    #[error("attach URL {url:?}: {what}")]
    Invalid { url: String, what: &'static str },
}

impl AttachUrl {
    pub fn parse(url: &str) -> Result<AttachUrl, UrlError> {
        let invalid = |what| UrlError::Invalid {
            url: url.to_owned(),
            what,
        };
        if url == "-" {
            return Ok(AttachUrl::Stdin);
        }
        if let Some(rest) = url.strip_prefix("tcp://") {
            let rest = rest.trim_end_matches('/');
            let (host, port) = rest
                .rsplit_once(':')
                .ok_or_else(|| invalid("missing :PORT"))?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if host.is_empty() {
                return Err(invalid("missing host"));
            }
            let port: u16 = port
                .parse()
                .map_err(|_| invalid("port is not a number 1-65535"))?;
            if port == 0 {
                return Err(invalid("port is not a number 1-65535"));
            }
            return Ok(AttachUrl::Tcp {
                host: host.to_owned(),
                port,
            });
        }
        if let Some(rest) = url.strip_prefix("file:") {
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            let (path, query) = match rest.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (rest, None),
            };
            let follow = match query {
                None => false,
                Some("follow") => true,
                Some(_) => return Err(invalid("the only query is ?follow")),
            };
            if path.is_empty() {
                return Err(invalid("missing path"));
            }
            return Ok(AttachUrl::File {
                path: PathBuf::from(path),
                follow,
            });
        }
        Err(UrlError::Scheme {
            url: url.to_owned(),
        })
    }
}

impl fmt::Display for AttachUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachUrl::Tcp { host, port } if host.contains(':') => {
                write!(f, "tcp://[{host}]:{port}")
            }
            AttachUrl::Tcp { host, port } => write!(f, "tcp://{host}:{port}"),
            AttachUrl::Stdin => f.write_str("-"),
            AttachUrl::File { path, follow } => {
                write!(
                    f,
                    "file:{}{}",
                    path.display(),
                    if *follow { "?follow" } else { "" }
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_round_trips() {
        for (s, want) in [
            (
                "tcp://127.0.0.1:4790",
                AttachUrl::Tcp {
                    host: "127.0.0.1".into(),
                    port: 4790,
                },
            ),
            (
                "tcp://[::1]:4790",
                AttachUrl::Tcp {
                    host: "::1".into(),
                    port: 4790,
                },
            ),
            ("-", AttachUrl::Stdin),
            (
                "file:/tmp/x.pcapng?follow",
                AttachUrl::File {
                    path: "/tmp/x.pcapng".into(),
                    follow: true,
                },
            ),
            (
                "file:x.pcap",
                AttachUrl::File {
                    path: "x.pcap".into(),
                    follow: false,
                },
            ),
        ] {
            let got = AttachUrl::parse(s).unwrap();
            assert_eq!(got, want);
            assert_eq!(AttachUrl::parse(&got.to_string()).unwrap(), want);
        }
    }

    #[test]
    fn rejects_with_the_url_named() {
        for bad in [
            "udp://x:1",
            "tcp://host",
            "tcp://:80",
            "tcp://h:0",
            "tcp://h:99999",
            "file:",
            "file:x?tail",
        ] {
            let e = AttachUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }
}

//! A live link (device-link's client) as a workbench source, for both
//! workbenches alike: a small thread copies the client's counters (frames,
//! drops, reconnects) and link events (down and why, retrying, ended) into
//! the source status the core's status line reads.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::Model;
use crate::source::{SourceHandle, SourceStatus};
use rocescope_device_link::Client;
use rocescope_device_link::client::LinkEvent;

/// Keeps the link and its status thread running; dropping it stops both.
#[derive(Debug)]
pub struct LiveLink {
    stop: Arc<AtomicBool>,
    updater: Option<JoinHandle<()>>,
    /// Control lines to the agent (the sniffer filter).
    pub(crate) control: rocescope_device_link::client::Control,
}

/// How often the counters are copied: the views redraw about as often.
const UPDATE_EVERY: Duration = Duration::from_millis(200);

/// A model over the client's live store, named `attach:NAME`; its source
/// handle keeps the link (dropping the model stops it).
pub fn attach_model(client: Client, name: &str) -> Model {
    let store = Arc::clone(client.store());
    let analysis = client.analysis().clone();
    let control = client.control();
    let mut handle = SourceHandle::external(format!("attach:{name}"));
    let status = handle.status_arc();
    let stop = Arc::new(AtomicBool::new(false));
    // The client goes to the thread through this slot, so that it is
    // stopped here when no thread could be made (dropped, it would run on).
    let slot = Arc::new(std::sync::Mutex::new(Some(client)));
    let spawned = {
        let stop = Arc::clone(&stop);
        let status = Arc::clone(&status);
        let slot = Arc::clone(&slot);
        #[cfg(test)]
        let panics = name == tests::PANICS;
        std::thread::Builder::new()
            .name("attach-status".into())
            .spawn(move || {
                let Some(client) = slot.lock().unwrap_or_else(|e| e.into_inner()).take() else {
                    return;
                };
                // A panic here is told (the error, the link stopped and
                // ended as failed), never counters frozen under a link
                // that looks live.
                let ran = rocescope_replay::contain::contain(|| {
                    while !stop.load(Ordering::Relaxed) {
                        #[cfg(test)]
                        if panics {
                            panic!("a link status's failure, for the test");
                        }
                        update(&client, &status);
                        std::thread::sleep(UPDATE_EVERY);
                    }
                });
                let last = client.stop();
                if let Err(why) = ran {
                    // The counters as the link stopped, not as last copied.
                    status.frames.store(last.frames_received, Ordering::Relaxed);
                    status.dropped.store(last.frames_dropped, Ordering::Relaxed);
                    status.reconnects.store(last.reconnects, Ordering::Relaxed);
                    failed(
                        &status,
                        format!(
                            "the link's status thread failed ({why}; a rocescope bug: please report it): the link was stopped"
                        ),
                    );
                }
            })
    };
    let updater = match spawned {
        Ok(t) => Some(t),
        Err(e) => {
            if let Some(client) = slot.lock().unwrap_or_else(|e| e.into_inner()).take() {
                client.stop();
            }
            failed(
                &status,
                format!("the link was stopped: cannot make its status thread: {e}"),
            );
            None
        }
    };
    handle.link = Some(LiveLink {
        stop,
        updater,
        control,
    });
    Model::new(store, analysis, handle)
}

/// End the link's source as failed, saying why.
fn failed(status: &SourceStatus, why: String) {
    *status.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    status.set_disconnected(None);
    status.end("link stopped: it failed");
}

/// Copy the client's counters and events into `status`.
fn update(client: &Client, status: &SourceStatus) {
    while let Ok(ev) = client.events().try_recv() {
        match ev {
            LinkEvent::Connected { .. } => {
                status.set_disconnected(None);
                // A source that ended has come back.
                *status.end_reason.lock().unwrap_or_else(|e| e.into_inner()) = None;
                status.finished.store(false, Ordering::Release);
            }
            LinkEvent::Disconnected { reason, retry_in } => {
                let retry = retry_in.map_or_else(
                    || "not retrying".to_owned(),
                    |d| format!("retrying in {:.1} s", d.as_secs_f64()),
                );
                status.set_disconnected(Some(format!("{reason}; {retry}")));
            }
            LinkEvent::AgentError { code, text } => {
                *status.error.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(format!("agent: ERR {code} {text}"));
            }
            LinkEvent::End(end) => status.end(match end.frames {
                Some(n) => format!("source ended after {n} frames"),
                None => "source ended".to_owned(),
            }),
            LinkEvent::Fatal(why) => {
                *status.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.clone());
                status.end(why);
            }
        }
    }
    let s = client.stats();
    status.frames.store(s.frames_received, Ordering::Relaxed);
    status.dropped.store(s.frames_dropped, Ordering::Relaxed);
    status.reconnects.store(s.reconnects, Ordering::Relaxed);
    let mut down = status
        .disconnected
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if s.connected {
        *down = None;
    } else if down.is_none() && !status.finished.load(Ordering::Acquire) {
        *down = Some("not connected yet".into());
    }
}

impl Drop for LiveLink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.updater.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocescope_device_link::{AttachUrl, ClientConfig};

    /// A link name whose status thread fails, for the tests.
    pub(super) const PANICS: &str = "test-link-status-panics";

    /// A status thread that panics stops the link and ends the source as
    /// failed, with its words and the counters the link stopped at.
    #[test]
    fn a_link_whose_status_thread_fails_says_so() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../assets/captures/sample-write-read.pcap");
        let url = AttachUrl::parse(&format!("file:{}", path.display())).unwrap();
        let client = Client::start(ClientConfig::new(url)).unwrap();
        let mut model = attach_model(client, PANICS);
        let t0 = std::time::Instant::now();
        while !model.source.status().finished.load(Ordering::Acquire) {
            assert!(t0.elapsed() < Duration::from_secs(20), "never ended");
            std::thread::sleep(Duration::from_millis(20));
        }
        model.tick(std::time::Instant::now());
        let line = crate::status_line(&model);
        assert_eq!(line.state.text(), "ended: link stopped: it failed");
        let e = line.error.expect("the failure is told");
        assert!(e.starts_with("the link's status thread failed ("), "{e}");
        assert!(e.contains("a link status's failure, for the test"), "{e}");
    }

    #[test]
    fn a_link_whose_file_ends_says_ended_with_its_frames() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../assets/captures/sample-write-read.pcap");
        let url = AttachUrl::parse(&format!("file:{}", path.display())).unwrap();
        let client = Client::start(ClientConfig::new(url)).unwrap();
        let mut model = attach_model(client, "sample");
        let t0 = std::time::Instant::now();
        let st = model.source.status();
        // Ingest counts the last frames a moment after the link ends.
        while !(st.finished.load(Ordering::Acquire) && st.frames.load(Ordering::Relaxed) == 15)
            && t0.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        model.tick(std::time::Instant::now());
        let line = crate::status_line(&model);
        assert_eq!(line.source, "attach:sample");
        assert!(
            line.state.text().starts_with("ended: source ended"),
            "{}",
            line.text()
        );
        assert_eq!(model.source.status().frames.load(Ordering::Relaxed), 15);
        assert_eq!(line.dropped, 0);
    }

    #[test]
    fn the_sniffer_filter_goes_to_the_agent_of_a_live_link() {
        use std::io::BufRead;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            for line in std::io::BufReader::new(conn).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let url = AttachUrl::parse(&format!("tcp://127.0.0.1:{port}")).unwrap();
        let limits = crate::session::SessionLimits {
            max_memory_bytes: 64 << 20,
            max_disk_bytes: None,
            dir: Some(rocescope_testkit::build_tmp().join("filter")),
            index_dir: None,
        };
        let mut model = crate::source::open(
            crate::source::SourceSpec::Attach(Box::new(ClientConfig::new(url))),
            &limits,
        )
        .unwrap();
        let t0 = std::time::Instant::now();
        while !model.status.starts_with("sniffer filter 0xab sent") {
            assert!(t0.elapsed() < Duration::from_secs(20), "{}", model.status);
            std::thread::sleep(Duration::from_millis(50));
            model.apply(crate::Command::SetSnifferFilter(0xab));
            crate::source::steer(&mut model);
        }
        // The client's hello, then the filter line, as PROTOCOL.md has it.
        let mut seen = Vec::new();
        let filter = loop {
            let line = lines
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("no FILTER line after {seen:?}"));
            if line.starts_with("FILTER") {
                break line;
            }
            seen.push(line);
        };
        assert!(seen.iter().any(|l| l.starts_with("HELLO")), "{seen:?}");
        assert_eq!(filter, "FILTER 0x00000000000000ab");
    }
}

//! What a failure of the agent's own threads tells.

use std::io::Read;

use super::*;
use crate::sim::SimSource;

fn agent(fails: &'static str) -> Agent {
    let mut cfg = AgentConfig::new("127.0.0.1:0".parse().expect("addr"));
    cfg.fails = Some(fails);
    Agent::bind(cfg).expect("bind")
}

fn until_stopped() -> Box<dyn Source> {
    let sc = rocescope_sim::Scenario::builtin("default").expect("default");
    assert!(sc.until_stopped);
    Box::new(SimSource::new(sc, None))
}

/// An accepting thread that fails stops the agent with the failure as
/// its error, never an agent that serves on refusing every client.
#[test]
fn an_accepting_thread_that_fails_stops_the_agent_saying_so() {
    let a = agent("accept");
    let (tx, ran) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(a.run(until_stopped(), Vec::new()));
    });
    let got = ran
        .recv_timeout(Duration::from_secs(30))
        .expect("the agent stops");
    let Err(AgentError::Failed(why)) = got else {
        panic!("not the accepting thread's failure: {got:?}");
    };
    assert!(
        why.starts_with("the agent's accepting thread failed (")
            && why.contains("an accepting thread's failure, for the test"),
        "{why}"
    );
}

/// A client whose line reader fails is sent BYE with why and closed,
/// never left connected with its lines unread.
#[test]
fn a_control_reader_that_fails_closes_its_client_saying_so() {
    let a = agent("control");
    let port = a.local_addr().expect("addr").port();
    let stop = a.stop_flag();
    let t = std::thread::spawn(move || a.run(until_stopped(), Vec::new()));
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    // The agent closes the connection: the reads end (bounded: without
    // the close the simulated card streams on for good).
    let (mut got, mut buf, t0) = (Vec::new(), vec![0u8; 1 << 16], Instant::now());
    while t0.elapsed() < Duration::from_secs(30) && got.len() < 256 << 20 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.contains("BYE error the agent's reader of this client's lines failed (")
            && text.contains("a control reader's failure, for the test"),
        "{} bytes, no BYE with the failure",
        got.len()
    );
    stop.store(true, Ordering::Relaxed);
    let ran = t.join().expect("the agent's thread");
    assert!(ran.is_ok(), "{ran:?}");
}

#![allow(clippy::unwrap_used)]

use super::*;

/// A shipped scenario, at most `ns` long, run and analysed as a
/// recording of it is: the capture.
fn captured(name: &str, ns: u64) -> Analysed {
    let mut sc = Scenario::builtin(name).unwrap();
    sc.bound_to_ns(sc.duration_ns.min(ns));
    run(&sc)
}

fn twin_of(name: &str, ns: u64) -> (Analysed, Derived, Vec<Mismatch>) {
    let cap = captured(name, ns);
    let d = derive(&cap, name).unwrap();
    let m = against(&cap, &d, &d.scenario);
    (cap, d, m)
}

/// The twin with `take_out` done to it is refused, a mismatch naming
/// `why`.
fn refused_without(cap: &Analysed, d: &Derived, take_out: impl FnOnce(&mut Scenario), why: &str) {
    let mut twin = d.scenario.clone();
    take_out(&mut twin);
    let m = against(cap, d, &twin);
    assert!(m.iter().any(|m| m.why.contains(why)), "{m:?}");
}

/// The capture's mismatches against a run of `scenario`: its twin, or
/// the twin with something taken out.
fn against(cap: &Analysed, d: &Derived, scenario: &Scenario) -> Vec<Mismatch> {
    let capture = RunOutcome::of(cap, &d.qp_keys, true);
    check(&capture, &RunOutcome::of(&run(scenario), &d.qp_keys, false))
}

#[test]
fn the_twin_of_a_lossy_link_replays_its_losses_where_they_happened() {
    let (cap, d, mismatches) = twin_of("lossy-link", 2_000_000);
    assert!(cap.report.episodes.len() > 10, "losses to replay");
    // One loss rule per Go-Back-N pass, each at the frame it hit.
    assert!(d.scenario.faults.len() >= cap.report.episodes.len());
    assert!(
        d.scenario
            .faults
            .iter()
            .all(|f| f.nth > 0 && f.qp == Some(0))
    );
    assert!(mismatches.is_empty(), "{mismatches:?}");
    // The capture point stays the requester's card.
    assert_eq!(d.scenario.sniffer.as_ref().unwrap().node, 0);
}

#[test]
fn message_sizes_queue_depths_and_posting_come_from_the_capture() {
    // 32 KiB READs, 4 deep: the READ's length from its request.
    let (_, d, m) = twin_of("read-heavy", 500_000);
    assert!(m.is_empty(), "{m:?}");
    assert_eq!(d.scenario.qps.len(), 8);
    for q in &d.scenario.qps {
        assert_eq!((q.op, q.size_bytes), (crate::OpKind::Read, 32_768));
    }
    // Small messages posted as each completes, 2 deep: closed loop, the
    // depth the capture shows in flight.
    let (_, d, m) = twin_of("aes", 200_000);
    assert!(m.is_empty(), "{m:?}");
    let q = &d.scenario.qps[0];
    assert_eq!((q.size_bytes, q.queue_depth, q.rate_gbps), (8192, 2, 0.0));
    // Two messages and no more.
    let (_, d, m) = twin_of("teaching-basic", 100_000);
    assert!(m.is_empty(), "{m:?}");
    assert_eq!(
        (d.scenario.qps[0].messages, d.scenario.faults.len()),
        (2, 1)
    );
}

#[test]
fn a_twin_that_does_not_hold_names_the_qp_and_why() {
    // SENDs into a receive queue the capture does not show: RNR waits.
    let (_, _, m) = twin_of("rnr", 2_000_000);
    assert!(!m.is_empty());
    assert_eq!(m[0].dest_qp, 0x100);
    assert!(m[0].why.contains("rnr_wait"), "{}", m[0].why);
}

#[test]
fn a_capture_s_pauses_are_replayed_as_seen_and_its_twin_holds() {
    // Three senders into one port: the switch pauses alice (the capture
    // point) because of bob's and carol's traffic, which the capture does
    // not carry.
    let (cap, d, m) = twin_of("pfc", 2_000_000);
    let seen = scan::pauses_received(&cap.store).unwrap();
    assert!(!seen.is_empty(), "PFC frames in the capture");
    assert_eq!(d.scenario.pauses.len(), seen.len());
    let node = d.scenario.sniffer.as_ref().unwrap().node;
    assert!(d.scenario.pauses.iter().all(|p| p.node == node));
    assert!(
        d.scenario
            .pauses
            .iter()
            .zip(&seen)
            .all(|(p, s)| p.quanta == s.quanta && p.quanta > 0)
    );
    assert!(m.is_empty(), "{m:?}");
    let text = to_toml(&d.scenario);
    let back = Scenario::from_toml(&text, "twin.toml").unwrap();
    assert_eq!(back.pauses, d.scenario.pauses);
    // Without them (its own traffic alone fills no queue), the twin runs
    // unpaused and is refused naming the pauses.
    refused_without(&cap, &d, |s| s.pauses.clear(), "paused");
}

#[test]
fn a_pause_key_holds_the_node_for_its_quanta_and_bad_ones_name_themselves() {
    // One WRITE stream; a pause of 20 µs at 100 µs holds its sender.
    let base = "name = \"p\"\nduration_ns = 400000\n\n[params]\npfc_enabled = 1\n\n[[node]]\nname = \"a\"\nkind = \"balboa\"\n\n[[node]]\nname = \"b\"\nkind = \"balboa\"\n\n[[qp]]\nfrom = \"a\"\nto = \"b\"\nop = \"write\"\nsize_bytes = 65536\nqueue_depth = 2\n\n[sniffer]\nnode = \"a\"\n";
    let plain = Scenario::from_toml(base, "p.toml").unwrap();
    // 20 µs at 100 Gb/s is 20_000 * 100 / 512 quanta.
    let quanta = (20_000.0 * plain.params.link_gbps / 512.0) as u64;
    let paused = format!("{base}\n[[pause]]\nnode = \"a\"\nat_ns = 100000\nquanta = {quanta}\n");
    let sc = Scenario::from_toml(&paused, "p.toml").unwrap();
    assert_eq!(
        sc.pauses,
        vec![crate::PauseAt {
            node: 0,
            at_ns: 100_000,
            quanta: quanta as u16
        }]
    );
    let paused_ns = |sc: &Scenario| {
        let r = run(sc).report;
        r.qps[0].states.totals_ns[rocescope_decoders::analysis::TimeState::Paused as usize]
    };
    assert_eq!(paused_ns(&plain), 0);
    let held = paused_ns(&sc);
    assert!((15_000..=21_000).contains(&held), "{held} ns paused");
    // The sniffer sees the PFC frame, as the capture's host would.
    let seen = scan::pauses_received(&run(&sc).store).unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(u64::from(seen[0].quanta), quanta);
    // With PFC off the switch sends none.
    let mut off = sc.clone();
    off.set("pfc_enabled", "0").unwrap();
    assert_eq!(paused_ns(&off), 0);
    for (bad, says) in [
        ("node = \"a\"\nat_ns = 1\nquanta = 70000", "[0].quanta"),
        ("node = \"z\"\nat_ns = 1\nquanta = 1", "no node named `z`"),
        ("node = \"a\"\nat_ns = -1\nquanta = 1", "[0].at_ns"),
    ] {
        let e = Scenario::from_toml(&format!("{base}\n[[pause]]\n{bad}\n"), "p.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn a_capture_s_cnps_are_replayed_as_seen_and_its_twin_holds() {
    // The first ConnectX slowed by CNPs from a queue the second one's
    // traffic builds, which the capture (at the first) does not show.
    let (cap, d, m) = twin_of("dcqcn", 2_000_000);
    let seen = cap.report.counters.np_cnp_sent;
    assert!(seen > 0, "CNPs in the capture");
    assert_eq!(d.scenario.cnps.len() as u64, seen);
    assert!(d.scenario.cnps.iter().all(|c| c.qp == 0));
    assert_eq!(d.scenario.params.dcqcn_enabled, 1);
    assert!(m.is_empty(), "{m:?}");
    let back = Scenario::from_toml(&to_toml(&d.scenario), "twin.toml").unwrap();
    assert_eq!(back.cnps, d.scenario.cnps);
    let bad = to_toml(&d.scenario).replace("[[cnp]]\nqp = 0", "[[cnp]]\nqp = 5");
    let e = Scenario::from_toml(&bad, "twin.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("QP 5 does not exist"), "{e}");
    // Without them (the switch alone), the twin runs at line rate and is
    // refused naming the pacing after CNPs.
    refused_without(&cap, &d, |s| s.cnps.clear(), "rate_limited");
}

#[test]
fn the_derived_scenario_reads_back_from_its_toml() {
    let (_, d, _) = twin_of("default", 300_000);
    let text = to_toml(&d.scenario);
    let back = Scenario::from_toml(&text, "twin.toml").unwrap();
    assert_eq!(back.qps, d.scenario.qps);
    assert_eq!(back.faults, d.scenario.faults);
    assert_eq!(back.params, d.scenario.params);
    assert_eq!(back.nodes, d.scenario.nodes);
    assert_eq!(back.sniffer, d.scenario.sniffer);
    assert_eq!(back.duration_ns, d.scenario.duration_ns);
}

#[test]
fn a_set_names_an_unknown_key_or_a_bad_value_and_lists_the_valid_keys() {
    let mut sc = Scenario::builtin("default").unwrap();
    for (given, says) in [
        ("window=32", "unknown key `window`"),
        ("window_packets=lots", "`lots` is not a number"),
        ("window_packets=0", "impossible"),
        ("losses=some", "not a value of losses"),
        ("window_packets", "expected KEY=VALUE"),
    ] {
        let e = apply_sets(&mut sc, &[given.to_owned()])
            .unwrap_err()
            .to_string();
        assert!(e.contains(given), "{e}");
        assert!(e.contains(says), "{e}");
        if !given.starts_with("losses") {
            assert!(e.contains("window_packets, qp_table_size"), "{e}");
            assert!(e.contains("losses"), "{e}");
        }
    }
    apply_sets(&mut sc, &["window_packets=32".into(), "losses=none".into()]).unwrap();
    assert_eq!(sc.params.window_packets, 32);
    assert!(sc.faults.iter().all(|f| f.kind != crate::FaultKind::Loss));
}

#[test]
fn a_finite_workload_changed_runs_until_its_messages_are_done() {
    let (_, d, _) = twin_of("teaching-basic", 100_000);
    let c = changed(&d.scenario, &["link_prop_ns=2000".into()]).unwrap();
    assert!(c.duration_ns > d.scenario.duration_ns * 5);
    let (_, d, _) = twin_of("line-rate", 200_000);
    let c = changed(&d.scenario, &["link_prop_ns=2000".into()]).unwrap();
    assert_eq!(c.duration_ns, d.scenario.duration_ns);
}

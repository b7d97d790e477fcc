//! Every shipped scenario loads and runs, every frame decodes; bad input is
//! reported with file, line and key.

mod common;

use common::*;
use rocescope_decoders::IcrcStatus;
use rocescope_replay::Record;
use rocescope_replay::record::TruthEvent;
use rocescope_sim::{Params, Scenario};

#[test]
fn every_shipped_scenario_loads_runs_and_its_frames_decode() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/scenarios");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("assets/scenarios")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            p.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    on_disk.sort();
    let mut builtin: Vec<String> = Scenario::builtin_names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    builtin.sort();
    assert_eq!(
        on_disk, builtin,
        "every file is shipped and every shipped name has a file"
    );
    for name in &builtin {
        let sc =
            Scenario::load(&dir.join(format!("{name}.toml"))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Some(&sc), Scenario::builtin(name).as_ref());
        let recs = run(sc, 150_000);
        let corrupt: Vec<(u32, u32)> = truths(&recs)
            .iter()
            .filter(|t| t.3 == TruthEvent::WireCorrupt)
            .map(|t| (t.1, t.2))
            .collect();
        let f = frames(&recs);
        assert!(!f.is_empty(), "{name}: no frames");
        for x in &f {
            match x.icrc {
                IcrcStatus::Ok => assert!(!x.cut, "{name}"),
                IcrcStatus::Truncated => assert!(x.cut, "{name}"),
                IcrcStatus::Bad { .. } => assert!(
                    corrupt.contains(&(x.qp, x.psn)),
                    "{name}: bad ICRC without a corruption: {x:?}"
                ),
                IcrcStatus::None => panic!("{name}: not RoCE: {x:?}"),
                IcrcStatus::Unchecked => panic!("{name}: decoded without its ICRC: {x:?}"),
            }
        }
        assert!(
            recs.iter().any(|r| matches!(r, Record::QpState(_))),
            "{name}"
        );
    }
}

fn err(text: &str) -> rocescope_sim::ScenarioError {
    Scenario::from_toml(text, "bad.toml").expect_err("must fail")
}

const BASE: &str = "seed = 1\n[[node]]\nname = \"a\"\nkind = \"balboa\"\n[[node]]\nname = \"b\"\nkind = \"balboa\"\n[[qp]]\nfrom = \"a\"\nto = \"b\"\n";

#[test]
fn bad_scenarios_name_file_line_and_key() {
    assert!(Scenario::from_toml(BASE, "ok.toml").is_ok());

    let e = err(&format!("{BASE}sise_bytes = 5\n"));
    assert_eq!((e.file.as_str(), e.line), ("bad.toml", Some(11)), "{e}");
    assert!(e.key.contains("sise_bytes"), "{e}");
    assert!(e.to_string().starts_with("bad.toml:11: "), "{e}");

    let e = err(&format!("{BASE}size_bytes = \"big\"\n"));
    assert_eq!(e.line, Some(11), "{e}");
    assert!(e.key.contains("size_bytes"), "{e}");

    let e = err(&format!("{BASE}rate_gbps = -5.0\n"));
    assert_eq!(
        (e.line, e.key.as_str()),
        (Some(11), "qp[0].rate_gbps"),
        "{e}"
    );
    assert!(e.message.contains("negative"), "{e}");

    let e = err(&format!("{BASE}count = 0\n"));
    assert_eq!((e.line, e.key.as_str()), (Some(11), "qp[0].count"), "{e}");

    let e = err(&format!("{BASE}[params]\nwindow_packets = 0\n"));
    assert_eq!(
        (e.line, e.key.as_str()),
        (Some(12), "params.window_packets"),
        "{e}"
    );

    let e = err(&format!("{BASE}count = 5\n[params]\nqp_table_size = 4\n"));
    assert_eq!(e.key, "qp[0].count", "{e}");
    assert!(e.message.contains("state table"), "{e}");

    let e = err(&format!(
        "{BASE}[params]\nlink_gbps = 25\ndcqcn_min_rate_gbps = 40\n"
    ));
    assert!(e.key.contains("dcqcn_min_rate_gbps"), "{e}");
    assert!(e.message.contains("link_gbps"), "{e}");

    let e = err(&format!("{BASE}[params]\ndcqcn_enabled = 2\n"));
    assert_eq!(e.key, "params.dcqcn_enabled", "{e}");

    let e = err(&format!("{BASE}[params]\nhbm_fetch = 1\n"));
    assert!(e.message.contains("hbm_fetch_ns"), "lists valid names: {e}");

    let e = err(
        "[[node]]\nname = \"a\"\nkind = \"balboa\"\n[[node]]\nname = \"b\"\nkind = \"balboa\"\n",
    );
    assert!(e.message.contains("0 QPs"), "{e}");

    let e = err(&format!(
        "{BASE}[[fault]]\nkind = \"loss\"\nnode = \"c\"\nprobability = 0.1\n"
    ));
    assert_eq!((e.line, e.key.as_str()), (Some(13), "fault[0].node"), "{e}");
}

#[test]
fn set_overrides_parameters_by_name() {
    let mut sc = Scenario::builtin("default").expect("shipped");
    sc.set("hbm_fetch_ns", "3464").expect("valid");
    assert_eq!(sc.params.hbm_fetch_ns, 3464);
    sc.set("window_packets", "32").expect("valid");
    sc.set("link_gbps", "200").expect("valid");
    let e = sc.set("no_such", "1").expect_err("unknown");
    for name in Params::names() {
        assert!(e.to_string().contains(name));
    }
    assert!(
        sc.set("qp_table_size", "2").is_err(),
        "4 QPs do not fit a table of 2"
    );
    assert!(
        Params::list()
            .iter()
            .any(|p| p.name == "hbm_fetch_ns" && p.unit == "ns" && p.default == "1732")
    );
}

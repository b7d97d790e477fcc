//! Tables out and back: exports read back with polars (and serde for JSON
//! lines) carry the store's rows and the analysis's figures; SQL answers
//! agree with the analysis; partitions, spooling and bad SQL.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use polars::prelude::*;
use rocescope_data::{
    DataError, ExportOptions, PacketBatches, QueryOptions, Rows, Source, Table, export, query,
    query_parquet_tables,
};
use rocescope_decoders::DecodeConfig;
use rocescope_decoders::analysis::Report;
use rocescope_replay::store::{Flags, RcAnalyzer, Store};
use rocescope_replay::{PcapngWriter, Record};
use rocescope_sim::{Scenario, Simulator};

fn out_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("data")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/captures/sample-write-read.pcap")
}

/// A scenario recorded to pcapng, as `rocescope sim --record` writes it.
fn record(name: &str, duration_ns: u64, dir: &Path) -> PathBuf {
    let mut sc = Scenario::builtin(name).unwrap();
    sc.duration_ns = sc.duration_ns.min(duration_ns);
    let path = dir.join(format!("{name}.pcapng"));
    let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut w = PcapngWriter::new(file).unwrap();
    let mut sim = Simulator::new(sc);
    sim.run(&mut |rec: Record| w.write_record(&rec).unwrap());
    w.finish().unwrap();
    path
}

struct Opened {
    store: Arc<Store>,
    report: Report,
}

impl Opened {
    fn open(path: &Path) -> Opened {
        let analysis = RcAnalyzer::default();
        let store = Store::open(path, DecodeConfig::default(), Box::new(analysis.clone())).unwrap();
        store.wait();
        let report = analysis.0.lock().unwrap().report();
        Opened { store, report }
    }
    fn source(&self) -> Source<'_> {
        Source {
            store: &self.store,
            report: &self.report,
            capture: "test",
        }
    }
}

fn read_parquet(path: &Path) -> DataFrame {
    ParquetReader::new(std::fs::File::open(path).unwrap())
        .finish()
        .unwrap()
}

fn read_csv(path: &Path) -> DataFrame {
    CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(None)
        .try_into_reader_with_file_path(Some(path.to_path_buf()))
        .unwrap()
        .finish()
        .unwrap()
}

fn u64s(df: &DataFrame, name: &str) -> Vec<Option<u64>> {
    let c = df.column(name).unwrap().cast(&DataType::UInt64).unwrap();
    c.u64().unwrap().iter().collect()
}

fn bools(df: &DataFrame, name: &str) -> Vec<bool> {
    let c = df.column(name).unwrap();
    c.bool().unwrap().iter().map(|b| b.unwrap()).collect()
}

/// The packets table as the store holds it.
fn check_packets_match_store(df: &DataFrame, store: &Store) {
    let n = store.len();
    assert_eq!(df.height() as u64, n);
    let mut rows = Vec::new();
    store.rows(0..n, &mut rows);
    let frames = u64s(df, "frame");
    let ts = u64s(df, "ts_ns");
    let psn = u64s(df, "psn");
    let len = u64s(df, "len_bytes");
    let retx = bools(df, "retransmission");
    let nak = bools(df, "nak");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(frames[i], Some(i as u64 + 1));
        assert_eq!(ts[i], Some(r.ts_ns), "frame {}", i + 1);
        assert_eq!(len[i], Some(u64::from(r.origlen)));
        let roce = r.flags.contains(Flags::ROCE);
        assert_eq!(psn[i], roce.then_some(u64::from(r.psn)), "frame {}", i + 1);
        assert_eq!(retx[i], r.flags.contains(Flags::RETRANSMISSION));
        assert_eq!(nak[i], r.flags.contains(Flags::NAK));
    }
}

#[test]
fn packets_round_trip_through_parquet_csv_and_json_lines() {
    let dir = out_dir("roundtrip");
    let cap = record("lossy-link", 2_000_000, &dir);
    let o = Opened::open(&cap);
    assert!(o.store.len() > 1000, "{}", o.store.len());
    let retx: u64 = o
        .report
        .qps
        .iter()
        .map(|q| q.counters.retransmitted_packets)
        .sum();
    assert!(retx > 0, "lossy-link should retransmit");

    let pq = dir.join("p.parquet");
    let s = export(&o.source(), Table::Packets, &pq, &ExportOptions::default()).unwrap();
    assert_eq!(s.rows, o.store.len());
    assert!(!dir.join("p.parquet.partial").exists());
    let df = read_parquet(&pq);
    check_packets_match_store(&df, &o.store);
    // Every column, value and null as the in-memory table has it (the
    // Parquet pages are rocescope's own encoding).
    let mem = PacketBatches::new(&o.store, 4096)
        .collect(0..o.store.len())
        .unwrap();
    assert_eq!(df.schema(), mem.schema());
    assert!(df.equals_missing(&mem), "parquet {df:?}\nin memory {mem:?}");
    // Typed columns, not strings.
    assert_eq!(df.column("psn").unwrap().dtype(), &DataType::UInt32);
    assert_eq!(df.column("opcode").unwrap().dtype(), &DataType::UInt8);
    assert_eq!(
        df.column("retransmission").unwrap().dtype(),
        &DataType::Boolean
    );

    let csv = dir.join("p.csv");
    export(&o.source(), Table::Packets, &csv, &ExportOptions::default()).unwrap();
    check_packets_match_store(&read_csv(&csv), &o.store);

    let jsonl = dir.join("p.jsonl");
    export(
        &o.source(),
        Table::Packets,
        &jsonl,
        &ExportOptions::default(),
    )
    .unwrap();
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, o.store.len());
    let retx_json = lines
        .iter()
        .filter(|v| v["retransmission"] == serde_json::Value::Bool(true))
        .count() as u64;
    assert_eq!(retx_json, retx);
    assert_eq!(lines[0]["frame"], 1);
}

#[test]
fn every_table_exports_and_reads_back_with_its_row_count() {
    let dir = out_dir("tables");
    let cap = record("dpi-drop", 1_000_000, &dir);
    let o = Opened::open(&cap);
    for table in Table::ALL {
        let path = dir.join(format!("{table}.parquet"));
        let s = export(&o.source(), table, &path, &ExportOptions::default()).unwrap();
        let df = read_parquet(&path);
        assert_eq!(df.height() as u64, s.rows, "{table}");
        let expected = match table {
            Table::Packets => o.store.len(),
            Table::Qps => o.report.qps.len() as u64,
            Table::Episodes => o.report.episodes.len() as u64,
            Table::Findings => o.report.findings.len() as u64,
            Table::Profiler => o
                .store
                .records_where(|r| matches!(r, Record::Profiler(_)))
                .len() as u64,
            Table::Slots => o
                .store
                .records_where(|r| matches!(r, Record::Slot(_)))
                .len() as u64,
        };
        assert_eq!(s.rows, expected, "{table}");
    }
    // The DPI scenario drops WRITEs in its slot.
    let slots = read_parquet(&dir.join("slots.parquet"));
    assert!(slots.height() > 0);
    let drops = slots
        .column("verdict")
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .filter(|v| *v == Some("drop"))
        .count();
    assert!(drops > 0, "no DPI drops in the slots table");
}

#[test]
fn an_empty_table_is_a_valid_file_with_its_columns() {
    let dir = out_dir("empty");
    let o = Opened::open(&sample());
    let path = dir.join("slots.parquet");
    let s = export(&o.source(), Table::Slots, &path, &ExportOptions::default()).unwrap();
    assert_eq!(s.rows, 0);
    let df = read_parquet(&path);
    assert_eq!(df.height(), 0);
    assert!(df.column("verdict").is_ok());
    assert!(df.column("ts_ns").is_ok());
}

#[test]
fn sql_answers_agree_with_the_analysis() {
    let dir = out_dir("sql");
    let cap = record("lossy-link", 2_000_000, &dir);
    let o = Opened::open(&cap);
    let src = o.source();
    let opts = QueryOptions::default();

    // Retransmitted packets per QP, from the packets' flags...
    let df = query(
        &src,
        "SELECT dest_qp, src_ip, count(*) AS n FROM packets WHERE retransmission \
         GROUP BY dest_qp, src_ip ORDER BY dest_qp",
        &opts,
    )
    .unwrap();
    let mut from_sql: Vec<(u64, String, u64)> = (0..df.height())
        .map(|i| {
            (
                u64s(&df, "dest_qp")[i].unwrap(),
                df.column("src_ip")
                    .unwrap()
                    .str()
                    .unwrap()
                    .get(i)
                    .unwrap()
                    .to_owned(),
                u64s(&df, "n")[i].unwrap(),
            )
        })
        .collect();
    from_sql.sort();
    // ...and from the analysis's counters.
    let qps = rocescope_data::qps(&o.report).unwrap();
    let mut from_analysis: Vec<(u64, String, u64)> = (0..qps.height())
        .filter(|&i| u64s(&qps, "retransmitted_packets")[i].unwrap() > 0)
        .map(|i| {
            (
                u64s(&qps, "dest_qp")[i].unwrap(),
                qps.column("src_ip")
                    .unwrap()
                    .str()
                    .unwrap()
                    .get(i)
                    .unwrap()
                    .to_owned(),
                u64s(&qps, "retransmitted_packets")[i].unwrap(),
            )
        })
        .collect();
    from_analysis.sort();
    assert!(!from_sql.is_empty());
    assert_eq!(from_sql, from_analysis);

    // Episodes and the NAKs the analysis counted.
    let df = query(&src, "SELECT count(*) AS n FROM episodes", &opts).unwrap();
    assert_eq!(u64s(&df, "n")[0], Some(o.report.episodes.len() as u64));
    let df = query(
        &src,
        "SELECT count(*) AS n FROM packets WHERE aeth_kind = 'psn_seq_err'",
        &opts,
    )
    .unwrap();
    assert_eq!(u64s(&df, "n")[0], Some(o.report.counters.packet_seq_err));

    // A join: episodes with their QP's addresses.
    let df = query(
        &src,
        "SELECT e.first_frame, q.src_ip FROM episodes e JOIN qps q ON e.qp = q.qp",
        &opts,
    )
    .unwrap();
    assert_eq!(df.height(), o.report.episodes.len());
}

#[test]
fn the_spooled_packets_table_answers_like_the_in_memory_one() {
    let dir = out_dir("spool");
    let cap = record("default", 500_000, &dir);
    let o = Opened::open(&cap);
    let sql = "SELECT opcode_name, count(*) AS n, sum(len_bytes) AS bytes FROM packets \
               GROUP BY opcode_name ORDER BY opcode_name";
    let mem = query(&o.source(), sql, &QueryOptions::default()).unwrap();
    let spooled = query(
        &o.source(),
        sql,
        &QueryOptions {
            in_memory_rows: 0,
            spool_dir: Some(dir.clone()),
        },
    )
    .unwrap();
    assert!(mem.height() > 1);
    assert!(mem.equals(&spooled), "{mem:?}\n{spooled:?}");
    // The spool is gone.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("rocescope-query")
        })
        .collect();
    assert!(left.is_empty());
}

#[test]
fn bad_sql_is_the_engines_error_not_a_panic() {
    let o = Opened::open(&sample());
    for sql in [
        "SELEC * FROM packets",
        "SELECT * FROM no_such_table",
        "SELECT no_such_column FROM packets",
        "SELECT sum(src_ip + 1) FROM packets",
        "",
    ] {
        match query(&o.source(), sql, &QueryOptions::default()) {
            Err(DataError::Polars(e)) => assert!(!e.to_string().is_empty(), "{sql}"),
            other => panic!("{sql:?}: {other:?}"),
        }
    }
}

#[test]
fn partitions_are_hive_folders_that_query_back_together() {
    let dir = out_dir("partition");
    let cap = record("default", 1_000_000, &dir);
    let o = Opened::open(&cap);
    let root = dir.join("out");
    let opts = ExportOptions {
        partition_window_ns: Some(100_000),
        ..ExportOptions::default()
    };
    let s = export(&o.source(), Table::Packets, &root, &opts).unwrap();
    assert!(s.files.len() >= 5, "{} files", s.files.len());
    for f in &s.files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            rel.starts_with("packets/capture=test/window_start_ns="),
            "{rel}"
        );
    }
    // Two captures side by side, as a fleet would have them.
    let other = Source {
        capture: "other",
        ..o.source()
    };
    export(&other, Table::Packets, &root, &opts).unwrap();
    export(&o.source(), Table::Qps, &root, &opts).unwrap();
    let df = query_parquet_tables(
        &[("packets", root.join("packets")), ("qps", root.join("qps"))],
        "SELECT capture, count(*) AS n, min(window_start_ns) AS w FROM packets \
         GROUP BY capture ORDER BY capture",
    )
    .unwrap();
    assert_eq!(df.height(), 2);
    assert_eq!(u64s(&df, "n"), vec![Some(o.store.len()); 2]);
    let first_window = o.store.row(0).unwrap().ts_ns / 100_000 * 100_000;
    assert_eq!(u64s(&df, "w")[0], Some(first_window));
    // Every window's rows fall inside it.
    let df = query_parquet_tables(
        &[("packets", root.join("packets"))],
        "SELECT count(*) AS n FROM packets \
         WHERE ts_ns < window_start_ns OR ts_ns >= window_start_ns + 100000",
    )
    .unwrap();
    assert_eq!(u64s(&df, "n"), vec![Some(0)]);
}

#[test]
fn a_selection_of_rows_exports_only_those_rows() {
    let dir = out_dir("selection");
    let o = Opened::open(&sample());
    let path = dir.join("sel.csv");
    let picks = vec![1, 2, 3, 7, 10];
    let opts = ExportOptions {
        rows: Rows::Indices(picks.clone()),
        ..ExportOptions::default()
    };
    let s = export(&o.source(), Table::Packets, &path, &opts).unwrap();
    assert_eq!(s.rows, picks.len() as u64);
    let df = read_csv(&path);
    let frames: Vec<u64> = u64s(&df, "frame").into_iter().map(|f| f.unwrap()).collect();
    assert_eq!(frames, picks.iter().map(|i| i + 1).collect::<Vec<_>>());
    let opts = ExportOptions {
        rows: Rows::Range(4..9),
        ..ExportOptions::default()
    };
    let s = export(&o.source(), Table::Packets, &path, &opts).unwrap();
    assert_eq!(s.rows, 5);
}

#[test]
fn output_errors_name_the_path() {
    let o = Opened::open(&sample());
    let e = export(
        &o.source(),
        Table::Packets,
        Path::new("/nonexistent-dir/x.parquet"),
        &ExportOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("/nonexistent-dir/x.parquet"), "{e}");
    let e = export(
        &o.source(),
        Table::Packets,
        Path::new("x.xlsx"),
        &ExportOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, DataError::UnknownFormat { .. }), "{e}");
    let e = export(
        &o.source(),
        Table::Packets,
        Path::new("x.csv"),
        &ExportOptions {
            partition_window_ns: Some(1),
            ..ExportOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, DataError::PartitionNeedsParquet { .. }), "{e}");
}

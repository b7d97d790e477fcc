//! Tables out and back: exports read back with rocescope's Parquet scan, an
//! independent CSV reader and serde (JSON lines) carry the store's rows and the analysis's figures; SQL answers
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
use rocescope_decoders::analysis::{AnalysisConfig, Report};
use rocescope_replay::store::{Flags, RcAnalyzer, Store};
use rocescope_replay::{PcapngWriter, Record};
use rocescope_sim::{Scenario, Simulator};

fn out_dir(name: &str) -> PathBuf {
    rocescope_testkit::out_dir("data", name)
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/captures/sample-write-read.pcap")
}

/// Scenario `name` recorded for at most `duration_ns` into the test's own
/// output folder `test`, and indexed: the folder and the index.
fn recorded(test: &str, name: &str, duration_ns: u64) -> (PathBuf, Opened) {
    let dir = out_dir(test);
    let o = Opened::open(&record(name, duration_ns, &dir));
    (dir, o)
}

/// A scenario recorded to pcapng, as `rocescope sim --record` writes it.
fn record(name: &str, duration_ns: u64, dir: &Path) -> PathBuf {
    let mut sc = Scenario::builtin(name).unwrap();
    sc.duration_ns = sc.duration_ns.min(duration_ns);
    let path = dir.join(format!("{name}.pcapng"));
    Simulator::new(sc).record_to(&path).unwrap();
    path
}

struct Opened {
    store: Arc<Store>,
    report: Report,
}

impl Opened {
    fn open(path: &Path) -> Opened {
        Opened::open_with(path, AnalysisConfig::default())
    }
    fn open_with(path: &Path, config: AnalysisConfig) -> Opened {
        let analysis = RcAnalyzer::with_config(config);
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
            extra_profiler: &[],
            points: None,
        }
    }
}

fn read_parquet(path: &Path) -> DataFrame {
    rocescope_data::read_parquet(path).unwrap()
}

/// A CSV file as a frame, read by an independent CSV reader: a column of
/// integers (or empty cells, null) is Int64, of `true`/`false` Boolean,
/// else String.
fn read_csv(path: &Path) -> DataFrame {
    let mut r = csv::Reader::from_path(path).unwrap();
    let names: Vec<String> = r.headers().unwrap().iter().map(str::to_owned).collect();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    let columns = names
        .iter()
        .enumerate()
        .map(|(j, name)| {
            let cells: Vec<&str> = rows.iter().map(|r| &r[j]).collect();
            let name = PlSmallStr::from(name.as_str());
            if cells
                .iter()
                .all(|c| c.is_empty() || c.parse::<i64>().is_ok())
            {
                let v: Vec<Option<i64>> = cells.iter().map(|c| c.parse().ok()).collect();
                Column::new(name, v)
            } else if cells.iter().all(|c| matches!(*c, "" | "true" | "false")) {
                let v: Vec<Option<bool>> = cells.iter().map(|c| c.parse().ok()).collect();
                Column::new(name, v)
            } else {
                Column::new(name, cells)
            }
        })
        .collect();
    DataFrame::new_infer_height(columns).unwrap()
}

fn u64s(df: &DataFrame, name: &str) -> Vec<Option<u64>> {
    let c = df.column(name).unwrap().cast(&DataType::UInt64).unwrap();
    c.u64().unwrap().iter().collect()
}

fn strs(df: &DataFrame, name: &str) -> Vec<Option<String>> {
    let c = df.column(name).unwrap();
    c.str()
        .unwrap()
        .iter()
        .map(|s| s.map(str::to_owned))
        .collect()
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
    let (dir, o) = recorded("roundtrip", "lossy-link", 2_000_000);
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
    // Many row groups, built on several threads: the same table, in order.
    let small = dir.join("small-batches.parquet");
    let opts = ExportOptions {
        batch_rows: Some(97),
        ..ExportOptions::default()
    };
    export(&o.source(), Table::Packets, &small, &opts).unwrap();
    assert!(read_parquet(&small).equals_missing(&mem));
    // Typed columns, not strings.
    assert_eq!(df.column("psn").unwrap().dtype(), &DataType::Int32);
    assert_eq!(df.column("opcode").unwrap().dtype(), &DataType::Int16);
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
    let (dir, o) = recorded("tables", "dpi-drop", 1_000_000);
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
            Table::QpStates => o.report.qps.iter().map(|q| q.states.len() as u64).sum(),
            // A session of capture points' only: empty for one capture.
            Table::Losses | Table::Paths => 0,
        };
        assert_eq!(s.rows, expected, "{table}");
    }
    // The runs of each QP tile its span: in order, each ending where the
    // next starts, summing to its time by state.
    let runs = read_parquet(&dir.join("qp_states.parquet"));
    assert!(runs.height() > 0);
    let col = |n: &str| runs.column(n).unwrap().i64().unwrap().clone();
    let (start, end) = (col("start_ns"), col("end_ns"));
    let qp = runs.column("qp").unwrap().i32().unwrap().clone();
    for (i, q) in o.report.qps.iter().enumerate() {
        let mine: Vec<(i64, i64)> = (0..runs.height())
            .filter(|&k| qp.get(k) == Some(i as i32))
            .map(|k| (start.get(k).unwrap(), end.get(k).unwrap()))
            .collect();
        for w in mine.windows(2) {
            assert_eq!(w[0].1, w[1].0, "QP {i}: runs tile its span");
        }
        let total: i64 = mine.iter().map(|(a, b)| b - a).sum();
        assert_eq!(
            total as u64,
            q.states.totals_ns.iter().sum::<u64>(),
            "QP {i}"
        );
    }
    // The DPI scenario drops WRITEs in its slot.
    let slots = read_parquet(&dir.join("slots.parquet"));
    assert!(slots.height() > 0);
    let drops = strs(&slots, "verdict")
        .iter()
        .filter(|v| v.as_deref() == Some("drop"))
        .count();
    assert!(drops > 0, "no DPI drops in the slots table");
}

/// The tables that do not read the QPs' time by state are byte for byte
/// the same without it, so that the commands asking only for them index
/// without its cost (`export`'s packets, `query` naming none of qps,
/// qp_states, findings); those that read it do change.
#[test]
fn tables_that_do_not_read_time_by_state_are_the_same_without_it() {
    let dir = out_dir("without-states");
    for name in ["lossy-link", "dpi-drop", "pfc", "rnr"] {
        let path = record(name, 2_000_000, &dir);
        let with = Opened::open(&path);
        let without = Opened::open_with(
            &path,
            AnalysisConfig {
                time_by_state: false,
                ..AnalysisConfig::default()
            },
        );
        let csv = |o: &Opened, table: Table, tag: &str| {
            let to = dir.join(format!("{name}-{table}-{tag}.csv"));
            let opts = ExportOptions {
                format: Some(rocescope_data::Format::Csv),
                ..ExportOptions::default()
            };
            export(&o.source(), table, &to, &opts).unwrap();
            std::fs::read(&to).unwrap()
        };
        for table in Table::ALL.into_iter().filter(|t| !t.of_points()) {
            let (a, b) = (csv(&with, table, "with"), csv(&without, table, "without"));
            if table.reads_time_by_state() {
                if table != Table::Findings {
                    assert_ne!(a, b, "{name}: {table} reads the time by state");
                }
            } else {
                assert!(a == b, "{name}: {table} differs without the time by state");
            }
        }
    }
    let named: Vec<Table> =
        Table::named_in("SELECT q.qp FROM qps q JOIN packets p ON 1=1").collect();
    assert_eq!(named, [Table::Packets, Table::Qps]);
    assert!(!Table::named_in("SELECT count(*) FROM packets").any(Table::reads_time_by_state));
    assert!(Table::named_in("select * from QP_STATES").any(Table::reads_time_by_state));
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
    let (_, o) = recorded("sql", "lossy-link", 2_000_000);
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
    // (DestQP, source, count) of each QP whose `count` is not 0, in order.
    let by_qp = |df: &DataFrame, count: &str| {
        let (qp, ip, n) = (u64s(df, "dest_qp"), strs(df, "src_ip"), u64s(df, count));
        let mut rows: Vec<(u64, String, u64)> = (0..df.height())
            .filter(|&i| n[i].unwrap() > 0)
            .map(|i| (qp[i].unwrap(), ip[i].clone().unwrap(), n[i].unwrap()))
            .collect();
        rows.sort();
        rows
    };
    let from_sql = by_qp(&df, "n");
    // ...and from the analysis's counters.
    let qps = rocescope_data::qps(&o.report).unwrap();
    let from_analysis = by_qp(&qps, "retransmitted_packets");
    assert!(!from_sql.is_empty());
    assert_eq!(from_sql, from_analysis);

    // Computed columns are named as written (polars says `len` and `psn`);
    // columns and aliases keep their names.
    let df = query(
        &src,
        "SELECT count(*), max(psn), dest_qp, min(psn) AS first FROM packets GROUP BY dest_qp",
        &opts,
    )
    .unwrap();
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    assert_eq!(names, ["count(*)", "max(psn)", "dest_qp", "first"]);

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

/// The qps table gives each QP's fatal NAK and its state when the capture
/// ends, as `stats` does: the DPI slot's Invalid Request NAK is on record,
/// but the simulated BALBOA requester goes on (its later WRITEs are
/// ACKed), so it does not end in the error state.
#[test]
fn the_qps_table_says_which_qp_ended_in_error_and_why() {
    let (_, o) = recorded("qp_state", "dpi-drop", 2_000_000);
    let df = query(
        &o.source(),
        "SELECT dest_qp, state_at_end, error_reason, window_packets FROM qps \
         WHERE error_reason IS NOT NULL",
        &QueryOptions::default(),
    )
    .unwrap();
    let in_error: Vec<_> = o.report.qps.iter().filter(|q| q.error.is_some()).collect();
    assert!(!in_error.is_empty(), "dpi-drop NAKs a QP's WRITE as fatal");
    assert_eq!(df.height(), in_error.len());
    let reasons = df.column("error_reason").unwrap().str().unwrap();
    assert_eq!(reasons.get(0), Some("nak_invalid_request"));
    let states = df.column("state_at_end").unwrap().str().unwrap();
    assert!(
        states.get(0).is_some_and(|s| s != "error"),
        "it went on: {:?}",
        states.get(0)
    );
    assert_eq!(
        u64s(&df, "window_packets")[0],
        Some(u64::from(in_error[0].window_packets))
    );
}

#[test]
fn the_spooled_packets_table_answers_like_the_in_memory_one() {
    let (dir, o) = recorded("spool", "default", 500_000);
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
    let (dir, o) = recorded("partition", "default", 1_000_000);
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
        rocescope_testkit::assert_starts_with(&rel, "packets/capture=test/window_start_ns=");
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

/// A filter on time or capture reads only the row groups and partitions
/// that can hold its rows, and answers as the in-memory table does.
#[test]
fn a_filtered_scan_skips_what_its_statistics_rule_out() {
    let (dir, o) = recorded("skip", "default", 1_000_000);
    let n = o.store.len();
    let last_ts = o.store.row(n - 1).unwrap().ts_ns;
    let pq = dir.join("p.parquet");
    // Row groups of 1,000 rows: the late ones are past the filter's time.
    let opts = ExportOptions {
        batch_rows: Some(1000),
        ..ExportOptions::default()
    };
    export(&o.source(), Table::Packets, &pq, &opts).unwrap();
    let cut = o.store.row(n * 3 / 4).unwrap().ts_ns;
    let sql = format!(
        "SELECT count(*) AS n, sum(len_bytes) AS bytes, max(ts_ns) AS last FROM packets \
         WHERE ts_ns >= {cut}"
    );
    let table = rocescope_data::ParquetTable::open(&pq).unwrap();
    let mut ctx = polars::sql::SQLContext::new();
    ctx.register("packets", table.lazy().unwrap());
    let got = ctx.execute(&sql).unwrap().collect().unwrap();
    let want = query(&o.source(), &sql, &QueryOptions::default()).unwrap();
    assert!(got.equals(&want), "{got:?}\n{want:?}");
    assert_eq!(u64s(&got, "last"), vec![Some(last_ts)]);
    let t = table.tally();
    let groups = n.div_ceil(1000);
    assert_eq!(t.row_groups_read + t.row_groups_skipped, groups);
    // About three quarters of the groups end before the cut.
    assert!(t.row_groups_skipped >= groups * 2 / 3, "{t:?} of {groups}");
    // A sort and limit hands the scan a bound of its own (a top-k's dynamic
    // filter, which polars cannot plan twice): answered, not a panic.
    let top = "SELECT frame, ts_ns FROM packets ORDER BY ts_ns DESC, frame DESC LIMIT 3";
    let got = ctx.execute(top).unwrap().collect().unwrap();
    let want = query(&o.source(), top, &QueryOptions::default()).unwrap();
    assert!(got.equals(&want), "{got:?}\n{want:?}");
    assert_eq!(u64s(&got, "frame")[0], Some(n));

    // A fleet of two captures: a filter on one opens none of the other's
    // files.
    let root = dir.join("fleet");
    let part = ExportOptions {
        partition_window_ns: Some(100_000),
        ..ExportOptions::default()
    };
    let s = export(&o.source(), Table::Packets, &root, &part).unwrap();
    let other = Source {
        capture: "other",
        ..o.source()
    };
    export(&other, Table::Packets, &root, &part).unwrap();
    let table = rocescope_data::ParquetTable::open(&root.join("packets")).unwrap();
    let mut ctx = polars::sql::SQLContext::new();
    ctx.register("packets", table.lazy().unwrap());
    let df = ctx
        .execute("SELECT count(*) AS n FROM packets WHERE capture = 'other'")
        .unwrap()
        .collect()
        .unwrap();
    assert_eq!(u64s(&df, "n"), vec![Some(n)]);
    assert_eq!(table.tally().files_skipped, s.files.len() as u64);
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
    // Small batches are built on several threads and written in order.
    let opts = ExportOptions {
        rows: Rows::Indices(picks.clone()),
        batch_rows: Some(2),
        ..ExportOptions::default()
    };
    let pq = dir.join("sel.parquet");
    let s = export(&o.source(), Table::Packets, &pq, &opts).unwrap();
    assert_eq!(s.rows, picks.len() as u64);
    let frames: Vec<u64> = u64s(&read_parquet(&pq), "frame")
        .into_iter()
        .map(|f| f.unwrap())
        .collect();
    assert_eq!(frames, picks.iter().map(|i| i + 1).collect::<Vec<_>>());
}

#[test]
fn output_errors_name_the_path() {
    let o = Opened::open(&sample());
    let fails = |path: &str, opts: &ExportOptions| {
        export(&o.source(), Table::Packets, Path::new(path), opts).unwrap_err()
    };
    let e = fails("/nonexistent-dir/x.parquet", &ExportOptions::default());
    assert!(e.to_string().contains("/nonexistent-dir/x.parquet"), "{e}");
    let e = fails("x.xlsx", &ExportOptions::default());
    assert!(matches!(e, DataError::UnknownFormat { .. }), "{e}");
    let partitioned = ExportOptions {
        partition_window_ns: Some(1),
        ..ExportOptions::default()
    };
    let e = fails("x.csv", &partitioned);
    assert!(matches!(e, DataError::PartitionNeedsParquet { .. }), "{e}");
}

/// A second reader: pyarrow (Apache Arrow's C++ Parquet reader) reads the
/// packets table's pages, which rocescope encodes itself, to the same
/// values, and finds each row group's statistics true to its data.
const PYARROW_CHECK: &str = r#"
import json, sys
import pyarrow as pa, pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
t = f.read()
out = {"rows": t.num_rows, "row_groups": f.num_row_groups, "columns": {}, "bad_stats": [],
       "encodings": {}}
for name in t.column_names:
    c = t.column(name)
    vals = [v for v in c.to_pylist() if v is not None]
    d = {"nulls": c.null_count}
    out.setdefault("types", {})[name] = str(f.schema_arrow.field(name).type)
    if pa.types.is_boolean(c.type):
        d["trues"] = sum(1 for v in vals if v)
    elif pa.types.is_integer(c.type):
        d["sum"] = str(sum(vals))
    else:
        d["distinct"] = sorted(set(vals))
    out["columns"][name] = d
md = f.metadata
for rg in range(md.num_row_groups):
    tbl = f.read_row_group(rg)
    for i in range(md.num_columns):
        col = md.row_group(rg).column(i)
        name = col.path_in_schema
        out["encodings"].setdefault(name, sorted(col.encodings))
        data = [v for v in tbl.column(name).to_pylist() if v is not None]
        st = col.statistics
        if st is None or st.null_count != tbl.column(name).null_count:
            out["bad_stats"].append(f"{rg}:{name}: null count")
        elif data and (not st.has_min_max or st.min != min(data) or st.max != max(data)):
            out["bad_stats"].append(f"{rg}:{name}: {st.min}..{st.max} vs {min(data)}..{max(data)}")
print(json.dumps(out))
"#;

/// The same summary of a polars frame.
fn summary(df: &DataFrame) -> serde_json::Value {
    let mut cols = serde_json::Map::new();
    for c in df.columns() {
        let mut d = serde_json::Map::new();
        d.insert("nulls".into(), c.null_count().into());
        match c.dtype() {
            DataType::Boolean => {
                let trues = c
                    .bool()
                    .unwrap()
                    .iter()
                    .filter(|v| *v == Some(true))
                    .count();
                d.insert("trues".into(), trues.into());
            }
            DataType::String => {
                let mut v: Vec<String> = c
                    .str()
                    .unwrap()
                    .iter()
                    .flatten()
                    .map(str::to_owned)
                    .collect();
                v.sort();
                v.dedup();
                d.insert("distinct".into(), v.into());
            }
            _ => {
                let s = c.cast(&DataType::Int64).unwrap();
                let sum: i128 = s.i64().unwrap().iter().flatten().map(i128::from).sum();
                d.insert("sum".into(), sum.to_string().into());
            }
        }
        cols.insert(c.name().to_string(), d.into());
    }
    cols.into()
}

/// python3 with pyarrow, or a skip (an error where CI requires it).
fn have_pyarrow() -> bool {
    rocescope_testkit::available(&[rocescope_testkit::PYARROW])
}

/// Run a python3 `script` with `args`; its standard output.
fn python3(script: &str, args: &[&Path]) -> Vec<u8> {
    let out = rocescope_testkit::run_ok(
        std::process::Command::new("python3")
            .args(["-c", script])
            .args(args),
    );
    out.stdout
}

/// Parquet from another writer: read back when Snappy-compressed, an error
/// naming the file, the column and the codec when compressed otherwise.
#[test]
fn parquet_from_pyarrow_reads_back_or_names_its_codec() {
    if !have_pyarrow() {
        return;
    }
    let dir = out_dir("codecs");
    let script = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                  t = pa.table({'qpn': [7, 8, 9], 'note': ['a', None, 'c']})\n\
                  pq.write_table(t, sys.argv[1], compression='snappy')\n\
                  pq.write_table(t, sys.argv[2], compression='zstd')\n";
    let (snappy, zstd) = (dir.join("snappy.parquet"), dir.join("zstd.parquet"));
    python3(script, &[&snappy, &zstd]);
    let df = rocescope_data::read_parquet(&snappy).unwrap();
    assert_eq!(u64s(&df, "qpn"), vec![Some(7), Some(8), Some(9)]);
    let notes: Vec<Option<&str>> = df.column("note").unwrap().str().unwrap().iter().collect();
    assert_eq!(notes, vec![Some("a"), None, Some("c")]);
    let e = rocescope_data::read_parquet(&zstd).unwrap_err().to_string();
    assert!(
        e.contains("zstd.parquet") && e.contains("column qpn") && e.contains("Zstd"),
        "{e}"
    );
}

#[test]
fn pyarrow_reads_the_packets_table_as_polars_does() {
    if !have_pyarrow() {
        return;
    }
    let (dir, o) = recorded("pyarrow", "lossy-link", 2_000_000);
    let pq = dir.join("p.parquet");
    let opts = ExportOptions {
        // Several row groups, each with its own dictionaries and statistics.
        batch_rows: Some(500),
        ..ExportOptions::default()
    };
    export(&o.source(), Table::Packets, &pq, &opts).unwrap();
    let got: serde_json::Value = serde_json::from_slice(&python3(PYARROW_CHECK, &[&pq])).unwrap();
    let n = o.store.len();
    assert_eq!(got["rows"], n);
    assert_eq!(got["row_groups"], n.div_ceil(500));
    assert_eq!(got["bad_stats"], serde_json::json!([]));
    let encodings = |col: &str| got["encodings"][col].as_array().unwrap().clone();
    assert!(encodings("frame").contains(&"DELTA_BINARY_PACKED".into()));
    assert!(encodings("src_ip").contains(&"RLE_DICTIONARY".into()));
    assert!(encodings("port").contains(&"RLE_DICTIONARY".into()));
    // Signed integers (Spark has no unsigned types), as the SCHEMA says.
    let ty = |col: &str| got["types"][col].as_str().unwrap().to_owned();
    let types = got["types"].as_object().unwrap();
    assert!(
        types
            .values()
            .all(|t| !t.as_str().unwrap().starts_with("uint")),
        "{types:?}"
    );
    assert_eq!(ty("ts_ns"), "int64");
    assert_eq!(ty("psn"), "int32");
    assert_eq!(ty("opcode"), "int16");
    assert_eq!(ty("reth_rkey"), "int64");
    assert_eq!(ty("retransmission"), "bool");
    assert!(ty("src_ip").starts_with("string"));
    let mem = PacketBatches::new(&o.store, 4096).collect(0..n).unwrap();
    let want = summary(&mem);
    for (name, w) in want.as_object().unwrap() {
        assert_eq!(&got["columns"][name], w, "column {name}");
    }
    assert_eq!(got["columns"].as_object().unwrap().len(), mem.width());
}

/// The header columns of every row, as the decoder reads the frame.
fn check_header_columns_match_the_decoder(path: &Path) {
    use rocescope_decoders::{IpHeader, decode};
    let o = Opened::open(path);
    let n = o.store.len();
    let df = PacketBatches::new(&o.store, 97).collect(0..n).unwrap();
    assert_eq!(df.height() as u64, n);
    let col = |name: &str| u64s(&df, name);
    let (va, rkey, dma) = (col("reth_va"), col("reth_rkey"), col("reth_dma_len_bytes"));
    let (msn, immdt, payload) = (col("aeth_msn"), col("immdt"), col("payload_bytes"));
    let (sport, pkey, dscp) = (col("udp_src_port"), col("pkey"), col("dscp"));
    let solicited: Vec<Option<bool>> = df
        .column("solicited")
        .unwrap()
        .bool()
        .unwrap()
        .iter()
        .collect();
    let kind = strs(&df, "aeth_kind");
    let (mut with_reth, mut with_aeth) = (0, 0);
    o.store
        .for_each_frame(0..n, |i, row, bytes| {
            let i = i as usize;
            let at = format!("{} frame {}", path.display(), i + 1);
            let p = o
                .store
                .link_layer(row.port)
                .filter(|_| !row.flags.contains(Flags::UNDECODED))
                .map(|link| decode(bytes, link, &DecodeConfig::default()));
            let p = p.as_ref();
            let bth = p.and_then(|p| p.bth());
            let ext = p.map(|p| *p.ext());
            let reth = ext.and_then(|e| e.reth());
            let aeth = ext.and_then(|e| e.aeth());
            with_reth += usize::from(reth.is_some());
            with_aeth += usize::from(aeth.is_some());
            assert_eq!(va[i], reth.map(|r| r.va()), "{at}");
            assert_eq!(rkey[i], reth.map(|r| u64::from(r.rkey())), "{at}");
            assert_eq!(dma[i], reth.map(|r| u64::from(r.dma_len())), "{at}");
            assert_eq!(msn[i], aeth.map(|a| u64::from(a.msn())), "{at}");
            assert_eq!(
                kind[i].as_deref(),
                aeth.map(|a| a.syndrome().kind_name()),
                "{at}"
            );
            let imm = ext.and_then(|e| e.immdt()).map(|x| u64::from(x.value()));
            assert_eq!(immdt[i], imm, "{at}");
            let pl = bth.and(p).map(|p| p.payload_len() as u64);
            assert_eq!(payload[i], pl, "{at}");
            assert_eq!(
                sport[i],
                p.and_then(|p| p.udp()).map(|u| u64::from(u.src_port())),
                "{at}"
            );
            assert_eq!(pkey[i], bth.map(|b| u64::from(b.pkey())), "{at}");
            assert_eq!(solicited[i], bth.map(|b| b.solicited()), "{at}");
            let ip_dscp = p.and_then(|p| p.ip()).map(|ip| match ip {
                IpHeader::V4(h) => u64::from(h.dscp()),
                IpHeader::V6(h) => u64::from(h.dscp()),
            });
            assert_eq!(dscp[i], ip_dscp, "{at}");
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    assert!(
        with_reth > 0 && with_aeth > 0,
        "{}: no RETH or AETH",
        path.display()
    );
}

/// A capture on another RoCE port (`--roce-port 4792`) exports its header
/// columns: the store keeps the settings it indexed with, and the export
/// decodes with them, not with the defaults.
#[test]
fn header_columns_decode_with_the_stores_roce_ports() {
    let dir = out_dir("roce-port");
    let path = dir.join("port-4792.pcapng");
    let mut w = PcapngWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    for (ts_ns, frame) in rocescope_replay::synth::writes_to_port(4792, 4) {
        w.write_frame(ts_ns, 0, None, frame.len() as u32, &frame)
            .unwrap();
    }
    w.finish().unwrap();
    let cfg = DecodeConfig {
        extra_roce_ports: vec![4792],
    };
    let store = Store::open(&path, cfg.clone(), Box::new(RcAnalyzer::default())).unwrap();
    store.wait();
    assert_eq!(store.decode_config(), cfg);
    let df = PacketBatches::new(&store, 16).collect(0..4).unwrap();
    assert_eq!(
        u64s(&df, "reth_va"),
        vec![Some(0x1000), Some(0x2000), Some(0x3000), Some(0x4000)]
    );
    assert_eq!(u64s(&df, "pkey"), vec![Some(0xFFFF); 4]);
}

#[test]
fn header_columns_are_the_decoders_fields() {
    let dir = out_dir("header-columns");
    check_header_columns_match_the_decoder(&sample());
    check_header_columns_match_the_decoder(&record("default", 2_000_000, &dir));
    let shared =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures/rxe-write-read.pcap");
    if shared.exists() {
        check_header_columns_match_the_decoder(&shared);
    } else {
        eprintln!("skipped the shared capture: {} is absent", shared.display());
    }
}

"""The fleet questions answered by Apache Spark (local mode, PySpark) and
Apache DataFusion (Python) over `rocescope export --partition` folders.

Usage: engines.py FLEET_DIR WINDOW_NS -> one JSON object on stdout:
{"spark": {question: rows}, "datafusion": {...}, "spark_scan": {...}}.
One Spark session for everything (its start-up is most of the time).
"""
import json
import sys

FLEET, WINDOW_NS = sys.argv[1], int(sys.argv[2])

QUESTIONS = {
    "rows_per_capture": "SELECT capture, count(*) AS n FROM packets GROUP BY capture",
    "rows_per_window": "SELECT capture, window_start_ns, count(*) AS n FROM packets "
    "GROUP BY capture, window_start_ns",
    "retx_per_qp_packets": "SELECT capture, dest_qp, count(*) AS n FROM packets "
    "WHERE retransmission AND NOT response GROUP BY capture, dest_qp",
    "retx_per_qp_qps": "SELECT capture, dest_qp, retransmitted_packets AS n FROM qps",
    "retx_per_capture": "SELECT capture, sum(retransmitted_packets) AS n FROM qps GROUP BY capture",
    "episodes_by_cause": "SELECT capture, cause, count(*) AS n, sum(packets_resent) AS resent "
    "FROM episodes GROUP BY capture, cause",
}


def rows(records):
    """Rows as sorted lists of plain values (strings and ints)."""
    out = []
    for r in records:
        out.append([v if isinstance(v, (str, type(None))) else int(v) for v in r])
    return sorted(out, key=lambda r: [str(v) for v in r])


def datafusion_answers():
    import datafusion
    import pyarrow as pa

    ctx = datafusion.SessionContext()
    ctx.register_parquet(
        "packets",
        f"{FLEET}/packets",
        table_partition_cols=[("capture", pa.string()), ("window_start_ns", pa.int64())],
    )
    ctx.register_parquet(
        "episodes",
        f"{FLEET}/episodes",
        table_partition_cols=[("capture", pa.string()), ("window_start_ns", pa.int64())],
    )
    ctx.register_parquet("qps", f"{FLEET}/qps", table_partition_cols=[("capture", pa.string())])
    answers = {}
    for name, sql in QUESTIONS.items():
        t = ctx.sql(sql).to_arrow_table()
        answers[name] = rows(zip(*[c.to_pylist() for c in t.columns]))
    types = ctx.sql("SELECT * FROM packets LIMIT 1").to_arrow_table().schema
    answers["types"] = {f.name: str(f.type) for f in types}
    return answers


def spark_answers():
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rocescope-fleet")
        .config("spark.ui.enabled", "false")
        # The executed plan as run, so that its scans' metrics can be read.
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for t in ("packets", "qps", "episodes"):
        spark.read.parquet(f"{FLEET}/{t}").createOrReplaceTempView(t)
    answers = {}
    for name, sql in QUESTIONS.items():
        answers[name] = rows(tuple(r) for r in spark.sql(sql).collect())
    answers["types"] = {f.name: f.dataType.simpleString() for f in spark.table("packets").schema}

    def scanned(sql):
        """The query's result and the rows its file scans read (after
        row groups were skipped by their statistics)."""
        df = spark.sql(sql)
        result = df.collect()[0][0]
        plan = df._jdf.queryExecution().executedPlan()
        read = 0
        leaves = plan.collectLeaves()
        for i in range(leaves.size()):
            metric = leaves.apply(i).metrics().get("numOutputRows")
            if metric.isDefined():
                read += metric.get().value()
        return {"result": int(result), "rows_read": int(read)}

    total = spark.sql("SELECT count(*) FROM packets").collect()[0][0]
    lo = spark.sql("SELECT min(ts_ns) FROM packets").collect()[0][0]
    # The busiest window: a time filter over it must read only its files.
    w, n = spark.sql(
        "SELECT window_start_ns, count(*) AS n FROM packets GROUP BY window_start_ns "
        "ORDER BY n DESC, window_start_ns LIMIT 1"
    ).collect()[0]
    scan = {
        "total_rows": int(total),
        "window": {"start_ns": int(w), "rows": int(n)},
        "before_first": scanned(f"SELECT count(*) FROM packets WHERE ts_ns < {lo}"),
        "in_window": scanned(
            f"SELECT count(*) FROM packets WHERE ts_ns >= {w} AND ts_ns < {w + WINDOW_NS}"
        ),
        "no_such_qp": scanned("SELECT count(*) FROM packets WHERE dest_qp = 16777215"),
        "no_such_psn": scanned("SELECT count(*) FROM packets WHERE psn > 16777215"),
    }
    spark.stop()
    return answers, scan


if __name__ == "__main__":
    df_answers = datafusion_answers()
    spark, scan = spark_answers()
    print(json.dumps({"datafusion": df_answers, "spark": spark, "spark_scan": scan}))

"""Spark (local mode, PySpark) and DataFusion (Python) over the fleet folder
the export bench leaves (`cargo bench -p rocescope-data --bench export --
partitions`): the same two queries `rocescope query` is timed on there,
without and with a time filter, best of 3 each (Spark's start-up apart).

python3 app/data/benches/fleet_engines.py target/bench-data/fleet CUT_NS
(CUT_NS: the `ts_ns <` bound the export bench prints.)
"""
import sys
import time

FLEET, CUT = sys.argv[1], int(sys.argv[2])
QUERIES = {
    "no filter": "SELECT capture, count(*) AS n, sum(CAST(retransmission AS BIGINT)) AS retx "
    "FROM packets GROUP BY capture",
    "time filter (first tenth)": "SELECT capture, count(*) AS n, "
    f"sum(CAST(retransmission AS BIGINT)) AS retx FROM packets WHERE ts_ns < {CUT} GROUP BY capture",
}


def best_of(run, n=3):
    best, result = float("inf"), None
    for _ in range(n):
        t = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - t)
    return best, result


def datafusion():
    import datafusion
    import pyarrow as pa

    ctx = datafusion.SessionContext()
    ctx.register_parquet(
        "packets",
        f"{FLEET}/packets",
        table_partition_cols=[("capture", pa.string()), ("window_start_ns", pa.int64())],
    )
    for what, sql in QUERIES.items():
        secs, t = best_of(lambda: ctx.sql(sql).to_arrow_table())
        print(f"DataFusion, {what}: {secs:.3f} s (best of 3), {sum(t.column('n').to_pylist())} rows counted")


def spark():
    from pyspark.sql import SparkSession

    t = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rocescope-fleet-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.read.parquet(f"{FLEET}/packets").createOrReplaceTempView("packets")
    print(f"Spark: session and table in {time.perf_counter() - t:.1f} s")
    for what, sql in QUERIES.items():
        secs, rows = best_of(lambda: spark.sql(sql).collect())
        print(f"Spark, {what}: {secs:.3f} s (best of 3), {sum(r['n'] for r in rows)} rows counted")
    spark.stop()


if __name__ == "__main__":
    datafusion()
    spark()

//! The analysis' report as JSON, the schema `stats --json` documents, for
//! every command that prints one (`stats`, `sim --headless`, `attach`):
//! the report's rows (`analysis::rows`) as they serialise.

use rocescope_decoders::analysis::{Counters, Report};
use serde_json::{Map, Value, json};

fn counters_json(c: &Counters) -> Value {
    Value::Object(
        c.named()
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect::<Map<_, _>>(),
    )
}

/// The report as JSON: the schema `rocescope stats --json` documents.
pub fn report_json(r: &Report) -> Value {
    json!({
        "qps": r.qp_rows(),
        "link_gbps": r.link_gbps,
        "counters": counters_json(&r.counters),
        "episodes": r.episode_rows(),
        "findings": r.finding_rows(),
    })
}

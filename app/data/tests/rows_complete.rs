//! Every field of the report's rows reaches every table, or the table says
//! why it leaves it out (issue 50: a field is added once). The JSON of
//! `stats --json` is the rows serialised, so it is complete by
//! construction; the tables are written by hand and held here.
#![allow(clippy::unwrap_used)]

use rocescope_data::{DataFrame, column_name, episode_table, finding_table, left_out, qp_table};
use rocescope_decoders::analysis::{EpisodeRow, FindingRow, QpRow, Row};
use serde_json::Value;

/// The paths of a row's fields, nested objects walked (lists are one
/// field).
fn leaves(prefix: &mut Vec<String>, v: &Value, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                prefix.push(k.clone());
                leaves(prefix, v, out);
                prefix.pop();
            }
        }
        _ => out.push(prefix.clone()),
    }
}

fn check<R: Row>(table: &str, frame: impl Fn(&[R]) -> DataFrame) {
    let mut paths = Vec::new();
    leaves(
        &mut Vec::new(),
        &serde_json::to_value(R::specimen()).unwrap(),
        &mut paths,
    );
    assert!(paths.len() > 5, "{table}: the specimen has fields");
    let df = frame(&[R::specimen()]);
    let columns: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    let skipped = left_out(table);
    let missing: Vec<String> = paths
        .iter()
        .filter(|p| !skipped.iter().any(|(f, _)| *f == p[0]))
        .map(|p| column_name(table, &p.iter().map(String::as_str).collect::<Vec<_>>()))
        .filter(|c| !columns.contains(c))
        .collect();
    assert!(
        missing.is_empty(),
        "the {table} table leaves out {missing:?} without saying why (add the columns, or the \
         fields to `left_out`)"
    );
    // What a table says it leaves out is a field the row has.
    for (field, why) in skipped {
        assert!(
            paths.iter().any(|p| p[0] == *field),
            "{table}: {field} ({why}) is no field"
        );
    }
}

#[test]
fn the_qps_table_has_every_field_of_a_qp() {
    check::<QpRow>("qps", |r| qp_table(r).unwrap());
}

#[test]
fn the_episodes_table_has_every_field_of_an_episode() {
    check::<EpisodeRow>("episodes", |r| episode_table(r).unwrap());
}

#[test]
fn the_findings_table_has_every_field_of_a_finding_or_says_why_not() {
    check::<FindingRow>("findings", |r| finding_table(r).unwrap());
}

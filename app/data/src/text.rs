//! Printing a result: an aligned text table, CSV, or a JSON array of row
//! objects.

use std::io::Write;

use polars::prelude::*;

use crate::DataError;
use crate::rows::{RowFormat, RowWriter};

/// How `rocescope query` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Aligned columns, at most `max_rows` rows and a line saying how many
    /// more there were.
    Table {
        max_rows: usize,
    },
    Csv,
    /// One array of row objects.
    Json,
}

/// Write `df` to `out` in `format`.
pub fn write_frame(
    df: &mut DataFrame,
    format: OutputFormat,
    out: &mut dyn Write,
) -> Result<(), DataError> {
    let io = |cause| DataError::Io {
        what: "cannot write",
        path: "standard output".into(),
        cause,
    };
    match format {
        OutputFormat::Csv => {
            let mut w = RowWriter::new(out, RowFormat::Csv, df.schema())?;
            w.write_frame(df)?;
            w.finish().map_err(io)?;
        }
        OutputFormat::Json => {
            let mut w = RowWriter::new(out, RowFormat::JsonArray, df.schema())?;
            w.write_frame(df)?;
            w.finish().map_err(io)?;
        }
        OutputFormat::Table { max_rows } => {
            let shown = df.height().min(max_rows);
            let mut cells: Vec<Vec<String>> =
                vec![df.columns().iter().map(|c| c.name().to_string()).collect()];
            for i in 0..shown {
                cells.push(
                    df.columns()
                        .iter()
                        .map(|c| text_value(c.get(i).ok()))
                        .collect(),
                );
            }
            let widths: Vec<usize> = (0..df.width())
                .map(|j| {
                    cells
                        .iter()
                        .map(|r| r[j].chars().count())
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            let numeric: Vec<bool> = df
                .columns()
                .iter()
                .map(|c| c.dtype().is_primitive_numeric())
                .collect();
            for (k, row) in cells.iter().enumerate() {
                let mut line = String::new();
                for (j, cell) in row.iter().enumerate() {
                    if j > 0 {
                        line.push_str("  ");
                    }
                    let pad = widths[j] - cell.chars().count();
                    let last = j + 1 == row.len();
                    if numeric[j] && k > 0 {
                        line.extend(std::iter::repeat_n(' ', pad));
                        line.push_str(cell);
                    } else {
                        line.push_str(cell);
                        if !last {
                            line.extend(std::iter::repeat_n(' ', pad));
                        }
                    }
                }
                writeln!(out, "{}", line.trim_end()).map_err(io)?;
                if k == 0 {
                    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
                    writeln!(out, "{}", rule.join("  ")).map_err(io)?;
                }
            }
            let more = df.height() - shown;
            let noun = if df.height() == 1 { "row" } else { "rows" };
            if more > 0 {
                writeln!(
                    out,
                    "({} {noun}; {more} not shown: use --format csv or json for all)",
                    df.height()
                )
                .map_err(io)?;
            } else {
                writeln!(out, "({} {noun})", df.height()).map_err(io)?;
            }
        }
    }
    Ok(())
}

fn text_value(v: Option<AnyValue<'_>>) -> String {
    match v {
        None | Some(AnyValue::Null) => "null".into(),
        Some(AnyValue::String(s)) => s.to_owned(),
        Some(AnyValue::StringOwned(s)) => s.to_string(),
        Some(AnyValue::Float64(f)) => format_float(f),
        Some(AnyValue::Float32(f)) => format_float(f64::from(f)),
        Some(v) => v.to_string(),
    }
}

fn format_float(f: f64) -> String {
    if f.is_finite() && f.fract() != 0.0 {
        let s = format!("{f:.6}");
        s.trim_end_matches('0').to_owned()
    } else {
        f.to_string()
    }
}

//! A frame's rows as CSV, JSON lines or a JSON array.
//!
//! Cells are formatted a column at a time over a slice of rows (one typed
//! loop per column, no per-cell dispatch), then laid out row by row; the
//! slice keeps the text in cache and the memory flat whatever the batch.

use std::io::Write;

use polars::prelude::*;

/// Rows formatted per round: a few hundred KB of text.
const SLICE_ROWS: usize = 8 * 1024;

/// The text formats rows are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowFormat {
    /// A header line, then comma-separated values; null is empty, a string
    /// is quoted when it holds a comma, quote or line break, or is empty.
    Csv,
    /// One JSON object per row.
    Jsonl,
    /// One JSON array of the rows' objects.
    JsonArray,
}

/// Writes frames' rows to `out`, one call per batch.
pub(crate) struct RowWriter<W: Write> {
    out: W,
    format: RowFormat,
    /// Per column: its formatted cells for the current slice.
    cells: Vec<Cells>,
    /// JSON: each column's `"name":` (and the comma before it).
    keys: Vec<Vec<u8>>,
    /// Rows written so far.
    rows: usize,
    /// The slice's lines.
    line: Vec<u8>,
}

/// One column's cells for a slice of rows: the text, and where each ends.
#[derive(Default)]
struct Cells {
    text: Vec<u8>,
    ends: Vec<usize>,
}

impl<W: Write> RowWriter<W> {
    /// A writer for frames with `schema`'s columns (CSV: the header is
    /// written now).
    pub(crate) fn new(mut out: W, format: RowFormat, schema: &Schema) -> PolarsResult<Self> {
        let names: Vec<&str> = schema.iter_names().map(|n| n.as_str()).collect();
        let mut keys = Vec::new();
        match format {
            RowFormat::Csv => {
                let mut line = Vec::new();
                for (j, name) in names.iter().enumerate() {
                    if j > 0 {
                        line.push(b',');
                    }
                    csv_str(&mut line, name);
                }
                line.push(b'\n');
                out.write_all(&line)?;
            }
            RowFormat::Jsonl | RowFormat::JsonArray => {
                for (j, name) in names.iter().enumerate() {
                    let mut k = Vec::new();
                    k.push(if j == 0 { b'{' } else { b',' });
                    json_str(&mut k, name);
                    k.push(b':');
                    keys.push(k);
                }
            }
        }
        Ok(RowWriter {
            out,
            format,
            cells: (0..names.len()).map(|_| Cells::default()).collect(),
            keys,
            rows: 0,
            line: Vec::new(),
        })
    }

    /// Write `df`'s rows (its columns those of the schema given to `new`).
    /// One thread: an export builds its batches on the other cores, and
    /// formatting on them too only added work (BENCHMARKS.md, "Build").
    pub(crate) fn write_frame(&mut self, df: &DataFrame) -> PolarsResult<()> {
        if df.width() != self.cells.len() {
            polars_bail!(ShapeMismatch: "a frame of {} columns for a writer of {}", df.width(), self.cells.len());
        }
        let mut start = 0;
        while start < df.height() {
            let len = SLICE_ROWS.min(df.height() - start);
            for (c, cells) in df.columns().iter().zip(&mut self.cells) {
                cells.text.clear();
                cells.ends.clear();
                let s = c.as_materialized_series().slice(start as i64, len);
                format_cells(&s, self.format != RowFormat::Csv, cells)?;
            }
            self.line.clear();
            let first = self.rows == 0;
            lay_out(
                &self.cells,
                &self.keys,
                self.format,
                first,
                len,
                &mut self.line,
            );
            self.out.write_all(&self.line)?;
            self.rows += len;
            start += len;
        }
        Ok(())
    }

    /// End the output (a JSON array's bracket), flush and hand it back.
    pub(crate) fn finish(mut self) -> std::io::Result<W> {
        if self.format == RowFormat::JsonArray {
            self.out
                .write_all(if self.rows == 0 { b"[]\n" } else { b"]\n" })?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Lay the slice's `rows` rows of formatted `cells` out as lines (`first`:
/// the output's first rows).
fn lay_out(
    cells: &[Cells],
    keys: &[Vec<u8>],
    format: RowFormat,
    first: bool,
    rows: usize,
    line: &mut Vec<u8>,
) {
    for i in 0..rows {
        // A JSON array: `[` before the first row, a comma before the others.
        if format == RowFormat::JsonArray {
            line.extend_from_slice(if first && i == 0 { b"[" } else { b",\n" });
        }
        for (j, c) in cells.iter().enumerate() {
            match format {
                RowFormat::Csv if j > 0 => line.push(b','),
                RowFormat::Csv => {}
                RowFormat::Jsonl | RowFormat::JsonArray => line.extend_from_slice(&keys[j]),
            }
            let from = if i == 0 { 0 } else { c.ends[i - 1] };
            line.extend_from_slice(&c.text[from..c.ends[i]]);
        }
        if format != RowFormat::Csv {
            line.extend_from_slice(if cells.is_empty() { b"{}" } else { b"}" });
        }
        if format != RowFormat::JsonArray {
            line.push(b'\n');
        }
    }
}

/// Format every cell of `s` into `cells` as CSV or JSON values, typed
/// loop by type.
fn format_cells(s: &Series, json: bool, cells: &mut Cells) -> PolarsResult<()> {
    let null: &[u8] = if json { b"null" } else { b"" };
    let Cells { text, ends } = cells;
    macro_rules! ints {
        ($ca:expr) => {{
            let mut buf = itoa::Buffer::new();
            for v in $ca.iter() {
                match v {
                    Some(v) => text.extend_from_slice(buf.format(v).as_bytes()),
                    None => text.extend_from_slice(null),
                }
                ends.push(text.len());
            }
        }};
    }
    macro_rules! floats {
        ($ca:expr) => {{
            for v in $ca.iter() {
                match v {
                    Some(v) => float(text, f64::from(v), json),
                    None => text.extend_from_slice(null),
                }
                ends.push(text.len());
            }
        }};
    }
    match s.dtype() {
        DataType::UInt8 => ints!(s.u8()?),
        DataType::UInt16 => ints!(s.u16()?),
        DataType::UInt32 => ints!(s.u32()?),
        DataType::UInt64 => ints!(s.u64()?),
        DataType::Int16 => ints!(s.i16()?),
        DataType::Int32 => ints!(s.i32()?),
        DataType::Int64 => ints!(s.i64()?),
        DataType::Float32 => floats!(s.f32()?),
        DataType::Float64 => floats!(s.f64()?),
        DataType::Boolean => {
            for v in s.bool()?.iter() {
                text.extend_from_slice(match v {
                    Some(true) => b"true",
                    Some(false) => b"false",
                    None => null,
                });
                ends.push(text.len());
            }
        }
        DataType::String => {
            for v in s.str()?.iter() {
                match v {
                    None => text.extend_from_slice(null),
                    Some(v) if json => json_str(text, v),
                    Some(v) => csv_str(text, v),
                }
                ends.push(text.len());
            }
        }
        // Types the tables do not have but a query can make (dates,
        // lists): the engine's own text of the value.
        _ => {
            for i in 0..s.len() {
                match s.get(i)? {
                    AnyValue::Null => text.extend_from_slice(null),
                    v => {
                        let v = v.to_string();
                        if json {
                            json_str(text, &v);
                        } else {
                            csv_str(text, &v);
                        }
                    }
                }
                ends.push(text.len());
            }
        }
    }
    Ok(())
}

/// A float the shortest way that reads back to it (`1.0`, `0.1`, `1e-7`);
/// JSON has no NaN or infinity, so those are null there.
fn float(text: &mut Vec<u8>, v: f64, json: bool) {
    if v.is_finite() {
        let mut buf = ryu::Buffer::new();
        text.extend_from_slice(buf.format_finite(v).as_bytes());
    } else if json {
        text.extend_from_slice(b"null");
    } else if v.is_nan() {
        text.extend_from_slice(b"NaN");
    } else if v > 0.0 {
        text.extend_from_slice(b"inf");
    } else {
        text.extend_from_slice(b"-inf");
    }
}

/// A CSV string cell: as is, or quoted (quotes doubled) when it holds a
/// comma, quote or line break, or is empty (so that it is not null).
fn csv_str(text: &mut Vec<u8>, v: &str) {
    if !v.is_empty() && !v.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        text.extend_from_slice(v.as_bytes());
        return;
    }
    text.push(b'"');
    for b in v.bytes() {
        if b == b'"' {
            text.push(b'"');
        }
        text.push(b);
    }
    text.push(b'"');
}

/// A JSON string with its escapes.
fn json_str(text: &mut Vec<u8>, v: &str) {
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *text, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(df: &DataFrame, format: RowFormat) -> String {
        let mut w = RowWriter::new(Vec::new(), format, df.schema()).unwrap();
        w.write_frame(df).unwrap();
        String::from_utf8(w.finish().unwrap()).unwrap()
    }

    fn frame() -> DataFrame {
        df! {
            "n" => [Some(1i64), None, Some(-3)],
            "u8" => [Some(7u8), Some(0), None],
            "f" => [Some(1.0f64), Some(0.1), Some(f64::NAN)],
            "b" => [Some(true), None, Some(false)],
            "s" => [Some("plain"), Some("a,\"b\"\nc"), Some("")],
        }
        .unwrap()
    }

    #[test]
    fn csv_quotes_only_where_a_reader_needs_it() {
        assert_eq!(
            write(&frame(), RowFormat::Csv),
            "n,u8,f,b,s\n1,7,1.0,true,plain\n,0,0.1,,\"a,\"\"b\"\"\nc\"\n-3,,NaN,false,\"\"\n"
        );
    }

    #[test]
    fn json_lines_are_objects_with_nulls_and_escapes() {
        let text = write(&frame(), RowFormat::Jsonl);
        let rows: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            rows[1],
            serde_json::json!({"n": null, "u8": 0, "f": 0.1, "b": null, "s": "a,\"b\"\nc"})
        );
        assert_eq!(rows[2]["f"], serde_json::Value::Null);
        assert_eq!(rows[0]["f"], serde_json::json!(1.0));
        assert_eq!(rows.len(), 3);
    }

    #[test]
    fn a_json_array_spans_every_frame_written_and_may_be_empty() {
        let df = frame();
        let mut w = RowWriter::new(Vec::new(), RowFormat::JsonArray, df.schema()).unwrap();
        w.write_frame(&df).unwrap();
        w.write_frame(&df.slice(0, 1)).unwrap();
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        let rows: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(rows.as_array().unwrap().len(), 4);
        assert_eq!(rows[3], rows[0]);
        // Keys in the columns' order.
        assert!(
            text.starts_with(r#"[{"n":1,"u8":7,"f":1.0,"b":true,"s":"plain"},"#),
            "{text}"
        );
        let w = RowWriter::new(Vec::new(), RowFormat::JsonArray, df.schema()).unwrap();
        assert_eq!(w.finish().unwrap(), b"[]\n");
    }

    #[test]
    fn a_frame_longer_than_a_slice_keeps_its_rows_in_order() {
        let n = SLICE_ROWS * 2 + 5;
        let df = df! { "i" => (0..n as i64).collect::<Vec<_>>() }.unwrap();
        let text = write(&df, RowFormat::Csv);
        let got: Vec<i64> = text.lines().skip(1).map(|l| l.parse().unwrap()).collect();
        assert_eq!(got, (0..n as i64).collect::<Vec<_>>());
    }
}

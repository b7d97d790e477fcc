//! Parquet output: a row group's columns encoded and compressed by the
//! thread that built it (or on all cores), each column with an encoding
//! chosen for it, then written in order.
//!
//! polars' own writer encodes a row group's pages on one thread and tries
//! dictionary encoding on every column (hashing each value first); here a
//! table says per column how it is laid out (`ColumnLayout`: required,
//! delta, dictionary), everything else is plain or, for strings, a
//! dictionary, and the pages themselves come from `pages.rs` where it
//! knows the column's shape.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use polars::prelude::{CompatLevel, DataFrame, PolarsError, PolarsResult, Schema, SchemaExt};
use polars_arrow::array::Array;
use polars_arrow::datatypes::{ArrowDataType, ArrowSchema};
use polars_parquet::parquet::CowBuffer;
use polars_parquet::write::{
    CompressedPage, CompressionOptions, DynIter, DynStreamingIterator, Encoding, FileWriter, Page,
    ParquetType, StatisticsOptions, Version, WriteOptions, array_to_columns, compress,
    fallible_streaming_iterator, to_parquet_schema,
};

/// A Parquet file being written, one row group per batch.
pub(crate) struct ParquetOut<W: Write> {
    writer: FileWriter<W>,
    encoder: Arc<ColumnEncoder>,
    threads: usize,
}

/// How a file's columns are encoded; shared by the threads that encode
/// its row groups.
pub(crate) struct ColumnEncoder {
    fields: Vec<ParquetType>,
    encodings: Vec<Encoding>,
    options: WriteOptions,
    /// Compressed pages' buffers, back from written row groups, and
    /// encoders' working memory: reused so that each row group does not
    /// fault fresh memory in.
    spare: Mutex<Vec<Vec<u8>>>,
}

/// A row group's column chunks, encoded and compressed, to be written.
pub(crate) struct EncodedGroup {
    rows: usize,
    columns: Vec<Vec<CompressedPage>>,
}

/// How a column is written, where its type alone does not say.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ColumnLayout {
    pub name: &'static str,
    /// Never null: written without definition levels.
    pub required: bool,
    /// `DeltaBinaryPacked` for counters and clocks, `RleDictionary` for
    /// integers with few distinct values (plain if a row group has many).
    pub encoding: Option<Encoding>,
}

/// The encoding for a column of this type.
fn encoding_for(dtype: &ArrowDataType) -> Encoding {
    match dtype {
        ArrowDataType::Utf8View
        | ArrowDataType::BinaryView
        | ArrowDataType::Utf8
        | ArrowDataType::LargeUtf8
        | ArrowDataType::Dictionary(..) => Encoding::RleDictionary,
        _ => Encoding::Plain,
    }
}

impl<W: Write> ParquetOut<W> {
    /// A file with `schema`'s columns (a polars schema, as the tables
    /// have), laid out as `layout` says for the columns it names.
    pub(crate) fn new(out: W, schema: &Schema, layout: &[ColumnLayout]) -> PolarsResult<Self> {
        let mut arrow: ArrowSchema = schema.to_arrow(CompatLevel::newest());
        let mut encodings = Vec::with_capacity(arrow.len());
        for field in arrow.iter_values_mut() {
            let l = layout.iter().find(|l| l.name == field.name.as_str());
            if l.is_some_and(|l| l.required) {
                field.is_nullable = false;
            }
            encodings.push(
                l.and_then(|l| l.encoding)
                    .unwrap_or_else(|| encoding_for(&field.dtype)),
            );
        }
        let fields = to_parquet_schema(&arrow)?.fields().to_vec();
        let options = WriteOptions {
            // Min, max and null counts let engines skip row groups.
            statistics: StatisticsOptions::default(),
            version: Version::V1,
            compression: CompressionOptions::Snappy,
            data_page_size: None,
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        Ok(ParquetOut {
            writer: FileWriter::try_new(out, arrow, options)?,
            encoder: Arc::new(ColumnEncoder {
                fields,
                encodings,
                options,
                spare: Mutex::new(Vec::new()),
            }),
            threads,
        })
    }

    /// The file's column encoder, for threads that encode row groups.
    pub(crate) fn encoder(&self) -> Arc<ColumnEncoder> {
        Arc::clone(&self.encoder)
    }

    /// Write one row group of `rows` rows from one array per column,
    /// encoded on all cores.
    pub(crate) fn write_arrays(
        &mut self,
        rows: usize,
        arrays: &[Box<dyn Array>],
    ) -> PolarsResult<()> {
        let group = self.encoder.encode(rows, arrays, self.threads)?;
        self.write_encoded(group)
    }

    /// Write an encoded row group (groups are written in the order given).
    pub(crate) fn write_encoded(&mut self, group: EncodedGroup) -> PolarsResult<()> {
        let EncodedGroup { rows, columns } = group;
        let pages = DynIter::new(columns.iter().map(|pages| {
            Ok(DynStreamingIterator::new(
                fallible_streaming_iterator::convert(pages.iter().map(Ok)),
            ))
        }));
        self.writer.write(rows as u64, pages)?;
        let mut spare = self.encoder.spare.lock().unwrap_or_else(|e| e.into_inner());
        for page in columns.into_iter().flatten() {
            if let CompressedPage::Data(mut page) = page
                && let CowBuffer::Owned(buffer) = page.slice_mut()
            {
                let mut buffer = std::mem::take(buffer);
                buffer.clear();
                spare.push(buffer);
            }
        }
        Ok(())
    }

    /// Write a frame (its columns must be those of the schema).
    pub(crate) fn write_frame(&mut self, df: &DataFrame) -> PolarsResult<()> {
        for batch in df.iter_chunks(CompatLevel::newest(), false) {
            let rows = batch.len();
            if rows > 0 {
                self.write_arrays(rows, batch.columns())?;
            }
        }
        Ok(())
    }

    /// Write the footer; returns the file's size in bytes.
    pub(crate) fn finish(mut self) -> PolarsResult<u64> {
        self.writer.end(None)
    }
}

impl ColumnEncoder {
    /// Encode and compress one row group of `rows` rows from one array per
    /// column, on `threads` threads (the caller's included).
    pub(crate) fn encode(
        &self,
        rows: usize,
        arrays: &[Box<dyn Array>],
        threads: usize,
    ) -> PolarsResult<EncodedGroup> {
        if arrays.len() != self.fields.len() {
            return Err(PolarsError::ShapeMismatch(
                format!(
                    "{} columns written to a Parquet file of {}",
                    arrays.len(),
                    self.fields.len()
                )
                .into(),
            ));
        }
        let next = AtomicUsize::new(0);
        let done: Vec<Mutex<PolarsResult<Vec<CompressedPage>>>> =
            arrays.iter().map(|_| Mutex::new(Ok(Vec::new()))).collect();
        let encode = || {
            // Working memory for this thread's columns, from the spare
            // buffers and back to them.
            let mut scratch = self
                .spare
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop()
                .unwrap_or_default();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let (Some(array), Some(field), Some(&encoding)) =
                    (arrays.get(i), self.fields.get(i), self.encodings.get(i))
                else {
                    break;
                };
                let pages = encode_column(
                    array.as_ref(),
                    field,
                    encoding,
                    self.options,
                    &self.spare,
                    &mut scratch,
                );
                if let Some(slot) = done.get(i) {
                    *slot.lock().unwrap_or_else(|e| e.into_inner()) = pages;
                }
            }
            scratch.clear();
            self.spare
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(scratch);
        };
        std::thread::scope(|s| {
            for _ in 1..threads.min(arrays.len()) {
                // If no thread starts, the loop below does all the work.
                let _ = std::thread::Builder::new()
                    .name("rocescope-parquet".into())
                    .spawn_scoped(s, encode);
            }
            encode();
        });
        let columns = done
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
            .collect::<PolarsResult<Vec<_>>>()?;
        Ok(EncodedGroup { rows, columns })
    }
}

/// One column chunk's pages, encoded and compressed.
fn encode_column(
    array: &dyn Array,
    field: &ParquetType,
    encoding: Encoding,
    options: WriteOptions,
    spare: &Mutex<Vec<Vec<u8>>>,
    scratch: &mut Vec<u8>,
) -> PolarsResult<Vec<CompressedPage>> {
    let mut compressed = Vec::new();
    let mut push = |page: Page| -> PolarsResult<()> {
        let buffer = spare
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default();
        compressed.push(compress(page, buffer, options.compression)?);
        Ok(())
    };
    match crate::pages::encode(array, field, encoding, scratch)? {
        Some(pages) => pages.into_iter().try_for_each(&mut push)?,
        None => {
            for leaf in array_to_columns(array, field.clone(), options, &[encoding])? {
                for page in leaf {
                    push(page?)?;
                }
            }
        }
    }
    let pages = compressed;
    Ok(pages)
}

//! Telemetry tables in Parquet, read back by column for the run report.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

/// Numeric columns, text columns and the row count of a table.
pub type Columns = (
    BTreeMap<String, Vec<Option<f64>>>,
    BTreeMap<String, Vec<String>>,
    usize,
);

#[cfg(feature = "parquet")]
pub fn read(path: &Path, text: &[&str]) -> Result<Columns> {
    use anyhow::Context;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type, UInt32Type, UInt64Type};
    use arrow_array::Array;
    use arrow_schema::DataType;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .with_context(|| format!("{}: not a Parquet table", path.display()))?;
    let (mut num, mut txt) = (BTreeMap::new(), BTreeMap::new());
    let mut rows = 0;
    for batch in reader {
        let batch = batch.with_context(|| format!("{}: unreadable row group", path.display()))?;
        rows += batch.num_rows();
        for (field, col) in batch.schema().fields().iter().zip(batch.columns()) {
            let name = field.name().clone();
            if text.contains(&name.as_str()) {
                let out: &mut Vec<String> = txt.entry(name).or_default();
                match col.data_type() {
                    DataType::Utf8 => {
                        let a = col.as_string::<i32>();
                        out.extend((0..a.len()).map(|i| a.value(i).to_string()));
                    }
                    _ => out.extend((0..col.len()).map(|_| String::new())),
                }
                continue;
            }
            let out: &mut Vec<Option<f64>> = num.entry(name).or_default();
            let n = col.len();
            macro_rules! push {
                ($t:ty) => {{
                    let a = col.as_primitive::<$t>();
                    out.extend((0..n).map(|i| (!a.is_null(i)).then(|| a.value(i) as f64)));
                }};
            }
            match col.data_type() {
                DataType::Float64 => push!(Float64Type),
                DataType::UInt64 => push!(UInt64Type),
                DataType::UInt32 => push!(UInt32Type),
                DataType::Int64 => push!(Int64Type),
                _ => out.extend((0..n).map(|_| None)),
            }
        }
    }
    Ok((num, txt, rows))
}

#[cfg(not(feature = "parquet"))]
pub fn read(path: &Path, _text: &[&str]) -> Result<Columns> {
    anyhow::bail!(
        "{}: this lbsim was built without the `parquet` feature; write telemetry as CSV",
        path.display()
    )
}

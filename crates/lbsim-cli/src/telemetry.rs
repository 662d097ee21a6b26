//! Telemetry tables on disk: a [`TelemetrySink`] that streams the library's rows into
//! `DIR/telemetry/{port_index,ports,flows,events}.{parquet,csv}`. Each table is written to a
//! temporary name (`.ports.parquet.tmp-PID`) batch by batch, in Parquet row groups or CSV rows,
//! so memory holds a row group at most, and renamed into place by [`TableFiles::finish`]: an
//! interrupted process leaves no half-written table under a table's name.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use lbsim::stats::telemetry::{
    EventRecord, FlowSample, PortInfo, PortSample, TelemetryFormat, TelemetryPlan, TelemetrySink,
};

use crate::output::tmp_path;

/// Rows per Parquet row group.
#[cfg(feature = "parquet")]
const ROW_GROUP_ROWS: usize = 1 << 17;

enum Writer {
    Csv(csv::Writer<BufWriter<File>>),
    #[cfg(feature = "parquet")]
    Parquet(parquet::arrow::ArrowWriter<BufWriter<File>>),
}

/// One table being written.
struct Table {
    path: PathBuf,
    tmp: Temporary,
    writer: Writer,
}

/// A temporary file that is removed unless it was renamed into place: a run that fails (a full
/// disk) or is dropped leaves no `.name.tmp-PID` behind.
struct Temporary {
    path: PathBuf,
    kept: bool,
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Table {
    fn create(dir: &Path, name: &str, format: TelemetryFormat) -> Result<Table> {
        let path = dir.join(format!("{name}.{}", format.extension()));
        let tmp = tmp_path(&path);
        let file = BufWriter::with_capacity(
            1 << 16,
            File::create(&tmp).with_context(|| format!("cannot write {}", path.display()))?,
        );
        let tmp = Temporary {
            path: tmp,
            kept: false,
        };
        let writer = match format {
            TelemetryFormat::Csv => {
                // The header goes first, so a table without rows (a run that dropped nothing)
                // still names its columns.
                let mut w = csv::WriterBuilder::new()
                    .has_headers(false)
                    .from_writer(file);
                w.write_record(column_names(name))?;
                Writer::Csv(w)
            }
            #[cfg(feature = "parquet")]
            TelemetryFormat::Parquet => {
                let props = parquet::file::properties::WriterProperties::builder()
                    .set_compression(parquet::basic::Compression::SNAPPY)
                    .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
                    .build();
                let schema = columns::schema(name);
                Writer::Parquet(parquet::arrow::ArrowWriter::try_new(
                    file,
                    schema,
                    Some(props),
                )?)
            }
            #[cfg(not(feature = "parquet"))]
            TelemetryFormat::Parquet => unreachable!("refused by TableFiles::create"),
        };
        Ok(Table { path, tmp, writer })
    }

    fn write<R: serde::Serialize>(
        &mut self,
        rows: &[R],
        #[cfg_attr(not(feature = "parquet"), allow(unused_variables))] arrow: impl FnOnce(
            &[R],
        )
            -> Result<
            Batch,
        >,
    ) -> Result<()> {
        let written: Result<()> = (|| {
            match &mut self.writer {
                Writer::Csv(w) => {
                    for r in rows {
                        w.serialize(r)?;
                    }
                }
                #[cfg(feature = "parquet")]
                Writer::Parquet(w) => w.write(&arrow(rows)?)?,
            }
            Ok(())
        })();
        written.with_context(|| format!("cannot write {}", self.path.display()))
    }

    fn finish(mut self) -> Result<PathBuf> {
        let path = self.path.clone();
        let closed: Result<()> = match self.writer {
            Writer::Csv(mut w) => w.flush().map_err(Into::into),
            #[cfg(feature = "parquet")]
            Writer::Parquet(w) => w.close().map(|_| ()).map_err(Into::into),
        };
        closed.with_context(|| format!("cannot write {}", path.display()))?;
        std::fs::rename(&self.tmp.path, &path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        self.tmp.kept = true;
        Ok(path)
    }
}

#[cfg(feature = "parquet")]
type Batch = arrow_array::RecordBatch;
#[cfg(not(feature = "parquet"))]
type Batch = ();

/// The telemetry tables of one run: those the plan selects (`port_index` and `ports` with
/// ports, `flows` with flows, `events` with event kinds).
pub struct TableFiles {
    port_index: Option<Table>,
    ports: Option<Table>,
    flows: Option<Table>,
    events: Option<Table>,
    /// The first write error (later rows are dropped; `finish` reports it).
    error: Option<anyhow::Error>,
}

impl TableFiles {
    /// Opens the tables under `dir` (created if need be).
    pub fn create(dir: &Path, plan: &TelemetryPlan) -> Result<TableFiles> {
        let format = plan.format;
        if format == TelemetryFormat::Parquet && !cfg!(feature = "parquet") {
            bail!(
                "telemetry.format = \"parquet\": this lbsim was built without the `parquet` \
                 feature; set telemetry.format = \"csv\" or build with default features"
            );
        }
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create output directory {}", dir.display()))?;
        // A previous run's tables would read as this one's.
        for t in TABLES {
            for ext in ["parquet", "csv"] {
                let old = dir.join(format!("{t}.{ext}"));
                if old.exists() {
                    std::fs::remove_file(&old)
                        .with_context(|| format!("cannot remove {}", old.display()))?;
                }
            }
        }
        let open = |on: bool, name: &str| -> Result<Option<Table>> {
            on.then(|| Table::create(dir, name, format)).transpose()
        };
        Ok(TableFiles {
            port_index: open(!plan.ports.is_empty(), "port_index")?,
            ports: open(!plan.ports.is_empty(), "ports")?,
            flows: open(!plan.flows.is_empty(), "flows")?,
            events: open(plan.events.any(), "events")?,
            error: None,
        })
    }

    /// Closes and renames every table into place; returns their paths.
    pub fn finish(self) -> Result<Vec<PathBuf>> {
        // On an error every table's temporary file goes with it (see `Temporary`).
        if let Some(e) = self.error {
            return Err(e.context("writing telemetry"));
        }
        [self.port_index, self.ports, self.flows, self.events]
            .into_iter()
            .flatten()
            .map(Table::finish)
            .collect()
    }

    fn write<R: serde::Serialize>(
        table: &mut Option<Table>,
        error: &mut Option<anyhow::Error>,
        rows: &[R],
        arrow: impl FnOnce(&[R]) -> Result<Batch>,
    ) {
        if let (Some(t), None) = (table, &error) {
            if let Err(e) = t.write(rows, arrow) {
                *error = Some(e);
            }
        }
    }
}

impl TelemetrySink for TableFiles {
    fn port_index(&mut self, rows: &[PortInfo]) {
        Self::write(
            &mut self.port_index,
            &mut self.error,
            rows,
            columns::port_index,
        );
    }
    fn ports(&mut self, rows: &[PortSample]) {
        Self::write(&mut self.ports, &mut self.error, rows, columns::ports);
    }
    fn flows(&mut self, rows: &[FlowSample]) {
        Self::write(&mut self.flows, &mut self.error, rows, columns::flows);
    }
    fn events(&mut self, rows: &[EventRecord]) {
        Self::write(&mut self.events, &mut self.error, rows, columns::events);
    }
}

/// The tables as Arrow columns (the CSV tables have the same columns, in the same order).
#[cfg(feature = "parquet")]
mod columns {
    use std::sync::Arc;

    use anyhow::Result;
    use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
    use arrow_schema::{DataType, Field, Schema, SchemaRef};
    use lbsim::stats::telemetry::{EventRecord, FlowSample, PortInfo, PortSample};

    /// Each table's columns: name, type, nullable.
    fn fields(table: &str) -> &'static [(&'static str, DataType, bool)] {
        use DataType::{Float64, UInt32, UInt64, Utf8};
        match table {
            "port_index" => &[
                ("port", UInt32, false),
                ("link", Utf8, false),
                ("tier", Utf8, false),
                ("from", Utf8, false),
                ("to", Utf8, false),
                ("rate_bps", UInt64, false),
                ("buffer_bytes", UInt64, true),
            ],
            "ports" => &[
                ("t_start_ps", UInt64, false),
                ("t_end_ps", UInt64, false),
                ("port", UInt32, false),
                ("queue_mean_bytes", Float64, false),
                ("queue_max_bytes", UInt64, false),
                ("bytes_sent", UInt64, false),
                ("utilisation", Float64, false),
                ("drops", UInt64, false),
                ("ecn_marks", UInt64, false),
                ("trims", UInt64, false),
                ("link_losses", UInt64, false),
            ],
            "flows" => &[
                ("t_start_ps", UInt64, false),
                ("t_end_ps", UInt64, false),
                ("flow", UInt64, false),
                ("cwnd_bytes", UInt64, true),
                ("rate_bps", UInt64, true),
                ("bytes_in_flight", UInt64, true),
                ("bytes_acked", UInt64, false),
                ("retransmissions", UInt64, false),
                ("paths", UInt32, false),
            ],
            "events" => &[
                ("t_ps", UInt64, false),
                ("kind", Utf8, false),
                ("port", UInt32, true),
                ("flow", UInt64, true),
            ],
            _ => unreachable!("a telemetry table"),
        }
    }

    pub fn schema(table: &str) -> SchemaRef {
        Arc::new(Schema::new(
            fields(table)
                .iter()
                .map(|(n, t, null)| Field::new(*n, t.clone(), *null))
                .collect::<Vec<_>>(),
        ))
    }

    fn batch(table: &str, cols: Vec<ArrayRef>) -> Result<RecordBatch> {
        Ok(RecordBatch::try_new(schema(table), cols)?)
    }

    fn u64s<R>(rows: &[R], f: impl Fn(&R) -> u64) -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(f)))
    }
    fn opt_u64s<R>(rows: &[R], f: impl Fn(&R) -> Option<u64>) -> ArrayRef {
        Arc::new(UInt64Array::from_iter(rows.iter().map(f)))
    }
    fn u32s<R>(rows: &[R], f: impl Fn(&R) -> u32) -> ArrayRef {
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(f)))
    }
    fn f64s<R>(rows: &[R], f: impl Fn(&R) -> f64) -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(rows.iter().map(f)))
    }
    fn strs<'a, R>(rows: &'a [R], f: impl Fn(&'a R) -> &'a str) -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    }

    pub fn port_index(r: &[PortInfo]) -> Result<RecordBatch> {
        batch(
            "port_index",
            vec![
                u32s(r, |x| x.port),
                strs(r, |x| &x.link),
                strs(r, |x| &x.tier),
                strs(r, |x| &x.from),
                strs(r, |x| &x.to),
                u64s(r, |x| x.rate_bps),
                opt_u64s(r, |x| x.buffer_bytes),
            ],
        )
    }

    pub fn ports(r: &[PortSample]) -> Result<RecordBatch> {
        batch(
            "ports",
            vec![
                u64s(r, |x| x.t_start_ps),
                u64s(r, |x| x.t_end_ps),
                u32s(r, |x| x.port),
                f64s(r, |x| x.queue_mean_bytes),
                u64s(r, |x| x.queue_max_bytes),
                u64s(r, |x| x.bytes_sent),
                f64s(r, |x| x.utilisation),
                u64s(r, |x| x.drops),
                u64s(r, |x| x.ecn_marks),
                u64s(r, |x| x.trims),
                u64s(r, |x| x.link_losses),
            ],
        )
    }

    pub fn flows(r: &[FlowSample]) -> Result<RecordBatch> {
        batch(
            "flows",
            vec![
                u64s(r, |x| x.t_start_ps),
                u64s(r, |x| x.t_end_ps),
                u64s(r, |x| x.flow),
                opt_u64s(r, |x| x.cwnd_bytes),
                opt_u64s(r, |x| x.rate_bps),
                opt_u64s(r, |x| x.bytes_in_flight),
                u64s(r, |x| x.bytes_acked),
                u64s(r, |x| x.retransmissions),
                u32s(r, |x| x.paths),
            ],
        )
    }

    pub fn events(r: &[EventRecord]) -> Result<RecordBatch> {
        batch(
            "events",
            vec![
                u64s(r, |x| x.t_ps),
                strs(r, |x| x.kind.name()),
                Arc::new(UInt32Array::from_iter(r.iter().map(|x| x.port))),
                opt_u64s(r, |x| x.flow),
            ],
        )
    }

    /// Every table's column names, in order (the README documents each).
    #[cfg(test)]
    pub fn names(table: &str) -> Vec<&'static str> {
        fields(table).iter().map(|f| f.0).collect()
    }
}

/// Without Parquet the tables are only written as CSV; nothing to build.
#[cfg(not(feature = "parquet"))]
mod columns {
    use anyhow::Result;
    pub fn port_index<R>(_: &[R]) -> Result<()> {
        Ok(())
    }
    pub use port_index as events;
    pub use port_index as flows;
    pub use port_index as ports;
}

/// Runs `sc` as [`lbsim::run_with`] does; with `[telemetry]` on and a `dir`, its tables stream
/// into `dir` (a run's `DIR/telemetry`) and are in place when this returns, with their paths.
pub fn run(
    sc: lbsim::Scenario,
    dir: Option<&Path>,
    observe: &mut dyn FnMut(&lbsim::sim::Progress) -> bool,
) -> Result<(lbsim::RunOutput, Vec<PathBuf>)> {
    let files = match (&sc.telemetry, dir) {
        (Some(plan), Some(dir)) => Some(TableFiles::create(dir, plan)?),
        _ => None,
    };
    let Some(mut files) = files else {
        return Ok((lbsim::run_observed(sc, observe), Vec::new()));
    };
    let res = lbsim::run_with(sc, observe, Some(&mut files));
    Ok((res, files.finish()?))
}

/// A run's telemetry directory.
pub fn dir(run_dir: &Path) -> PathBuf {
    run_dir.join("telemetry")
}

/// The tables' names, in the order they are written.
pub const TABLES: [&str; 4] = ["port_index", "ports", "flows", "events"];

/// A table's column names as its CSV header gives them (the same in Parquet).
pub fn column_names(table: &str) -> Vec<String> {
    use lbsim::stats::telemetry::EventKind;
    let header = |w: &mut csv::Writer<Vec<u8>>| -> Result<()> {
        match table {
            "port_index" => w.serialize(PortInfo {
                port: 0,
                link: String::new(),
                tier: String::new(),
                from: String::new(),
                to: String::new(),
                rate_bps: 0,
                buffer_bytes: None,
            })?,
            "ports" => w.serialize(PortSample {
                t_start_ps: 0,
                t_end_ps: 0,
                port: 0,
                queue_area: 0,
                queue_mean_bytes: 0.0,
                queue_max_bytes: 0,
                bytes_sent: 0,
                utilisation: 0.0,
                drops: 0,
                ecn_marks: 0,
                trims: 0,
                link_losses: 0,
            })?,
            "flows" => w.serialize(FlowSample {
                t_start_ps: 0,
                t_end_ps: 0,
                flow: 0,
                cwnd_bytes: None,
                rate_bps: None,
                bytes_in_flight: None,
                bytes_acked: 0,
                retransmissions: 0,
                paths: 0,
            })?,
            _ => w.serialize(EventRecord {
                t_ps: 0,
                kind: EventKind::Drop,
                port: None,
                flow: None,
            })?,
        }
        Ok(())
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    header(&mut w).expect("a header");
    let bytes = w.into_inner().expect("in memory");
    let text = String::from_utf8(bytes).expect("utf-8");
    text.lines()
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "parquet")]
    #[test]
    fn parquet_and_csv_tables_have_the_same_columns() {
        for t in super::TABLES {
            assert_eq!(super::columns::names(t), super::column_names(t), "{t}");
        }
    }
}

//! `tessera read --format arrow|parquet --output FILE`: the cells as an Arrow IPC file or a
//! Parquet file (columns: dimensions then attributes, as `read` prints them; enumeration
//! attributes as dictionaries of their labels).

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use anyhow::{Context, Result};
use tessera::Array;
use tessera_arrow::{Projection, read_batches};

use crate::read_cmd::{FormatArg, ReadArgs, configure};

/// Under `--memory-budget`, the Parquet row group being encoded takes at most the budget over
/// this (the read's batches take their own share of it; an Arrow IPC file is written batch by
/// batch and holds nothing more).
const PARQUET_BUDGET_SHARE: u64 = 4;

/// Writes the cells `args` select to `output` in `format` (arrow or parquet).
pub(crate) fn run(array: &Array, args: &ReadArgs, format: FormatArg, output: &Path) -> Result<()> {
    let projection = Projection { dimensions: None, attributes: args.attrs.clone() };
    let mut failed = None;
    let batches = read_batches(array, &projection, |q| match configure(array, q, args) {
        Ok(q) => q,
        Err(e) => {
            failed = Some(e);
            array.read()
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let batches = batches?;
    let schema = batches.schema();
    let file = File::create(output).with_context(|| output.display().to_string())?;
    let file = BufWriter::new(file);
    let context = || format!("writing {}", output.display());
    let spinner = crate::progress::spinner(format!("writing {}", output.display()));
    let mut rows = 0;
    let mut counted = |n: usize| {
        rows += n;
        if let Some(bar) = &spinner {
            bar.set_message(format!("writing {}: {rows} cells", output.display()));
        }
    };
    match format {
        FormatArg::Parquet => {
            // Under a budget, the row group being encoded is one more thing the export holds:
            // it is written out once it takes its share (by the writer's estimate of its
            // encoded size, and of the memory its column writers hold).
            let limit = args.memory_budget.map(|b| usize::try_from(b / PARQUET_BUDGET_SHARE));
            let limit = limit.map(|l| l.unwrap_or(usize::MAX).max(1));
            let props = limit.map(|l| {
                parquet::file::properties::WriterProperties::builder()
                    .set_max_row_group_bytes(Some(l))
                    .build()
            });
            let mut writer =
                parquet::arrow::ArrowWriter::try_new(file, schema, props).with_context(context)?;
            for batch in batches {
                let batch = batch?;
                counted(batch.num_rows());
                writer.write(&batch).with_context(context)?;
                if let Some(l) = limit
                    && writer.memory_size() > l
                {
                    writer.flush().with_context(context)?;
                }
            }
            writer.close().with_context(context)?;
        }
        _ => {
            let mut writer =
                arrow_ipc::writer::FileWriter::try_new(file, &schema).with_context(context)?;
            for batch in batches {
                let batch = batch?;
                counted(batch.num_rows());
                writer.write(&batch).with_context(context)?;
            }
            writer.finish().with_context(context)?;
        }
    }
    Ok(())
}

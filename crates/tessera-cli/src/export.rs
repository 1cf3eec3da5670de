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
            let mut writer =
                parquet::arrow::ArrowWriter::try_new(file, schema, None).with_context(context)?;
            for batch in batches {
                let batch = batch?;
                counted(batch.num_rows());
                writer.write(&batch).with_context(context)?;
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

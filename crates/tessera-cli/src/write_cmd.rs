//! `tessera write`: the cells JSONL of `docs/cli.md` (what `read --format jsonl` prints)
//! into one fragment.
//!
//! The input is parsed whole ([`crate::cells_input`]) into one column per dimension and
//! attribute before anything is written, so bad input writes nothing. Each line is one cell,
//! a JSON object keyed by field name (blank lines are skipped):
//! * every attribute is required; null (`null`) only on nullable attributes;
//! * sparse arrays: every dimension too, cells in any order;
//! * dense arrays: the cells of the `--subarray` region (default: the whole domain) in its
//!   row-major order; dimension keys may be present and are then checked against the cell's
//!   position;
//! * values as [`crate::cells::cell_bytes`] reads them; an enumeration attribute takes its
//!   labels (mapped to their codes), or its codes with `--enum-codes`.
//!
//! Errors name the line (1-based) and the field.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use tessera::layers::types::Layout;
use tessera::{Array, ArraySchema};

use crate::cells_input::{DimRange, Subarray, as_int, parse_cells};
use crate::read_cmd::{bound_bytes, split_bounds};

/// The options of `tessera write`.
#[derive(Debug, Args)]
pub(crate) struct WriteArgs {
    /// The cells: JSONL as `tessera read --format jsonl` prints it, one object per cell
    /// (`-` for standard input). Every attribute is required (`null` where nullable);
    /// sparse cells carry every dimension, in any order; enumerations are given as labels.
    #[arg(long, value_name = "FILE.jsonl|-")]
    pub(crate) input: PathBuf,
    /// Dense arrays: the region written, `D=LO:HI` per dimension (comma-separated, or the
    /// option repeated; a dimension left out covers its whole domain). The cells come in
    /// row-major order of it.
    #[arg(long, value_name = "D=LO:HI,...")]
    pub(crate) subarray: Vec<String>,
    /// Timestamp of the fragment (ms since the epoch; default now).
    #[arg(long, value_name = "MS")]
    pub(crate) timestamp: Option<u64>,
    /// Enumeration attributes are given as their integer codes, not their labels.
    #[arg(long)]
    pub(crate) enum_codes: bool,
}

/// Runs `tessera write`.
pub(crate) fn run(array: &Array, args: &WriteArgs) -> Result<()> {
    let text = if args.input.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("reading the cells from standard input")?;
        s
    } else {
        std::fs::read_to_string(&args.input).with_context(|| args.input.display().to_string())?
    };
    let schema = array.schema();
    let subarray = if schema.is_dense() {
        Some(parse_subarray(schema, &args.subarray)?)
    } else if !args.subarray.is_empty() {
        bail!("--subarray is for dense arrays; cells of a sparse array carry their coordinates")
    } else {
        None
    };
    let spinner = crate::progress::spinner(format!("parsing {} bytes of cells", text.len()));
    let columns =
        parse_cells(schema, array.enumerations(), &text, subarray.as_ref(), args.enum_codes)
            .with_context(|| {
                if args.input.as_os_str() == "-" {
                    "standard input".to_owned()
                } else {
                    args.input.display().to_string()
                }
            })?;
    let mut q = array.write();
    if let Some(sub) = &subarray {
        for r in &sub.ranges {
            q = q.range_bytes(&r.dim, r.lo_bytes.clone(), r.hi_bytes.clone());
        }
        q = q.layout(Layout::RowMajor);
    } else {
        q = q.layout(Layout::Unordered);
    }
    // The array is open at the end of time (for its newest schema): the default timestamp is
    // now, not that end.
    q = q.timestamp(args.timestamp.unwrap_or_else(tessera::layers::types::names::now_ms));
    if let (Some(bar), Some(c)) = (&spinner, columns.first()) {
        bar.set_message(format!("writing {} cells", c.len()));
    }
    for c in columns {
        q = q.column(c);
    }
    q.submit()?;
    if let Some(bar) = spinner {
        bar.finish_and_clear();
    }
    Ok(())
}

/// Splits `text` at the commas outside double-quoted bounds.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, ch) in text.char_indices() {
        match ch {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// The `--subarray` ranges of a dense write, completed with the domain of the dimensions not
/// given.
fn parse_subarray(schema: &ArraySchema, args: &[String]) -> Result<Subarray> {
    let mut given: HashMap<&str, (Vec<u8>, Vec<u8>)> = HashMap::new();
    for arg in args {
        for part in split_top_level(arg).into_iter().filter(|p| !p.trim().is_empty()) {
            let part = part.trim();
            let (dim, bounds) = part
                .split_once('=')
                .with_context(|| format!("--subarray {part:?}: expected D=LO:HI"))?;
            let d = schema
                .dimension(dim)
                .with_context(|| format!("--subarray {part:?}: no dimension {dim:?}"))?;
            let (lo, hi) = split_bounds(bounds).with_context(|| format!("--subarray {part:?}"))?;
            let lo = bound_bytes(d.datatype, d.is_var(), &lo)
                .with_context(|| format!("--subarray {part:?}"))?;
            let hi = bound_bytes(d.datatype, d.is_var(), &hi)
                .with_context(|| format!("--subarray {part:?}"))?;
            if given.insert(&d.name, (lo, hi)).is_some() {
                bail!("--subarray: dimension {dim:?} given twice (a dense write takes one range)");
            }
        }
    }
    let mut ranges = Vec::with_capacity(schema.dimensions.len());
    for d in &schema.dimensions {
        let (lo_bytes, hi_bytes) = match given.remove(d.name.as_str()) {
            Some(r) => r,
            None => {
                let [lo, hi] = d.domain.clone().with_context(|| {
                    format!("--subarray: dimension {:?} has no domain; give its range", d.name)
                })?;
                (lo, hi)
            }
        };
        let bound = |b: &[u8]| {
            as_int(d.datatype, b).with_context(|| {
                format!(
                    "--subarray: dimension {:?} ({}) is not an integer dimension",
                    d.name, d.datatype
                )
            })
        };
        let (lo, hi) = (bound(&lo_bytes)?, bound(&hi_bytes)?);
        if lo > hi {
            bail!("--subarray: dimension {:?}: low bound {lo} is above high bound {hi}", d.name);
        }
        ranges.push(DimRange {
            dim: d.name.clone(),
            datatype: d.datatype,
            lo,
            hi,
            lo_bytes,
            hi_bytes,
        });
    }
    Ok(Subarray { ranges })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subarray_parts() {
        assert_eq!(split_top_level("a=1:2,b=3:4"), ["a=1:2", "b=3:4"]);
        assert_eq!(split_top_level(r#"s="x,y":"z""#), [r#"s="x,y":"z""#]);
        assert_eq!(split_top_level(r#"s="x\",":z,t=1:2"#), [r#"s="x\",":z"#, "t=1:2"]);
    }
}

//! `tessera verify ARRAY`: decode every tile of every fragment, check checksums, sizes,
//! offsets and commits; print each problem with its file and offset, then a summary line;
//! fail when there is an error (warnings alone, such as the folder of an interrupted write,
//! do not fail).

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use tessera::layers::query::verify::{self, Options, Report};

use crate::location::Location;

/// `tessera verify ARRAY`.
pub(crate) fn run(array: &Path) -> Result<()> {
    let storage = Location::of(array)?.storage();
    let bar = progress_bar();
    let mut options = Options::default();
    if let Some(bar) = &bar {
        let bar = bar.clone();
        options.progress = Some(Arc::new(move |done, total| {
            if bar.is_hidden() {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
            bar.set_length(total);
            bar.set_position(done);
        }));
    }
    let report = verify::verify(storage.as_ref(), &options);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = report.with_context(|| array.display().to_string())?;
    let mut out = std::io::stdout().lock();
    let printed = report
        .problems
        .iter()
        .try_for_each(|p| writeln!(out, "{p}"))
        .and_then(|()| writeln!(out, "{}", summary(&report)));
    match printed {
        // A closed pipe (`| head`) only cuts the listing short.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            return Err(e).context("writing to standard output");
        }
        _ => {}
    }
    let errors = report.errors().count();
    if errors > 0 {
        bail!(
            "{}: {errors} {} found",
            array.display(),
            if errors == 1 { "error" } else { "errors" }
        );
    }
    Ok(())
}

/// A byte progress bar on standard error when it is a terminal.
fn progress_bar() -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::hidden());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{spinner} verifying [{bar:40}] {bytes}/{total_bytes} ({eta})",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    Some(bar)
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The last line: what was verified and how many problems.
fn summary(report: &Report) -> String {
    let s = &report.summary;
    let errors = report.errors().count() as u64;
    let warnings = report.warnings().count() as u64;
    let mut line = format!(
        "verified {}, {}, {} ({}, {} bytes), {}",
        plural(s.schemas as u64, "schema", "schemas"),
        plural(s.commit_files as u64, "commit file", "commit files"),
        plural(s.fragments as u64, "fragment", "fragments"),
        plural(s.tiles, "tile", "tiles"),
        s.bytes,
        plural(s.metadata_files as u64, "metadata file", "metadata files"),
    );
    if s.uncommitted_fragments > 0 {
        line.push_str(&format!(
            "; {} not committed",
            plural(s.uncommitted_fragments as u64, "fragment folder", "fragment folders")
        ));
    }
    line.push_str(&format!(
        ": {}, {}",
        plural(errors, "error", "errors"),
        plural(warnings, "warning", "warnings")
    ));
    line
}

//! `tessera consolidate` and `tessera vacuum`: one consolidation or vacuum mode on an array,
//! a progress bar on a terminal, a one-line summary on standard output.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use tessera::Storage;
use tessera::layers::query::consolidate::{self, Mode, Options, Report};

use crate::location::Location;

/// A consolidation or vacuum mode, as libtiledb's `sm.consolidation.mode` / `sm.vacuum.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum ModeArg {
    /// Fragments into one fragment.
    #[default]
    Fragments,
    /// Commit files into one `.con` file.
    Commits,
    /// Fragment footers into one `__fragment_meta/*.meta` file.
    #[value(alias = "fragment_meta")]
    FragmentMeta,
    /// Array metadata files into one.
    #[value(alias = "array_meta")]
    ArrayMeta,
}

impl ModeArg {
    fn mode(self) -> Mode {
        match self {
            ModeArg::Fragments => Mode::Fragments,
            ModeArg::Commits => Mode::Commits,
            ModeArg::FragmentMeta => Mode::FragmentMeta,
            ModeArg::ArrayMeta => Mode::ArrayMeta,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ModeArg::Fragments => "fragments",
            ModeArg::Commits => "commits",
            ModeArg::FragmentMeta => "fragment-meta",
            ModeArg::ArrayMeta => "array-meta",
        }
    }

    /// What the inputs of a consolidation in this mode are, in the plural.
    fn inputs(self) -> &'static str {
        match self {
            ModeArg::Fragments => "fragments",
            ModeArg::Commits => "commit files",
            ModeArg::FragmentMeta => "fragment footers",
            ModeArg::ArrayMeta => "metadata files",
        }
    }
}

/// The options of `tessera consolidate`.
#[derive(Debug, Args)]
pub(crate) struct ConsolidateArgs {
    /// What to consolidate.
    #[arg(long, value_enum, default_value_t)]
    mode: ModeArg,
    /// Consolidate only what lies in the time range START:END (ms since the epoch), as
    /// libtiledb's `sm.consolidation.timestamp_start` / `_end` (fragments and array-meta
    /// modes; commits and fragment-meta always take everything, as in libtiledb).
    #[arg(long, value_name = "START:END")]
    between: Option<String>,
    /// Drop deleted cells instead of keeping them with their delete metadata (fragments
    /// mode; libtiledb's `sm.consolidation.purge_deleted_cells`).
    #[arg(long)]
    purge_deleted: bool,
    /// Consolidate exactly these fragments (names as `tessera fragments` shows them,
    /// comma-separated), as libtiledb's `consolidate(uri, fragment_uris=...)`.
    #[arg(long, value_name = "N1,N2,...", value_delimiter = ',', conflicts_with = "between")]
    fragments: Vec<String>,
    /// The most merge steps, each writing one fragment (`sm.consolidation.steps`; default:
    /// as many as needed).
    #[arg(long, value_name = "N")]
    steps: Option<u32>,
    /// The fewest fragments one step merges (`sm.consolidation.step_min_frags`; default: all
    /// of them).
    #[arg(long, value_name = "N")]
    step_min_frags: Option<u32>,
    /// The most fragments one step merges (`sm.consolidation.step_max_frags`; default: all of
    /// them).
    #[arg(long, value_name = "N")]
    step_max_frags: Option<u32>,
    /// The smallest size ratio (smaller over larger) of two adjacent fragments merged in one
    /// step, 0 to 1 (`sm.consolidation.step_size_ratio`; default 0).
    #[arg(long, value_name = "R")]
    step_size_ratio: Option<f32>,
    /// Dense arrays: the most cells the merged fragment may cover per cell its inputs cover
    /// (`sm.consolidation.amplification`; default 1).
    #[arg(long, value_name = "A")]
    amplification: Option<f32>,
    /// Fragments mode: merge holding about this many bytes (read batches, decoded tiles,
    /// tiles waiting to be written; a sparse merge holds one tile per input fragment
    /// whatever the budget).
    #[arg(long, value_name = "BYTES")]
    memory_budget: Option<u64>,
}

/// The options of `tessera vacuum`.
#[derive(Debug, Args)]
pub(crate) struct VacuumArgs {
    /// What to vacuum: what a consolidation in this mode made obsolete.
    #[arg(long, value_enum, default_value_t)]
    mode: ModeArg,
}

/// The storage of the array at `array` (a folder or an object-store URI).
fn storage(array: &Path) -> Result<Arc<dyn Storage>> {
    Ok(Location::of(array)?.storage())
}

/// A progress bar on standard error when it is a terminal.
fn progress_bar() -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    // Hidden until the first report gives the total.
    let bar =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::hidden());
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{spinner} {msg} [{bar:40}] {pos}/{len} ({eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    Some(bar)
}

/// `tessera consolidate ARRAY [--mode M] [--between S:E] [--purge-deleted] [--steps N]
/// [--step-min-frags N] [--step-max-frags N] [--step-size-ratio R] [--amplification A]
/// [--memory-budget BYTES]`.
pub(crate) fn run_consolidate(array: &Path, args: &ConsolidateArgs) -> Result<()> {
    let range = match &args.between {
        None => None,
        Some(b) => {
            let (s, e) = b.split_once(':').context("--between expects START:END")?;
            Some((
                s.parse::<u64>().context("--between START")?,
                e.parse::<u64>().context("--between END")?,
            ))
        }
    };
    let bar = progress_bar();
    let step_settings = [
        args.steps.is_some(),
        args.step_min_frags.is_some(),
        args.step_max_frags.is_some(),
        args.step_size_ratio.is_some(),
        args.amplification.is_some(),
    ];
    if step_settings.contains(&true)
        && (args.mode != ModeArg::Fragments || !args.fragments.is_empty())
    {
        anyhow::bail!(
            "--steps, --step-min-frags, --step-max-frags, --step-size-ratio and --amplification \
             choose fragments to merge: they are for --mode fragments without --fragments"
        );
    }
    let defaults = Options::default();
    let mut options = Options {
        range,
        purge_deleted: args.purge_deleted,
        steps: args.steps.unwrap_or(defaults.steps),
        step_min_frags: args.step_min_frags.unwrap_or(defaults.step_min_frags),
        step_max_frags: args.step_max_frags.unwrap_or(defaults.step_max_frags),
        step_size_ratio: args.step_size_ratio.unwrap_or(defaults.step_size_ratio),
        amplification: args.amplification.unwrap_or(defaults.amplification),
        memory_budget: args.memory_budget,
        progress: None,
    };
    if let Some(bar) = &bar {
        bar.set_message(format!("consolidating {}", args.mode.inputs()));
        let bar = bar.clone();
        options.progress = Some(Arc::new(move |done, total| {
            if bar.is_hidden() {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
            bar.set_length(total);
            bar.set_position(done);
        }));
    }
    let report = if args.fragments.is_empty() {
        consolidate::consolidate(storage(array)?, args.mode.mode(), &options)
    } else {
        if args.mode != ModeArg::Fragments {
            anyhow::bail!("--fragments is for --mode fragments");
        }
        let names: Vec<&str> = args.fragments.iter().map(String::as_str).collect();
        consolidate::consolidate_fragments(storage(array)?, &names, &options)
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = report.with_context(|| array.display().to_string())?;
    outln!("{}", consolidate_summary(args.mode, &report))?;
    Ok(())
}

fn consolidate_summary(mode: ModeArg, report: &Report) -> String {
    if !report.steps.is_empty() {
        let steps: Vec<String> = report
            .steps
            .iter()
            .enumerate()
            .map(|(i, (inputs, out))| {
                format!("step {}: {} {} into {out}", i + 1, inputs.len(), mode.inputs())
            })
            .collect();
        return format!("consolidated in {} steps; {}", steps.len(), steps.join("; "));
    }
    match &report.output {
        Some(out) => format!("consolidated {} {} into {out}", report.inputs.len(), mode.inputs()),
        None => format!("nothing to consolidate (mode {})", mode.name()),
    }
}

/// `tessera vacuum ARRAY [--mode M]`.
pub(crate) fn run_vacuum(array: &Path, args: &VacuumArgs) -> Result<()> {
    let report = consolidate::vacuum(storage(array)?.as_ref(), args.mode.mode())
        .with_context(|| array.display().to_string())?;
    let mut line = if report.inputs.is_empty() {
        format!("nothing to vacuum (mode {})", args.mode.name())
    } else {
        let n = report.inputs.len();
        format!(
            "vacuumed {n} {} (mode {})",
            if n == 1 { "file or folder" } else { "files and folders" },
            args.mode.name()
        )
    };
    if let Some(ign) = &report.output {
        line.push_str(&format!("; wrote {ign}"));
    }
    outln!("{line}")?;
    Ok(())
}

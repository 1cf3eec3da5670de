//! `tessera`: the command line for TileDB arrays (see `docs/cli.md` for the contract).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

/// `println!` that returns the write's error (a closed pipe, a full disk) instead of
/// panicking; [`main`] turns a closed pipe into a quiet exit. Every command prints through
/// it, `out!` or its own `Write` of standard output.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

/// `print!` as `outln!` is `println!`.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*)
    }};
}

mod aggregate_cmd;
mod cells;
mod cells_input;
mod consolidate_cmd;
mod evolve_cmd;
#[cfg(feature = "export")]
mod export;
#[cfg(not(feature = "export"))]
#[path = "export_disabled.rs"]
mod export;
mod fragments_cmd;
mod group_cmd;
mod location;
mod ls_cmd;
mod meta_cmd;
mod picture;
mod progress;
mod read_cmd;
mod schema_cmd;
#[cfg(feature = "sql")]
mod sql_cluster;
#[cfg(feature = "sql")]
mod sql_cmd;
#[cfg(not(feature = "sql"))]
#[path = "sql_disabled.rs"]
mod sql_cmd;
mod verify_cmd;
mod write_cmd;

/// Inspect, create, read and write TileDB arrays.
#[derive(Debug, Parser)]
#[command(name = "tessera", version, about)]
struct Cli {
    /// The 32-byte AES-256-GCM key of encrypted arrays and groups, read from FILE (32
    /// characters or 64 hex digits; default: the TESSERA_ENCRYPTION_KEY variable). Arrays and
    /// groups created or written with a key are encrypted.
    #[arg(long, global = true, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// When the command ends, print its wall time and the process's peak memory (resident
    /// set, on Linux) to standard error: what a `--memory-budget` bounds.
    #[arg(long, global = true)]
    stats: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print an array's schema.
    Schema {
        /// The array's folder.
        array: PathBuf,
        /// Print the schema JSON of docs/cli.md instead of a summary.
        #[arg(long)]
        json: bool,
        /// The schema in force at this time (ms since the epoch; default now).
        #[arg(long)]
        at: Option<u64>,
    },
    /// Summarise an array: schema, fragments, non-empty domain, sizes.
    Info {
        /// The array's folder.
        array: PathBuf,
        /// Open the array as it was at this time (ms since the epoch).
        #[arg(long)]
        at: Option<u64>,
    },
    /// List the fragments an array shows.
    Fragments {
        /// The array's folder.
        array: PathBuf,
        /// Print the JSON of docs/cli.md instead of a table.
        #[arg(long, conflicts_with = "svg")]
        json: bool,
        /// Draw each fragment's non-empty domain over the array's domain (first two
        /// dimensions), coloured by timestamp, as an SVG file.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        /// Open the array as it was at this time (ms since the epoch).
        #[arg(long)]
        at: Option<u64>,
    },
    /// Draw an attribute as a PNG: a 2-D slice of a dense array as a heat map with a colour
    /// bar, sparse cells as a scatter coloured by the value.
    Show {
        /// The array's folder.
        array: PathBuf,
        /// The attribute (one number per cell).
        #[arg(long)]
        attr: String,
        /// `DIM=LO:HI` (inclusive; repeat): the slice to draw (all but two dimensions fixed).
        #[arg(long = "range", value_name = "DIM=LO:HI")]
        ranges: Vec<String>,
        /// Open the array as it was at this time (ms since the epoch).
        #[arg(long)]
        at: Option<u64>,
        /// The PNG file to write.
        #[arg(long, value_name = "FILE")]
        png: PathBuf,
    },
    /// Show the physical layout: per fragment and field, the files and their tiles.
    Layout {
        /// The array's folder.
        array: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Read cells.
    Read {
        /// The array's folder.
        array: PathBuf,
        #[command(flatten)]
        args: read_cmd::ReadArgs,
        /// Open the array as it was at this time (ms since the epoch).
        #[arg(long, conflicts_with = "between")]
        at: Option<u64>,
        /// Open the array for the time range START:END (ms since the epoch).
        #[arg(long, value_name = "START:END")]
        between: Option<String>,
    },
    /// Aggregate the cells a read selects: count, sum, min, max, mean, null count.
    Aggregate {
        /// The array's folder.
        array: PathBuf,
        #[command(flatten)]
        args: aggregate_cmd::AggregateArgs,
        /// Open the array as it was at this time (ms since the epoch).
        #[arg(long, conflicts_with = "between")]
        at: Option<u64>,
        /// Open the array for the time range START:END (ms since the epoch).
        #[arg(long, value_name = "START:END")]
        between: Option<String>,
    },
    /// Read or change the metadata of an array or a group.
    Meta {
        /// The array's (or group's) folder.
        array: PathBuf,
        /// What to do (default: list).
        #[command(subcommand)]
        action: Option<meta_cmd::MetaAction>,
        /// Read the metadata as it was at this time (ms since the epoch).
        #[arg(long, global = true)]
        at: Option<u64>,
        /// Print JSON.
        #[arg(long, global = true)]
        json: bool,
    },
    /// Write cells (the cells JSONL of `read --format jsonl`) as one fragment.
    Write {
        /// The array's folder.
        array: PathBuf,
        #[command(flatten)]
        args: write_cmd::WriteArgs,
    },
    /// Delete the cells of a sparse array that match a condition (a delete commit).
    Delete {
        /// The array's folder.
        array: PathBuf,
        /// The cells to delete, e.g. `a == 15 and s is not null` (the `--where` grammar of
        /// `read`).
        #[arg(long = "where", value_name = "EXPR", required = true)]
        condition: String,
        /// Timestamp of the delete (ms since the epoch; default now): it removes the
        /// matching cells written at or before it.
        #[arg(long, value_name = "MS")]
        timestamp: Option<u64>,
    },
    /// Consolidate an array: fragments, commit files, fragment footers or array metadata
    /// (libtiledb's consolidation modes).
    Consolidate {
        /// The array's folder.
        array: PathBuf,
        #[command(flatten)]
        args: consolidate_cmd::ConsolidateArgs,
    },
    /// Remove what a consolidation made obsolete (in the same mode).
    Vacuum {
        /// The array's folder.
        array: PathBuf,
        #[command(flatten)]
        args: consolidate_cmd::VacuumArgs,
    },
    /// List the TileDB groups and arrays under a path as a tree: members, types, group
    /// metadata.
    Ls {
        /// A group, an array, or a folder holding some (searched below plain folders).
        path: PathBuf,
        /// Print one JSON object per group or array found (docs/cli.md), members nested.
        #[arg(long)]
        json: bool,
    },
    /// Create a group, or add and remove its members.
    Group {
        #[command(subcommand)]
        action: group_cmd::GroupAction,
    },
    /// Check an array on disk: decode every tile of every fragment (checksums included),
    /// check file sizes, tile offsets, statistics and commits; print each problem with its
    /// file and byte offset, and fail if any is an error.
    Verify {
        /// The array's folder.
        array: PathBuf,
    },
    /// Run SQL over arrays (DataFusion's dialect): each `--table NAME=ARRAY` is a table of
    /// the array's dimensions, then attributes.
    Sql {
        #[command(flatten)]
        args: sql_cmd::SqlArgs,
    },
    /// Evolve an array's schema (libtiledb's ArraySchemaEvolution): add or drop attributes,
    /// add, extend or drop enumerations, expand the current domain; one new schema file.
    Evolve {
        /// The array's folder.
        array: PathBuf,
        #[command(flatten)]
        args: evolve_cmd::EvolveArgs,
    },
    /// Delete fragments, by time range or by name, as libtiledb's delete_fragments /
    /// delete_fragments_list (fragments inside consolidated commits through an `.ign` file).
    DeleteFragments {
        /// The array's folder.
        array: PathBuf,
        /// Delete the fragments whose timestamp range lies inside START:END (ms).
        #[arg(
            long,
            value_name = "START:END",
            conflicts_with = "names",
            required_unless_present = "names"
        )]
        between: Option<String>,
        /// Delete these fragments (names as `tessera fragments` shows them, comma-separated).
        #[arg(long, value_name = "N1,N2,...", value_delimiter = ',')]
        names: Vec<String>,
    },
    /// Delete a whole array, as libtiledb's tiledb_array_delete (files that are not
    /// TileDB's stay; the folder goes when it is left empty).
    DeleteArray {
        /// The array's folder.
        array: PathBuf,
    },
    /// Upgrade an array older than format version 22 as libtiledb's upgrade_version: its
    /// newest schema rewritten at version 22, the folders of format 12 on made.
    Upgrade {
        /// The array's folder.
        array: PathBuf,
    },
    /// Create an empty array from schema JSON.
    Create {
        /// The folder to create the array in.
        array: PathBuf,
        /// The schema JSON file (`-` for standard input).
        #[arg(long)]
        schema: PathBuf,
    },
}

/// The exit status after standard output was closed early (`tessera read ... | head`): what
/// a process killed by `SIGPIPE` reports in a shell (128 + 13), as coreutils do.
const BROKEN_PIPE_STATUS: u8 = 141;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stats = cli.stats.then(std::time::Instant::now);
    let result = run(cli);
    if let Some(start) = stats {
        print_stats(start);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of standard output went away: nothing more to say, to anyone.
        Err(e) if is_broken_pipe(&e) => ExitCode::from(BROKEN_PIPE_STATUS),
        Err(e) => {
            eprintln!("tessera: {}", error_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// `--stats`: the command's wall time and, where the system reports it (Linux's
/// `/proc/self/status`), the peak resident set size.
fn print_stats(start: std::time::Instant) {
    let secs = start.elapsed().as_secs_f64();
    let peak_kb = std::fs::read_to_string("/proc/self/status").ok().and_then(|status| {
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()
    });
    match peak_kb {
        Some(kb) => eprintln!("tessera: stats: {secs:.3} s, peak RSS {kb} KiB"),
        None => eprintln!("tessera: stats: {secs:.3} s"),
    }
}

/// Whether `e` (or one of its causes) is a write to a closed pipe, directly or through
/// serde_json's writer.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    e.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(BrokenPipe))
    })
}

/// The error and its causes on one line, as `{e:#}` prints them, except that a cause the line
/// already ends with is not repeated (the engine's file errors print their cause and also
/// return it as their source).
fn error_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

fn run(cli: Cli) -> Result<()> {
    if let Some(key) = location::encryption_key(cli.key_file.as_deref())? {
        location::set_encryption_key(key);
    }
    match cli.command {
        Command::Schema { array, json, at } => {
            let opened = open(&array, at)?;
            let text = if json { schema_cmd::json(&opened)? } else { schema_cmd::summary(&opened) };
            outln!("{text}")?;
        }
        Command::Info { array, at } => {
            let opened = open(&array, at)?;
            outln!(
                "{}",
                fragments_cmd::info(&opened).with_context(|| array.display().to_string())?
            )?;
        }
        Command::Fragments { array, json, svg, at } => {
            let opened = open(&array, at)?;
            let text = if let Some(svg) = svg {
                let name = array.file_name().unwrap_or_default().to_string_lossy();
                let text = picture::fragments_svg(&opened, &name)
                    .with_context(|| array.display().to_string())?;
                std::fs::write(&svg, text).with_context(|| svg.display().to_string())?;
                format!("wrote {}: {} fragments", svg.display(), opened.fragments().len())
            } else if json {
                serde_json::to_string(
                    &fragments_cmd::fragments_json(&opened)
                        .with_context(|| array.display().to_string())?,
                )?
            } else {
                fragments_cmd::fragments_table(&opened)
                    .with_context(|| array.display().to_string())?
            };
            outln!("{text}")?;
        }
        Command::Show { array, attr, ranges, at, png } => {
            let opened = open(&array, at)?;
            let name = array.file_name().unwrap_or_default().to_string_lossy();
            let shown = read_cmd::with_ranges(opened.schema(), opened.read(), &ranges)
                .and_then(|q| Ok(q.attributes([attr.as_str()]).with_coordinates(true).execute()?))
                .and_then(|cells| picture::show_png(&opened, &name, &cells, &attr, &png))
                .with_context(|| array.display().to_string())?;
            outln!(
                "wrote {}: {} x {} pixels, {} cells, {attr} from {} (bottom of the bar) to {} (top)",
                png.display(),
                shown.size.0,
                shown.size.1,
                shown.cells,
                shown.range.0,
                shown.range.1
            )?;
        }
        Command::Layout { array, json } => {
            let opened = open(&array, None)?;
            let text = if json {
                serde_json::to_string_pretty(
                    &fragments_cmd::layout_json(&opened)
                        .with_context(|| array.display().to_string())?,
                )?
            } else {
                fragments_cmd::layout_text(&opened).with_context(|| array.display().to_string())?
            };
            outln!("{text}")?;
        }
        Command::Read { array, args, at, between } => {
            let opened = open_in(&array, at, between.as_deref())?;
            read_cmd::run(&opened, &args).with_context(|| array.display().to_string())?;
        }
        Command::Aggregate { array, args, at, between } => {
            let opened = open_in(&array, at, between.as_deref())?;
            aggregate_cmd::run(&opened, &args).with_context(|| array.display().to_string())?;
        }
        Command::Meta { array, action, at, json } => {
            let target = meta_cmd::open_target(&array, at)?;
            meta_cmd::run(&target, action.unwrap_or(meta_cmd::MetaAction::List), json)
                .with_context(|| array.display().to_string())?;
        }
        Command::Ls { path, json } => ls_cmd::run(&path, json)?,
        Command::Group { action } => group_cmd::run(action)?,
        Command::Write { array, args } => {
            // libtiledb writes with the newest schema (by file name), whatever its timestamp.
            let opened = open(&array, Some(u64::MAX))?;
            write_cmd::run(&opened, &args).with_context(|| array.display().to_string())?;
        }
        Command::Delete { array, condition, timestamp } => {
            let opened = open(&array, None)?;
            let mut q = opened.delete().where_text(&condition);
            if let Some(t) = timestamp {
                q = q.timestamp(t);
            }
            q.submit().with_context(|| array.display().to_string())?;
        }
        Command::Consolidate { array, args } => consolidate_cmd::run_consolidate(&array, &args)?,
        Command::Vacuum { array, args } => consolidate_cmd::run_vacuum(&array, &args)?,
        Command::Evolve { array, args } => evolve_cmd::run(&array, &args)?,
        Command::DeleteFragments { array, between, names } => {
            let location = location::Location::of(&array)?;
            let storage = location.storage();
            let deleted = match between {
                Some(b) => {
                    let (s, e) = b.split_once(':').context("--between expects START:END")?;
                    let (s, e) = (
                        s.parse::<u64>().context("--between START")?,
                        e.parse::<u64>().context("--between END")?,
                    );
                    tessera::layers::query::delete_fragments_between(storage.as_ref(), s, e)
                }
                None => {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    tessera::layers::query::delete_fragments_list(storage.as_ref(), &names)
                }
            }
            .with_context(|| location.name())?;
            outln!("deleted {} fragment(s)", deleted.len())?;
        }
        Command::Upgrade { array } => {
            let location = location::Location::of(&array)?;
            let upgraded = tessera::layers::query::upgrade_version(location.storage().as_ref())
                .with_context(|| location.name())?;
            match upgraded {
                Some(name) => outln!("upgraded to format version 22: __schema/{name}")?,
                None => outln!("already at format version 22: nothing to do")?,
            }
        }
        Command::DeleteArray { array } => location::Location::of(&array)?.delete_array()?,
        Command::Verify { array } => verify_cmd::run(&array)?,
        Command::Sql { args } => sql_cmd::run(&args, |path| open(path, None))?,
        Command::Create { array, schema } => {
            let text = if schema.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())
                    .context("reading the schema from standard input")?
            } else {
                std::fs::read_to_string(&schema).with_context(|| schema.display().to_string())?
            };
            let (parsed, enumerations) = tessera::layers::schema::json::from_json_str(&text)
                .with_context(|| schema.display().to_string())?;
            location::Location::of(&array)?.create_array(&parsed, &enumerations)?;
        }
    }
    Ok(())
}

/// Opens `array` for `--between START:END`, or as [`open`] does.
fn open_in(
    array: &std::path::Path,
    at: Option<u64>,
    between: Option<&str>,
) -> Result<tessera::Array> {
    let Some(b) = between else { return open(array, at) };
    let (s, e) = b.split_once(':').context("--between expects START:END")?;
    let (s, e) =
        (s.parse::<u64>().context("--between START")?, e.parse::<u64>().context("--between END")?);
    location::Location::of(array)?.open_array(None, Some((s, e)))
}

/// Opens `array` now, or as it was at `at`.
fn open(array: &std::path::Path, at: Option<u64>) -> Result<tessera::Array> {
    location::Location::of(array)?.open_array(at, None)
}

//! `tessera`: the command line for TileDB arrays (see `shared/cli.md` for the contract).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

mod schema_cmd;

/// Inspect, create, read and write TileDB arrays.
#[derive(Debug, Parser)]
#[command(name = "tessera", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print an array's schema.
    Schema {
        /// The array's folder.
        array: PathBuf,
        /// Print the schema JSON of cli.md instead of a summary.
        #[arg(long)]
        json: bool,
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tessera: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Schema { array, json } => {
            let opened = tessera::open(&array).with_context(|| array.display().to_string())?;
            let text = if json { schema_cmd::json(&opened)? } else { schema_cmd::summary(&opened) };
            println!("{text}");
        }
        Command::Create { array, schema } => {
            let text = if schema.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())
                    .context("reading the schema from standard input")?
            } else {
                std::fs::read_to_string(&schema).with_context(|| schema.display().to_string())?
            };
            let (parsed, enumerations) = tessera::layers::schema::json::from_json_str(&text)
                .with_context(|| schema.display().to_string())?;
            tessera::create_with_enumerations(&array, &parsed, &enumerations)
                .with_context(|| array.display().to_string())?;
        }
    }
    Ok(())
}

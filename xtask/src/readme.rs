//! The README-commands step of `cargo xtask test`: every `tessera` command in the README's
//! `sh` code blocks runs against `testdata` (with `cargo run -p tessera-cli --` read as
//! `tessera`), so that the README cannot drift from the command line.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The `sh` code blocks of `markdown` that hold `tessera` commands, as scripts: prompts
/// (`$ `) removed, `cargo run -p tessera-cli --` read as `tessera`, lines that run other
/// programs (`cargo`, `pip`, `export`) left out. Blocks on `s3://` need a bucket and are
/// returned as `Err(first line)`.
pub(crate) fn scripts(markdown: &str) -> Vec<Result<String, String>> {
    let mut out = Vec::new();
    let mut block: Option<Vec<String>> = None;
    for line in markdown.lines() {
        match (&mut block, line.trim_start().strip_prefix("```")) {
            (None, Some(lang)) if lang.trim() == "sh" => block = Some(Vec::new()),
            (Some(lines), Some(_)) => {
                let text = lines.join("\n");
                if text.lines().any(|l| l.starts_with("tessera ")) {
                    if text.contains("s3://") {
                        out.push(Err(text
                            .lines()
                            .find(|l| l.starts_with("tessera "))
                            .unwrap_or_default()
                            .to_owned()));
                    } else {
                        out.push(Ok(text));
                    }
                }
                block = None;
            }
            (Some(lines), None) => {
                let l = line.strip_prefix("$ ").unwrap_or(line);
                let l = l.replace("cargo run -p tessera-cli -- ", "tessera ");
                let other = ["cargo ", "pip ", "export "].iter().any(|p| l.starts_with(p));
                if !other {
                    lines.push(l);
                }
            }
            _ => {}
        }
    }
    out
}

/// Runs every script of the README with `tessera` (the binary) first on the path, in a fresh
/// folder under `target/` holding a link to `testdata` (`/tmp/` in a command means that
/// folder).
pub(crate) fn run_readme_commands(root: &Path, tessera: &Path, target: &Path) -> Result<()> {
    let readme = std::fs::read_to_string(root.join("README.md")).context("README.md")?;
    let dir = target.join("readme-commands");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| dir.display().to_string())?;
    }
    std::fs::create_dir_all(&dir)?;
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("testdata"), dir.join("testdata"))?;
    let bin_dir = tessera.parent().context("the tessera binary's folder")?;
    let path = std::env::join_paths(
        std::iter::once(bin_dir.to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )?;
    let (mut ran, mut skipped) = (0, Vec::new());
    for script in scripts(&readme) {
        let script = match script {
            Ok(s) => s.replace("/tmp/", &format!("{}/", dir.display())),
            Err(first) => {
                skipped.push(first);
                continue;
            }
        };
        println!("xtask: README commands:\n{script}");
        let out = Command::new("sh")
            .args(["-e", "-c", &script])
            .current_dir(&dir)
            .env("PATH", &path)
            .output()
            .context("running sh")?;
        if !out.status.success() {
            bail!(
                "a README command failed:\n{script}\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        ran += 1;
    }
    println!(
        "xtask: README commands: {ran} blocks ran; skipped (they need an S3 bucket): {skipped:?}"
    );
    if ran == 0 {
        bail!("no tessera command found in README.md's sh blocks");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_become_scripts() {
        let md = "text\n```sh\n# c\ncargo run -p tessera-cli -- read a\ncargo xtask test\n```\n\
                  ```sh\n$ cat > s.json <<'J'\n{}\nJ\n$ tessera create g --schema s.json\n```\n\
                  ```sh\ntessera read s3://b/a\n```\n```rust\ntessera x\n```\n```sh\npip install x\n```\n";
        let got = scripts(md);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0], Ok("# c\ntessera read a".to_owned()));
        assert_eq!(
            got[1],
            Ok("cat > s.json <<'J'\n{}\nJ\ntessera create g --schema s.json".to_owned())
        );
        assert_eq!(got[2], Err("tessera read s3://b/a".to_owned()));
    }
}

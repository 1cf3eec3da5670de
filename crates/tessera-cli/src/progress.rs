//! Spinners for long work whose total is unknown up front (parsing a large input, writing a
//! fragment, exporting a read), on standard error when it is a terminal only.

use std::io::IsTerminal;
use std::time::Duration;

/// A spinner showing `message` and the time spent, or `None` when standard error is not a
/// terminal (so scripts and tests see nothing).
pub(crate) fn spinner(message: impl Into<String>) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(message.into());
    bar.enable_steady_tick(Duration::from_millis(120));
    Some(bar)
}

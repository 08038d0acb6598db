//! What the commands print, in one place: standard output and standard error through
//! [`crate::redact::scrub`], the log's writer likewise, and whether colours are wanted.
//!
//! A closed standard output (`aro-gitops validate . | head -1`) ends the command quietly, as it ends
//! `cat`: no panic, no message, exit status [`CLOSED_STDOUT_EXIT`] (128 + SIGPIPE, what a shell shows
//! for `cat`).

use crate::redact;
use std::io::{IsTerminal, Write};

/// The exit status when standard output was closed by its reader.
pub const CLOSED_STDOUT_EXIT: i32 = 141;

/// Prints `text` on standard output, redacted.
pub fn print(text: &str) {
    write_stdout(redact::scrub(text).as_bytes());
}

/// Prints `text` and a newline on standard output, redacted.
pub fn println(text: &str) {
    let mut line = redact::scrub(text).into_owned();
    line.push('\n');
    write_stdout(line.as_bytes());
}

/// Prints `text` on standard output as it is: only for what the user asked to see verbatim (the
/// objects `render` builds from their own files).
pub fn print_verbatim(text: &str) {
    write_stdout(text.as_bytes());
}

/// Prints `text` and a newline on standard error, redacted.
pub fn eprintln(text: &str) {
    let mut line = redact::scrub(text).into_owned();
    line.push('\n');
    // Nothing sensible is left to do when standard error itself is gone.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

fn write_stdout(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(CLOSED_STDOUT_EXIT);
        }
        let _ = writeln!(
            std::io::stderr(),
            "error: cannot write to standard output: {e}"
        );
        std::process::exit(1);
    }
}

/// Whether a stream that is (or is not) a terminal gets colours: only a terminal, and only without
/// `NO_COLOR` (<https://no-color.org>).
pub fn colors(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether standard error gets colours (the log's levels, for one).
pub fn stderr_colors() -> bool {
    colors(std::io::stderr().is_terminal())
}

/// Whether standard output gets colours.
pub fn stdout_colors() -> bool {
    colors(std::io::stdout().is_terminal())
}

/// The log's writer (`tracing_subscriber::fmt().with_writer(LogWriter)`): each event is collected,
/// redacted and written to standard error in one piece.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

/// One log event on its way to standard error.
pub struct LogEvent(Vec<u8>);

impl Write for LogEvent {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogEvent {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            let _ = std::io::stderr()
                .lock()
                .write_all(&redact::scrub_bytes(&self.0));
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogEvent;

    fn make_writer(&'a self) -> LogEvent {
        LogEvent(Vec::new())
    }
}

/// `s` cut to at most `max` bytes on a character boundary, with `…` when cut.
pub fn clip(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}…", &s[..end]))
}

//! Everything the commands print on stdout goes through here. A line is written with stdout
//! locked and flushed; a stdout that can no longer be written stops the command cleanly instead
//! of panicking as `println!` does. A closed pipe (the reader went away: `| head -1`) is an
//! ordinary end, exit 0 as for `yes | head`; any other write error is reported on stderr and
//! fails the command.
//!
//! Whatever a server sent may end up in a line (an error message, an operation's or an agent's
//! name, an event's text), so every line, on stdout ([`outln!`], [`write()`]) and on stderr
//! ([`errln!`]), is made terminal-safe on the way out ([`terminal_safe`]): no control character
//! but tab and newline reaches the terminal raw. A server's text that belongs on one line is
//! shown with [`OneLine`], which escapes newlines too.

use agentwire_core::text::terminal_safe;
use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

/// `eprintln!` that drops the line when stderr cannot be written (`2>&1 | head` gone) instead
/// of panicking: what stderr says is advice, and the exit code still tells the outcome.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::out::write_err(format_args!($($arg)*))
    };
}

pub(crate) use errln;

/// stdout cannot be written any more: the command stops (closing its client) and exits with
/// `ExitCode::from(closed)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed {
    broken_pipe: bool,
}

impl From<Closed> for ExitCode {
    fn from(closed: Closed) -> ExitCode {
        if closed.broken_pipe {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}

/// The exit code of a command whose last act was writing to stdout.
pub fn exit(written: Result<(), Closed>) -> ExitCode {
    written.map_or_else(ExitCode::from, |()| ExitCode::SUCCESS)
}

/// Why a command did not complete: its client's error `E`, or a closed stdout. Each command
/// module adds `From<E>`.
pub enum Failed<E> {
    Error(E),
    Closed(Closed),
}

impl<E> From<Closed> for Failed<E> {
    fn from(closed: Closed) -> Failed<E> {
        Failed::Closed(closed)
    }
}

/// `args` formatted and made terminal-safe, with a newline when `newline`.
fn safe_line(args: fmt::Arguments<'_>, newline: bool) -> String {
    let text = fmt::format(args);
    let mut line = match terminal_safe(&text, true) {
        Cow::Borrowed(_) => text,
        Cow::Owned(escaped) => escaped,
    };
    if newline {
        line.push('\n');
    }
    line
}

/// Writes `args` (and a newline when `newline`) to stdout, terminal-safe, and flushes it.
pub fn write(args: fmt::Arguments<'_>, newline: bool) -> Result<(), Closed> {
    let line = safe_line(args, newline);
    let mut stdout = io::stdout().lock();
    let written = stdout.write_all(line.as_bytes()).and_then(|()| stdout.flush());
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(Closed { broken_pipe: true }),
        Err(e) => {
            errln!("error: cannot write to stdout: {e}");
            Err(Closed { broken_pipe: false })
        }
    }
}

/// Writes `args` and a newline to stderr, terminal-safe; a stderr that cannot be written is
/// ignored ([`errln!`]).
pub fn write_err(args: fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_all(safe_line(args, true).as_bytes());
}

/// `println!` that returns `Err(Closed)` instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*), true)
    };
}

pub(crate) use outln;

/// A server's text that belongs on one line (a name, an error message): shown terminal-safe
/// with its newlines escaped too (`\u000a`), so it cannot start a line of its own that looks
/// like the command's.
pub struct OneLine<'a>(pub &'a str);

impl fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&terminal_safe(self.0, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_escapes_newlines_too() {
        assert_eq!(
            OneLine("op\nerror: fake\r\u{1b}[31m").to_string(),
            "op\\u000aerror: fake\\u000d\\u001b[31m"
        );
        assert_eq!(OneLine("post_message").to_string(), "post_message");
    }

    #[test]
    fn a_formatted_line_is_safe_and_ends_with_its_newline() {
        let name = "\u{1b}]52;c;cm0=\u{7}x";
        assert_eq!(
            safe_line(format_args!("error: {name}\n  details: {}", OneLine("a\nb")), true),
            "error: \\u001b]52;c;cm0=\\u0007x\n  details: a\\u000ab\n"
        );
        assert_eq!(safe_line(format_args!("> "), false), "> ");
    }
}

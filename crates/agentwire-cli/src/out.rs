//! Everything the commands print on stdout goes through here. A line is written with stdout
//! locked and flushed; a stdout that can no longer be written stops the command cleanly instead
//! of panicking as `println!` does. A closed pipe (the reader went away: `| head -1`) is an
//! ordinary end, exit 0 as for `yes | head`; any other write error is reported on stderr and
//! fails the command.

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

/// `eprintln!` that drops the line when stderr cannot be written (`2>&1 | head` gone) instead
/// of panicking: what stderr says is advice, and the exit code still tells the outcome.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
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

/// Writes `args` (and a newline when `newline`) to stdout and flushes it.
pub fn write(args: fmt::Arguments<'_>, newline: bool) -> Result<(), Closed> {
    let mut stdout = io::stdout().lock();
    let written = stdout
        .write_fmt(args)
        .and_then(|()| if newline { stdout.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(Closed { broken_pipe: true }),
        Err(e) => {
            errln!("error: cannot write to stdout: {e}");
            Err(Closed { broken_pipe: false })
        }
    }
}

/// `println!` that returns `Err(Closed)` instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*), true)
    };
}

pub(crate) use outln;

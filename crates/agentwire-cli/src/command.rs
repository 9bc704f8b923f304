//! What every command's `run` shares: the tokio runtime it runs on and how it reports a failure.

use crate::out::{errln, OneLine};
use std::fmt;
use std::future::Future;
use std::process::ExitCode;

/// The threads of a command's runtime.
pub enum Threads {
    /// One: a client's task and the caller share it, which keeps round trips short.
    One,
    /// Tokio's default: a server or the peers, serving many connections.
    Many,
}

/// Runs `command` to its exit code on a new runtime, or fails when none can start.
pub fn block_on(threads: Threads, command: impl Future<Output = ExitCode>) -> ExitCode {
    let runtime = match threads {
        Threads::One => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        Threads::Many => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
    };
    match runtime {
        Ok(rt) => {
            let code = rt.block_on(command);
            // Dropping the runtime would wait for its blocking threads, among them a read of
            // stdin that cannot be cancelled: a REPL that ended for another reason (the server
            // went away) would not exit before a line or the end of input came.
            rt.shutdown_background();
            code
        }
        Err(e) => fail(format!("cannot start the runtime: {e}")),
    }
}

/// Reports `e` on stderr (`error: …`, on one line: its message may be a server's); the command
/// failed.
pub fn fail(e: impl fmt::Display) -> ExitCode {
    errln!("error: {}", OneLine(&e.to_string()));
    ExitCode::FAILURE
}

//! What the peers' command lines share: `--port`, the two generations, and the start (Ctrl-C,
//! then bind, errors printed).

use crate::server::Interrupt;
use std::future::Future;
use std::io;
use std::process::ExitCode;

/// Prints a line of the peer's start-up report (its URL, agents, rooms) on stdout. A closed
/// stdout (`agentwire peers switch | head -1`) is not an error for a server: the line is dropped
/// and the peer goes on serving, where `println!` would panic.
pub fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = io::stdout().lock();
    let _ = out
        .write_fmt(line)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
}

/// Prints a line of advice or an error on stderr. A stderr that cannot be written (its reader
/// gone: `agentwire peers moltzap 2>&1 | head -1`) drops the line, where `eprintln!` would panic
/// and end the peer.
pub fn warn(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(io::stderr(), "{line}");
}

/// `--port`, with `DEFAULT_PORT` as its default (the peers' binaries: 0, `agentwire peers`: the
/// playground's ports).
///
/// The default is applied here ([`Listen::port`]), not by clap: `default_value_t` in a generic
/// struct is computed once in a static that every instantiation shares, so two defaults in one
/// command (`agentwire peers moltzap` and `peers switch`) would both get whichever was built
/// first. The help text is built per instantiation and states the default.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Listen<const DEFAULT_PORT: u16> {
    #[arg(
        long,
        value_name = "PORT",
        help = format!("Port on 127.0.0.1; 0 picks a free one (the URL is printed) [default: {DEFAULT_PORT}]")
    )]
    port: Option<u16>,
}

impl<const DEFAULT_PORT: u16> Listen<DEFAULT_PORT> {
    /// The port to listen on: `--port`, or `DEFAULT_PORT` without it.
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(DEFAULT_PORT)
    }

    /// What a peer's command line does first: listen for Ctrl-C, then `bind(port)`. A failure
    /// is printed (`error: cannot listen on 127.0.0.1:PORT: ...`) and ends the command with
    /// [`ExitCode::FAILURE`].
    pub async fn start<T, F>(self, bind: impl FnOnce(u16) -> F) -> Result<(T, Interrupt), ExitCode>
    where
        F: Future<Output = io::Result<T>>,
    {
        let interrupt = Interrupt::listen().map_err(|e| {
            warn(format_args!("error: cannot listen for Ctrl-C: {e}"));
            ExitCode::FAILURE
        })?;
        let port = self.port();
        match bind(port).await {
            Ok(bound) => Ok((bound, interrupt)),
            Err(e) => {
                warn(format_args!("error: cannot listen on 127.0.0.1:{port}: {e}"));
                Err(ExitCode::FAILURE)
            }
        }
    }
}

/// `--generation current|released`: the two generations every peer speaks (each peer maps it
/// to its own type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Wire {
    Current,
    Released,
}

#[cfg(test)]
mod tests {
    use super::Listen;
    use clap::{CommandFactory, Parser, Subcommand};

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        peer: Peer,
    }

    #[derive(Subcommand)]
    enum Peer {
        A(Listen<7750>),
        B(Listen<7751>),
        C(Listen<0>),
    }

    fn port(args: &[&str]) -> u16 {
        match Cli::try_parse_from(args).unwrap().peer {
            Peer::A(l) => l.port(),
            Peer::B(l) => l.port(),
            Peer::C(l) => l.port(),
        }
    }

    #[test]
    fn each_instantiation_keeps_its_own_default() {
        assert_eq!(port(&["t", "a"]), 7750);
        assert_eq!(port(&["t", "b"]), 7751);
        assert_eq!(port(&["t", "c"]), 0);
        assert_eq!(port(&["t", "b", "--port", "9"]), 9);
        let mut cmd = Cli::command();
        for (name, default) in [("a", 7750), ("b", 7751), ("c", 0)] {
            let help = cmd.find_subcommand_mut(name).unwrap().render_help().to_string();
            assert!(help.contains(&format!("[default: {default}]")), "{name}: {help}");
        }
    }
}

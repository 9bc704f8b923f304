//! What the peers' command lines share: `--port`, the two generations, and the start (Ctrl-C,
//! then bind, errors printed).

use crate::server::Interrupt;
use std::future::Future;
use std::io;
use std::process::ExitCode;

/// `--port`, with `DEFAULT_PORT` as its default (the peers' binaries: 0, `agentwire peers`: the
/// playground's ports).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Listen<const DEFAULT_PORT: u16> {
    /// Port on 127.0.0.1; 0 picks a free one (the URL is printed)
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
}

impl<const DEFAULT_PORT: u16> Listen<DEFAULT_PORT> {
    /// What a peer's command line does first: listen for Ctrl-C, then `bind(port)`. A failure
    /// is printed (`error: cannot listen on 127.0.0.1:PORT: ...`) and ends the command with
    /// [`ExitCode::FAILURE`].
    pub async fn start<T, F>(self, bind: impl FnOnce(u16) -> F) -> Result<(T, Interrupt), ExitCode>
    where
        F: Future<Output = io::Result<T>>,
    {
        let interrupt = Interrupt::listen().map_err(|e| {
            eprintln!("error: cannot listen for Ctrl-C: {e}");
            ExitCode::FAILURE
        })?;
        match bind(self.port).await {
            Ok(bound) => Ok((bound, interrupt)),
            Err(e) => {
                eprintln!("error: cannot listen on 127.0.0.1:{}: {e}", self.port);
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

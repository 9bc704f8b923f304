//! The signals that stop a command: Ctrl-C (SIGINT) and, on Unix, SIGTERM (what `kill`,
//! `timeout` and service managers send). A command that listens closes its connection (RKT's
//! GOODBYE, the WebSocket's closing handshake) instead of being killed with it open.

use std::process::ExitCode;

/// Which signal stopped the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate,
}

impl Signal {
    /// The exit code a shell gives a command this signal killed (128 + its number): a script
    /// sees that its input did not run to its end.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Signal::Interrupt => ExitCode::from(130),
            Signal::Terminate => ExitCode::from(143),
        }
    }
}

/// Listens for the signals from its creation on: one sent while the command is busy elsewhere
/// (printing, between two events) is not lost. A signal that cannot be listened for keeps its
/// default action (it kills the process).
pub struct Stop {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Stop {
    /// Starts listening. Inside a tokio runtime.
    pub fn new() -> Stop {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Stop {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        Stop {}
    }

    /// The next signal.
    pub async fn recv(&mut self) -> Signal {
        #[cfg(unix)]
        {
            async fn next(s: &mut Option<tokio::signal::unix::Signal>) {
                match s {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                () = next(&mut self.interrupt) => Signal::Interrupt,
                () = next(&mut self.terminate) => Signal::Terminate,
            }
        }
        #[cfg(not(unix))]
        {
            match tokio::signal::ctrl_c().await {
                Ok(()) => Signal::Interrupt,
                Err(_) => std::future::pending().await,
            }
        }
    }
}

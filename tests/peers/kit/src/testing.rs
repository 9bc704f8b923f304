//! For the peers' tests: running a peer binary (its first lines of output, and a guard that
//! kills it), and raw bytes over TCP.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long [`start`] waits for the lines, and [`Running::interrupt`] for the exit.
const WAIT: Duration = Duration::from_secs(20);

/// A binary started by [`start`]; killed (and reaped) when dropped, so a failing test leaves
/// no process behind.
pub struct Running {
    pub child: Child,
    /// The first lines it printed, without their line ends (fewer if it stopped or took too
    /// long).
    pub lines: Vec<String>,
}

/// Starts `bin ARGS` (stdout piped, stderr discarded) and reads its first `lines` lines of
/// output (at most 20 s in all).
pub fn start(bin: &str, args: &[&str], lines: usize) -> Running {
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        for _ in 0..lines {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let _ = tx.send(line.trim_end().to_owned());
        }
    });
    let deadline = Instant::now() + WAIT;
    let mut out = Vec::new();
    while out.len() < lines {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => out.push(line),
            Err(_) => break,
        }
    }
    Running { child, lines: out }
}

impl Running {
    /// Sends Ctrl-C (SIGINT, with `kill -INT`) and waits (at most 20 s) for the exit.
    pub fn interrupt(&mut self) -> Option<ExitStatus> {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `request` as it is on a new TCP connection to `addr` and reads until the peer closes:
/// what came back, as lossy UTF-8 (cut short, or empty, where the connection failed).
pub async fn exchange(addr: SocketAddr, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let _ = tcp.write_all(request.as_bytes()).await;
    let mut out = Vec::new();
    let _ = tcp.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

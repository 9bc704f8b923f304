//! Helpers of the CLI tests: the built binary as a child process, killed when the test ends,
//! every wait bounded.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_agentwire");
pub const LIMIT: Duration = Duration::from_secs(20);

/// A child process killed when the guard drops, test failure or not.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Guard {
    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "process {} did not exit in time",
                self.0.id()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Starts `agentwire ARGS` with its stdout piped.
fn spawn_bin(args: &[&str], stdin: Stdio, stderr: Stdio) -> std::process::Child {
    Command::new(BIN)
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Runs `agentwire ARGS` with `input` on stdin; returns its exit status and stdout.
pub fn run(args: &[&str], input: impl AsRef<[u8]>) -> (ExitStatus, String) {
    let (status, out, _) = run_piped(args, input, Stdio::inherit());
    (status, out)
}

/// [`run`] that returns stderr too.
pub fn run_with_stderr(args: &[&str], input: impl AsRef<[u8]>) -> (ExitStatus, String, String) {
    run_piped(args, input, Stdio::piped())
}

fn run_piped(args: &[&str], input: impl AsRef<[u8]>, stderr: Stdio) -> (ExitStatus, String, String) {
    let mut child = spawn_bin(args, Stdio::piped(), stderr);
    let mut stdin = child.stdin.take().unwrap();
    let out = read_all(child.stdout.take().unwrap());
    let err = child.stderr.take().map(read_all);
    let mut guard = Guard(child);
    let input = input.as_ref().to_vec();
    let writer = thread::spawn(move || stdin.write_all(&input));
    let status = guard.wait();
    writer.join().unwrap().unwrap();
    let err = err.map_or_else(String::new, |e| e.join().unwrap());
    (status, out.join().unwrap(), err)
}

/// Starts `agentwire ARGS`, a server that prints `listening on URL` first; returns the guard
/// and the URL.
pub fn listen(args: &[&str]) -> (Guard, String) {
    listen_from(spawn_bin(args, Stdio::null(), Stdio::null()))
}

/// [`listen`] with these environment variables set too.
pub fn listen_with_env(args: &[&str], env: &[(&str, &str)]) -> (Guard, String) {
    let child = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    listen_from(child)
}

/// [`listen`] with stderr a pipe nobody reads any more.
pub fn listen_with_stderr_closed(args: &[&str]) -> (Guard, String) {
    let mut child = spawn_bin(args, Stdio::null(), Stdio::piped());
    drop(child.stderr.take());
    listen_from(child)
}

/// [`listen`] with stderr read line by line: the lines come on the receiver.
pub fn listen_with_stderr(args: &[&str]) -> (Guard, String, mpsc::Receiver<String>) {
    let mut child = spawn_bin(args, Stdio::null(), Stdio::piped());
    let rx = lines_of(child.stderr.take().unwrap());
    let (process, url) = listen_from(child);
    (process, url, rx)
}

fn listen_from(mut child: Child) -> (Guard, String) {
    let rx = lines_of(child.stdout.take().unwrap());
    let process = Guard(child);
    let line = rx.recv_timeout(LIMIT).expect("no `listening on` line");
    let url = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_string();
    assert!(url.starts_with("ws://127.0.0.1:") && !url.contains(":0/"), "{url}");
    (process, url)
}

/// Runs `agentwire ARGS` with nothing on stdin; returns its exit status, stdout and stderr.
pub fn run_full(args: &[&str]) -> (ExitStatus, String, String) {
    let mut child = spawn_bin(args, Stdio::null(), Stdio::piped());
    let out = read_all(child.stdout.take().unwrap());
    let err = read_all(child.stderr.take().unwrap());
    let status = Guard(child).wait();
    (status, out.join().unwrap(), err.join().unwrap())
}

/// Runs `agentwire ARGS` with stderr a pipe nobody reads any more; returns its exit status.
pub fn run_with_stderr_closed(args: &[&str]) -> ExitStatus {
    let mut child = spawn_bin(args, Stdio::null(), Stdio::piped());
    drop(child.stderr.take());
    let out = read_all(child.stdout.take().unwrap());
    let status = Guard(child).wait();
    let _ = out.join();
    status
}

/// `r`'s lines on a receiver, read by a thread of their own until it ends or the receiver goes.
fn lines_of(r: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn read_all(mut r: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut out = String::new();
        let _ = r.read_to_string(&mut out);
        out
    })
}

/// A running `agentwire ARGS` whose stdout is read line by line, every wait bounded.
pub struct Lines {
    pub process: Guard,
    rx: mpsc::Receiver<String>,
}

impl Lines {
    pub fn spawn(args: &[&str]) -> Lines {
        Lines::from(spawn_bin(args, Stdio::null(), Stdio::inherit()))
    }

    /// [`Lines::spawn`] with stdin a pipe held open by the returned end (an idle terminal).
    pub fn spawn_with_stdin(args: &[&str]) -> (Lines, ChildStdin) {
        let mut child = spawn_bin(args, Stdio::piped(), Stdio::inherit());
        let stdin = child.stdin.take().unwrap();
        (Lines::from(child), stdin)
    }

    fn from(mut child: Child) -> Lines {
        let rx = lines_of(child.stdout.take().unwrap());
        Lines {
            process: Guard(child),
            rx,
        }
    }

    /// Sends `signal` (`INT`, `TERM`) to the process.
    pub fn signal(&self, signal: &str) {
        let pid = self.process.0.id().to_string();
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{signal} {pid}");
    }

    /// The next line; `None` once stdout has ended.
    pub fn next(&self) -> Option<String> {
        match self.rx.recv_timeout(LIMIT) {
            Ok(line) => Some(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("no line within {LIMIT:?}"),
        }
    }
}

/// `agentwire ARGS | head -1`: the first line of stdout is read, then the pipe's reading end is
/// closed. Returns the process, that line and its stderr (read to the end by a thread).
pub fn head1(args: &[&str]) -> (Guard, String, thread::JoinHandle<String>) {
    let mut child = spawn_bin(args, Stdio::null(), Stdio::piped());
    let err = read_all(child.stderr.take().unwrap());
    let stdout = child.stdout.take().unwrap();
    let process = Guard(child);
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let _ = tx.send(line);
        // The reader (and with it the pipe's only reading end) drops here.
    });
    let line = rx.recv_timeout(LIMIT).expect("no first line");
    (process, line, err)
}

//! The accept loop the peers run, its handle, and Ctrl-C for their command lines.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::{Interval, MissedTickBehavior};

/// How long [`Server::shutdown`] waits for the connection tasks before aborting them.
const DRAIN: Duration = Duration::from_secs(2);

/// Binds 127.0.0.1:`port` (0 = any free port).
pub async fn listen(port: u16) -> io::Result<TcpListener> {
    TcpListener::bind(("127.0.0.1", port)).await
}

/// An accept loop running in the background. Dropping it stops the loop too.
pub struct Server {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Server {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn http_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `ws://ADDR`.
    pub fn ws_url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// Stops accepting, tells every connection task to end (the `stopped` receiver turns
    /// true), waits for them (at most 2 s) and aborts what is left.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Accepts on `listener`, serving each TCP connection in a task of its own with
/// `serve(tcp, open, stopped)`: `open` is the number of TCP connections being served, this one
/// included (counted as it is accepted), for a bound on them; `stopped` turns true on
/// [`Server::shutdown`].
pub fn spawn<F, Fut>(listener: TcpListener, serve: F) -> io::Result<Server>
where
    F: Fn(TcpStream, usize, watch::Receiver<bool>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    start_loop(listener, serve, None::<(Interval, fn())>)
}

/// [`spawn`], and calls `tick` every `every` (first right away) on the accept loop's task.
pub fn spawn_with_tick<F, Fut, T>(listener: TcpListener, serve: F, every: Duration, tick: T) -> io::Result<Server>
where
    F: Fn(TcpStream, usize, watch::Receiver<bool>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
    T: FnMut() + Send + 'static,
{
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    start_loop(listener, serve, Some((interval, tick)))
}

fn start_loop<F, Fut, T>(listener: TcpListener, serve: F, ticker: Option<(Interval, T)>) -> io::Result<Server>
where
    F: Fn(TcpStream, usize, watch::Receiver<bool>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
    T: FnMut() + Send + 'static,
{
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(accept_loop(listener, serve, ticker, stopped));
    Ok(Server { addr, stop, task })
}

/// The next tick, never without a ticker.
async fn next_tick<T>(ticker: &mut Option<(Interval, T)>) {
    match ticker {
        Some((interval, _)) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

async fn accept_loop<F, Fut, T>(
    listener: TcpListener,
    serve: F,
    mut ticker: Option<(Interval, T)>,
    mut stopped: watch::Receiver<bool>,
) where
    F: Fn(TcpStream, usize, watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
    T: FnMut(),
{
    let open = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    let (counted, now_open) = Counted::new(&open);
                    let served = serve(tcp, now_open, stopped.clone());
                    tasks.spawn(async move {
                        // Given back when the task ends, by a panic or an abort too.
                        let _counted = counted;
                        served.await;
                    });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
            _ = next_tick(&mut ticker) => {
                if let Some((_, tick)) = ticker.as_mut() {
                    tick();
                }
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(DRAIN, async { while tasks.join_next().await.is_some() {} }).await;
    tasks.shutdown().await;
}

/// One place in a count, taken on creation and given back on drop (also when the task holding it
/// unwinds from a panic or is aborted).
pub struct Counted(Arc<AtomicUsize>);

impl Counted {
    /// Takes one place in `count`; the guard and the count with this place.
    pub fn new(count: &Arc<AtomicUsize>) -> (Counted, usize) {
        let now = count.fetch_add(1, Ordering::Relaxed) + 1;
        (Counted(count.clone()), now)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Ctrl-C (SIGINT), listened for from [`Interrupt::listen`] on: a binary listens before it
/// prints that it is listening, so an interrupt right after that line is not lost.
pub struct Interrupt {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupt {
    /// Starts listening (within a tokio runtime).
    pub fn listen() -> io::Result<Self> {
        Ok(Interrupt {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?,
        })
    }

    /// Waits for Ctrl-C.
    pub async fn wait(mut self) {
        #[cfg(unix)]
        self.signal.recv().await;
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A connection task that panics gives its place in the count back.
    #[tokio::test]
    async fn a_panicking_connection_is_uncounted() {
        let server = spawn(
            listen(0).await.unwrap(),
            |mut tcp: TcpStream, open, _stopped: watch::Receiver<bool>| async move {
                let mut first = [0u8; 1];
                let _ = tcp.read_exact(&mut first).await;
                if first[0] == b'p' {
                    panic!("a connection task panics (on purpose)");
                }
                let _ = tcp.write_all(open.to_string().as_bytes()).await;
            },
        )
        .unwrap();
        let mut panics = TcpStream::connect(server.addr()).await.unwrap();
        panics.write_all(b"p").await.unwrap();
        let mut got = [0u8; 1];
        assert_eq!(
            panics.read(&mut got).await.unwrap_or(0),
            0,
            "the panicking task closed it"
        );
        let mut next = TcpStream::connect(server.addr()).await.unwrap();
        next.write_all(b"n").await.unwrap();
        next.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"1", "only this connection is open");
        server.shutdown().await;
    }

    #[tokio::test]
    async fn counts_ticks_and_stops() {
        let ticks = Arc::new(AtomicUsize::new(0));
        let counted = ticks.clone();
        let server = spawn_with_tick(
            listen(0).await.unwrap(),
            |mut tcp: TcpStream, open, mut stopped: watch::Receiver<bool>| async move {
                let _ = tcp.write_all(open.to_string().as_bytes()).await;
                let _ = stopped.changed().await;
            },
            Duration::from_millis(10),
            move || {
                counted.fetch_add(1, Ordering::Relaxed);
            },
        )
        .unwrap();
        assert!(server.addr().ip().is_loopback());
        assert_eq!(server.http_url(), format!("http://{}", server.addr()));
        let mut first = TcpStream::connect(server.addr()).await.unwrap();
        let mut second = TcpStream::connect(server.addr()).await.unwrap();
        let mut got = [0u8; 1];
        first.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"1");
        second.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"2");
        // Two ticks of 10 ms, waited for up to 5 s: a loaded machine may run the tick task late.
        tokio::time::timeout(Duration::from_secs(5), async {
            while ticks.load(Ordering::Relaxed) < 2 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("two ticks within 5 s");
        // Shutdown ends the connection tasks: the sockets close.
        tokio::time::timeout(Duration::from_secs(5), server.shutdown())
            .await
            .unwrap();
        assert_eq!(first.read(&mut got).await.unwrap(), 0);
    }
}

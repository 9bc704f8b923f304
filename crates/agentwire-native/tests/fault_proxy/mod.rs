//! A fault-injecting TCP proxy on 127.0.0.1, seeded: every connection accepted is relayed to
//! `upstream`, and given either the fault a fixed schedule lists for its number, or (while the
//! budget lasts) one drawn from the seed: a cut (FIN or RST) after some bytes either way or after
//! some time, a black hole (both ways read and discarded), a freeze, or a half-close (the
//! client's side gets FIN, its bytes still reach the server). A faulted connection is also cut
//! at a drawn backstop time unless the proxy has been calmed by then, so none outlives the fault
//! phase. What happened to each connection is logged, to show when a test fails.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// splitmix64: the same draws for the same seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n.max(1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Server to client.
    Down,
    /// Client to server.
    Up,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    /// Both sockets closed (reset when `rst`) once `after` bytes went `dir`.
    Cut {
        dir: Dir,
        after: u64,
        rst: bool,
    },
    /// Both sockets closed `ms` after the accept.
    CutAt {
        ms: u64,
        rst: bool,
    },
    /// After `after` bytes down, everything is read and discarded both ways.
    BlackHole {
        after: u64,
    },
    /// After `after` bytes down, nothing is relayed for `ms`, then everything is.
    Freeze {
        after: u64,
        ms: u64,
    },
    /// After `after` bytes down, the client's side gets FIN and the server's bytes are
    /// discarded; the client's still reach the server.
    HalfClose {
        after: u64,
    },
}

pub struct Config {
    /// When not empty, connection `n` gets the fault listed for it and every other none.
    pub schedule: Vec<(u64, Fault)>,
    pub seed: u64,
    /// Faults drawn at most.
    pub max_faults: u32,
    /// Largest byte offset drawn (a quarter of the draws are below 400: an open's answer).
    pub max_offset: u64,
    /// Largest time drawn, in ms (cuts at a time, freezes, backstops).
    pub max_ms: u64,
}

impl Config {
    pub fn scheduled(schedule: Vec<(u64, Fault)>) -> Self {
        Config {
            schedule,
            ..Config::seeded(0, 0)
        }
    }

    pub fn seeded(seed: u64, max_faults: u32) -> Self {
        Config {
            schedule: Vec::new(),
            seed,
            max_faults,
            max_offset: 6_000,
            max_ms: 2_000,
        }
    }
}

pub struct Proxy {
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    faults: Arc<AtomicU32>,
    calm: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n  ")
    }

    pub fn faults(&self) -> u32 {
        self.faults.load(Ordering::SeqCst)
    }

    /// No fault from now on, and faulted connections are no longer cut at their backstop.
    pub fn calm(&self) {
        self.calm.store(true, Ordering::SeqCst);
    }
}

fn draw(rng: &mut Rng, cfg: &Config) -> Fault {
    let offset = |rng: &mut Rng| match rng.below(4) {
        0 => rng.below(400),
        _ => rng.below(cfg.max_offset),
    };
    match rng.below(8) {
        0 | 1 => Fault::Cut {
            dir: Dir::Down,
            after: offset(rng),
            rst: false,
        },
        2 => Fault::Cut {
            dir: Dir::Down,
            after: offset(rng),
            rst: true,
        },
        3 => Fault::Cut {
            dir: Dir::Up,
            after: rng.below(600),
            rst: rng.below(2) == 0,
        },
        4 => Fault::CutAt {
            ms: rng.below(cfg.max_ms),
            rst: rng.below(2) == 0,
        },
        5 => Fault::BlackHole { after: offset(rng) },
        6 => Fault::Freeze {
            after: offset(rng),
            ms: 100 + rng.below(cfg.max_ms),
        },
        _ => Fault::HalfClose { after: offset(rng) },
    }
}

pub async fn start(upstream: SocketAddr, cfg: Config) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let faults = Arc::new(AtomicU32::new(0));
    let calm = Arc::new(AtomicBool::new(false));
    let conns = AtomicU64::new(0);
    let mut rng = Rng(cfg.seed);
    let t0 = Instant::now();
    let task = {
        let (log, faults, calm) = (log.clone(), faults.clone(), calm.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let n = conns.fetch_add(1, Ordering::SeqCst);
                let (fault, backstop) = if !cfg.schedule.is_empty() {
                    let f = cfg.schedule.iter().find(|(k, _)| *k == n).map_or(Fault::None, |f| f.1);
                    (f, None)
                } else {
                    // Drawn for every connection, so the draws follow the connection's number.
                    let backstop = 300 + rng.below(cfg.max_ms);
                    let f = draw(&mut rng, &cfg);
                    if !calm.load(Ordering::SeqCst) && faults.load(Ordering::SeqCst) < cfg.max_faults {
                        faults.fetch_add(1, Ordering::SeqCst);
                        (f, Some(backstop))
                    } else {
                        (Fault::None, None)
                    }
                };
                let (log, calm) = (log.clone(), calm.clone());
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return log.lock().unwrap().push(format!("#{n} upstream refused"));
                    };
                    let _ = (client.set_nodelay(true), server.set_nodelay(true));
                    let relayed = relay(client, server, fault);
                    tokio::pin!(relayed);
                    let outcome = match backstop {
                        None => relayed.await,
                        Some(ms) => tokio::select! {
                            o = &mut relayed => o,
                            () = tokio::time::sleep(Duration::from_millis(ms)) => {
                                if calm.load(Ordering::SeqCst) { relayed.await } else { format!("backstop cut at {ms} ms") }
                            }
                        },
                    };
                    let at = t0.elapsed().as_millis();
                    log.lock()
                        .unwrap()
                        .push(format!("#{n} {fault:?} -> {outcome} (t={at} ms)"));
                });
            }
        })
    };
    Proxy {
        addr,
        log,
        faults,
        calm,
        task,
    }
}

fn reset(s: &TcpStream) {
    let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
}

/// Relays until both ends are done or the fault ends it; says what happened.
async fn relay(mut client: TcpStream, mut server: TcpStream, fault: Fault) -> String {
    let (mut down, mut up) = (0u64, 0u64);
    let (mut cbuf, mut sbuf) = (vec![0u8; 16 << 10], vec![0u8; 16 << 10]);
    let (mut c_open, mut s_open) = (true, true);
    let cut_at = match fault {
        Fault::CutAt { ms, .. } => Instant::now() + Duration::from_millis(ms),
        _ => Instant::now() + Duration::from_secs(3_600),
    };
    let down_limit = match fault {
        Fault::Cut {
            dir: Dir::Down, after, ..
        }
        | Fault::BlackHole { after }
        | Fault::Freeze { after, .. }
        | Fault::HalfClose { after } => after,
        _ => u64::MAX,
    };
    let up_limit = match fault {
        Fault::Cut {
            dir: Dir::Up, after, ..
        } => after,
        _ => u64::MAX,
    };
    loop {
        if !c_open && !s_open {
            return format!("ended (down {down} B, up {up} B)");
        }
        tokio::select! {
            r = client.read(&mut cbuf), if c_open => {
                let k = match r {
                    Ok(0) | Err(_) => { c_open = false; let _ = server.shutdown().await; continue }
                    Ok(k) => k,
                };
                let allow = (up_limit - up).min(k as u64) as usize;
                if allow > 0 && server.write_all(&cbuf[..allow]).await.is_err() { s_open = false; }
                up += allow as u64;
                if up >= up_limit {
                    if let Fault::Cut { rst: true, .. } = fault { reset(&client); reset(&server); }
                    return format!("cut up after {up} B (down {down} B)");
                }
            }
            r = server.read(&mut sbuf), if s_open => {
                let k = match r {
                    Ok(0) | Err(_) => { s_open = false; let _ = client.shutdown().await; continue }
                    Ok(k) => k,
                };
                let allow = (down_limit - down).min(k as u64) as usize;
                if allow > 0 && client.write_all(&sbuf[..allow]).await.is_err() { c_open = false; }
                down += allow as u64;
                if down < down_limit {
                    continue;
                }
                let rest = &sbuf[allow..k];
                return match fault {
                    Fault::Cut { rst, .. } => {
                        if rst { reset(&client); reset(&server); }
                        format!("cut down after {down} B (up {up} B)")
                    }
                    Fault::BlackHole { .. } => {
                        discard(&mut client, &mut server, true).await;
                        format!("black hole after {down} B (up {up} B)")
                    }
                    Fault::Freeze { ms, .. } => {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        if client.write_all(rest).await.is_err() {
                            return format!("froze {ms} ms after {down} B, client gone");
                        }
                        let then = Box::pin(relay(client, server, Fault::None)).await;
                        format!("froze {ms} ms after {down} B, then {then}")
                    }
                    Fault::HalfClose { .. } => {
                        let _ = client.shutdown().await;
                        discard(&mut client, &mut server, false).await;
                        format!("half-closed after {down} B (up {up} B)")
                    }
                    Fault::None | Fault::CutAt { .. } => unreachable!("no byte limit down"),
                };
            }
            () = tokio::time::sleep_until(cut_at) => {
                if let Fault::CutAt { rst: true, .. } = fault { reset(&client); reset(&server); }
                return format!("cut at its time (down {down} B, up {up} B)");
            }
        }
    }
}

/// Reads both ways until either ends: the server's bytes are discarded, the client's too unless
/// `!both` (then they still reach the server).
async fn discard(client: &mut TcpStream, server: &mut TcpStream, both: bool) {
    let (mut a, mut b) = (vec![0u8; 16 << 10], vec![0u8; 16 << 10]);
    loop {
        tokio::select! {
            r = client.read(&mut a) => match r {
                Ok(0) | Err(_) => return,
                Ok(k) => if !both && server.write_all(&a[..k]).await.is_err() { return },
            },
            r = server.read(&mut b) => if matches!(r, Ok(0) | Err(_)) { return },
        }
    }
}

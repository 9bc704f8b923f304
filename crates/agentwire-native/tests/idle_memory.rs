//! What an idle connected client costs in heap, for each protocol, measured with a counting
//! allocator. The peers run in a child process (this test binary again, running `peers`), so
//! that only the clients' own heap is counted; this binary holds nothing else that allocates.

use agentwire_native::moltzap::{self, MoltZapClient};
use agentwire_native::rkt::RktClient;
use agentwire_native::switch::SwitchClient;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[global_allocator]
static ALLOCATOR: agentwire_test_alloc::Counting = agentwire_test_alloc::Counting;

/// Idle clients connected at once for each protocol.
const CLIENTS: usize = 50;
/// The heap an idle connected client may take: about 32 KB with a 16 KiB WebSocket read
/// buffer, about 146 KB with tungstenite's default of 128 KiB.
const MAX_HEAP_PER_CLIENT: isize = 48_000;
/// Set in the child process, which serves the peers.
const PEERS_ENV: &str = "AGENTWIRE_IDLE_MEMORY_PEERS";

/// The child process: the RKT reference server, a MoltZap peer with one registered agent and a
/// Switch peer with one agent, on 127.0.0.1; their addresses are printed, then it serves until
/// its stdin closes. Run by `idle_clients_take_little_heap`, it does nothing on its own.
#[test]
#[ignore = "the peers of idle_clients_take_little_heap, run by it in a child process"]
fn peers() {
    if std::env::var_os(PEERS_ENV).is_none() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let listener = || async { tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap() };
        let rkt = agentwire_native::rkt::spawn(listener().await, Default::default()).unwrap();
        let mz = agentwire_peer_moltzap::spawn(
            listener().await,
            agentwire_peer_moltzap::PeerConfig::new(agentwire_peer_moltzap::Generation::Current),
        )
        .unwrap();
        let registration = agentwire_moltzap::register::Registration::new("idle-agent");
        let key = moltzap::register(&mz.http_url(), &registration, Duration::from_secs(5))
            .await
            .unwrap()
            .api_key;
        let mut cfg = agentwire_peer_switch::PeerConfig::new(agentwire_peer_switch::Generation::Current);
        cfg.max_connections_per_agent = 2 * CLIENTS;
        let sw = agentwire_peer_switch::spawn(listener().await, cfg).unwrap();
        let agent = sw.add_agent("idle");
        println!("\nRKT {}", rkt.url());
        println!("MOLTZAP {} {key}", mz.ws_url());
        println!("SWITCH {} {} {}", sw.http_url(), agent.id, agent.key);
        println!("READY");
        let _ = tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new())).await;
    });
}

/// The child serving the peers; killed when dropped.
struct Peers {
    child: Child,
    addresses: HashMap<String, Vec<String>>,
}

impl Peers {
    fn start() -> Peers {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "peers", "--nocapture", "--test-threads=1"])
            .env(PEERS_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut addresses = HashMap::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line == "READY" {
                    let _ = tx.send(addresses);
                    return;
                }
                let mut words = line.split(' ').map(str::to_string);
                if let Some(name) = words.next() {
                    addresses.insert(name, words.collect());
                }
            }
        });
        let mut peers = Peers {
            child,
            addresses: HashMap::new(),
        };
        peers.addresses = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the peers start within 30 s");
        peers
    }

    fn address(&self, name: &str) -> &[String] {
        &self.addresses[name]
    }
}

impl Drop for Peers {
    fn drop(&mut self) {
        drop(self.child.stdin.take().map(|mut stdin| stdin.write_all(b"\n")));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The heap each of `CLIENTS` clients made by `connect` holds once connected and idle; a first
/// client, connected and closed before, takes what is made once (lazy statics, pools).
async fn heap_per_client<C, F: std::future::Future<Output = C>>(
    connect: impl Fn() -> F,
    close: impl AsyncFn(&C),
) -> isize {
    let first = connect().await;
    close(&first).await;
    drop(first);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = agentwire_test_alloc::live();
    let mut clients = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        clients.push(connect().await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let per_client = (agentwire_test_alloc::live() - before) / CLIENTS as isize;
    for client in &clients {
        close(client).await;
    }
    drop(clients);
    tokio::time::sleep(Duration::from_millis(300)).await;
    per_client
}

#[test]
fn idle_clients_take_little_heap() {
    let peers = Peers::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let measured = rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let rkt = &peers.address("RKT")[0];
            let rkt = heap_per_client(
                || async { RktClient::connect(rkt, Default::default()).await.unwrap() },
                RktClient::close,
            )
            .await;

            let [url, key] = peers.address("MOLTZAP") else {
                panic!("MOLTZAP url key")
            };
            let moltzap = heap_per_client(
                || async {
                    let key = agentwire_moltzap::Credentials::AgentKey(key.clone());
                    MoltZapClient::connect(url, key, Default::default()).await.unwrap()
                },
                MoltZapClient::close,
            )
            .await;

            let [origin, id, key] = peers.address("SWITCH") else {
                panic!("SWITCH origin id key")
            };
            let switch = heap_per_client(
                || async {
                    let entropy = agentwire_core::Entropy::uuid_v4(&mut agentwire_native::OsEntropy);
                    let mut cfg = agentwire_switch::ConnectionConfig::new(agentwire_switch::open::OpenParams::new(
                        id.clone(),
                        entropy,
                    ));
                    cfg.transport = agentwire_switch::Transport::WebSocket;
                    SwitchClient::connect(origin, key, cfg).await.unwrap()
                },
                SwitchClient::close,
            )
            .await;
            [("RKT", rkt), ("MoltZap", moltzap), ("Switch (WebSocket)", switch)]
        })
        .await
        .expect("the test finishes within 60 s")
    });
    drop(rt);
    drop(peers);
    for (protocol, per_client) in measured {
        println!("{protocol}: {per_client} bytes of heap per idle client");
    }
    for (protocol, per_client) in measured {
        assert!(
            per_client < MAX_HEAP_PER_CLIENT,
            "an idle {protocol} client takes {per_client} bytes of heap, over {MAX_HEAP_PER_CLIENT}"
        );
    }
}

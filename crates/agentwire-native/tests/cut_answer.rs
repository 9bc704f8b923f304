//! A call whose request reached the server and whose answer was cut off (a proxy on 127.0.0.1
//! forwards the request, drops the answer and closes both sockets) is not `retryable` in any
//! protocol: the server carried it out, and the same call made again would do it twice. Each
//! test also checks that it was carried out exactly once: nothing retried it behind the caller.
//! (Before, all three said `retryable: true`, and the review's retry paid, posted and sent twice.)
//!
//! The proxy is this file's own (the fault proxy of other tests is a separate module).

#![allow(clippy::result_large_err)] // the MoltZap request closure returns the engine's error

mod common;

use agentwire_core::{ErrorKind, MAY_HAVE_RUN};
use agentwire_switch::ops::{ConnectToRoom, PostMessage};
use common::bounded;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Relays every connection to `upstream`; on each connection numbered in `cuts` (counted from 0),
/// the first read from the server holding its `marker` (the answer) is dropped (replaced by
/// `gateway`'s answer when there is one, as the relay or nginx answer a lost upstream) and both
/// sockets closed.
struct CutProxy {
    addr: SocketAddr,
    connections: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CutProxy {
    async fn start(upstream: SocketAddr, cuts: &[(u64, &'static str)]) -> CutProxy {
        Self::start_with(upstream, cuts, None).await
    }

    async fn start_with(upstream: SocketAddr, cuts: &[(u64, &'static str)], gateway: Option<&'static str>) -> CutProxy {
        let cuts = cuts.to_vec();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicU64::new(0));
        let count = connections.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let n = count.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(upstream).await else {
                    return;
                };
                let marker = cuts.iter().find(|(c, _)| *c == n).map(|(_, m)| *m);
                tokio::spawn(relay(client, server, marker, gateway));
            }
        });
        CutProxy {
            addr,
            connections,
            task,
        }
    }

    fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
}

async fn relay(mut client: TcpStream, mut server: TcpStream, marker: Option<&str>, gateway: Option<&str>) {
    let (mut up, mut down) = (vec![0u8; 16 << 10], vec![0u8; 16 << 10]);
    loop {
        tokio::select! {
            r = client.read(&mut up) => match r {
                Ok(n) if n > 0 && server.write_all(&up[..n]).await.is_ok() => {}
                _ => return,
            },
            r = server.read(&mut down) => match r {
                Ok(n) if n > 0 => {
                    let held = &down[..n];
                    if marker.is_some_and(|m| held.windows(m.len()).any(|w| w == m.as_bytes())) {
                        if let Some(answer) = gateway {
                            let _ = client.write_all(answer.as_bytes()).await;
                        }
                        return; // the answer dropped, both sockets closed
                    }
                    if client.write_all(held).await.is_err() {
                        return;
                    }
                }
                _ => return,
            },
        }
    }
}

fn assert_final(kind: ErrorKind, retryable: bool, message: &str) {
    assert_eq!((kind, retryable), (ErrorKind::Closed, false), "{message}");
    assert!(message.ends_with(MAY_HAVE_RUN), "{message}");
}

#[tokio::test]
async fn rkt_pay_cut_after_it_reached_the_server_is_not_retryable() {
    use agentwire_native::rkt::RktClient;
    use agentwire_rkt::reference::ReferenceConfig;
    use agentwire_rkt::ClientConfig;
    bounded(async {
        let rc = ReferenceConfig {
            api_keys: vec!["k-123".into()],
            ..ReferenceConfig::default()
        };
        let srv = common::server(rc).await;
        let proxy = CutProxy::start(srv.local_addr(), &[(0, "receipt_id")]).await;
        let cfg = || ClientConfig {
            authorization: Some("Bearer k-123".into()),
            ..ClientConfig::default()
        };
        let url = format!("ws://{}/rkt", proxy.addr);
        let a = RktClient::connect(&url, cfg()).await.unwrap();
        let e = a.pay(5.0, "RKTT", Some("order 1"), None).await.unwrap_err();
        assert_final(e.kind(), e.error.retryable, &e.error.message);
        // Paid once: the next PAY of 1 finds 5 already there, not 0 or 10.
        let b = RktClient::connect(&url, cfg()).await.unwrap();
        let receipt = b.pay(1.0, "RKTT", Some("order 2"), None).await.unwrap();
        assert_eq!(receipt["balance"], 6.0, "{receipt}");
        assert_eq!(proxy.connections(), 2, "the client did not reconnect by itself");
        b.close().await;
        srv.shutdown().await.unwrap();
    })
    .await;
}

/// Alice connected to a current Switch peer through a [`CutProxy`] (`cuts`, `gateway`) and in room
/// lobby with bob (connections 0 and 1: the WebSocket and her `connect_to_room`).
struct Switch {
    h: agentwire_peer_switch::PeerHandle,
    b: agentwire_peer_switch::Agent,
    room: String,
    proxy: CutProxy,
    c: agentwire_native::switch::SwitchClient,
}

async fn switch_in_room(cuts: &[(u64, &'static str)], gateway: Option<&'static str>) -> Switch {
    use agentwire_peer_switch::{spawn, Generation, PeerConfig};
    use agentwire_switch::open::OpenParams;
    use agentwire_switch::ConnectionConfig;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let h = spawn(listener, PeerConfig::new(Generation::Current)).unwrap();
    let (a, b) = (h.add_agent("alice"), h.add_agent("bob"));
    let room = h.add_room("lobby", &[&a.id, &b.id]);
    let proxy = CutProxy::start_with(h.addr(), cuts, gateway).await;
    let mut cfg = ConnectionConfig::new(OpenParams::new(a.id.clone(), "0f8fad5b-d9cb-469f-a165-70867728950e"));
    cfg.open.rooms = vec![room.clone()];
    let c = agentwire_native::switch::SwitchClient::connect(&format!("http://{}", proxy.addr), &a.key, cfg)
        .await
        .unwrap();
    c.call(&ConnectToRoom::new(room.clone())).await.unwrap();
    Switch { h, b, room, proxy, c }
}

#[tokio::test]
async fn switch_post_cut_after_it_reached_the_server_is_not_retryable() {
    bounded(async {
        // Connection 0 is the WebSocket, 1 connect_to_room, 2 the post, whose answer is cut, 3
        // connect_to_room again, whose answer is cut too (any answer: its status line).
        let Switch { h, b, room, proxy, c } = switch_in_room(&[(2, "event_id"), (3, "HTTP/1.1 ")], None).await;
        let before = h.head(&b.id);
        let e = c.call(&PostMessage::new("order 1")).await.unwrap_err();
        assert_final(e.kind, e.retryable, &e.message);
        assert_eq!(h.head(&b.id), before + 1, "posted once");
        assert_eq!(proxy.connections(), 3, "the post was not sent again");
        // An idempotent call cut the same way stays retryable: making it again is safe.
        let e = c.call(&ConnectToRoom::new(room.clone())).await.unwrap_err();
        assert_eq!((e.kind, e.retryable), (ErrorKind::Closed, true), "{e}");
        assert!(!e.message.ends_with(MAY_HAVE_RUN), "{e}");
        assert_eq!(proxy.connections(), 4, "it was not made again behind the caller");
        c.call(&ConnectToRoom::new(room.clone())).await.unwrap();
        c.close().await;
    })
    .await;
}

/// The relay's answer when the upstream got the request and lost the connection.
const BAD_GATEWAY: &str = "HTTP/1.1 502 Bad Gateway\r\ncontent-type: application/json\r\ncontent-length: 46\r\nconnection: close\r\n\r\n{\"detail\":\"the upstream could not be reached\"}";

/// Before, a gateway's 502 was `remote` and retryable like any 5xx, and a retry posted twice.
#[tokio::test]
async fn switch_post_answered_by_a_gateway_after_it_reached_the_server_is_not_retryable() {
    bounded(async {
        // Connection 0 is the WebSocket, 1 connect_to_room, 2 the post, answered 502.
        let Switch { h, b, proxy, c, .. } = switch_in_room(&[(2, "event_id")], Some(BAD_GATEWAY)).await;
        let before = h.head(&b.id);
        let e = c.call(&PostMessage::new("order 1")).await.unwrap_err();
        assert_eq!(
            (e.kind, e.status, e.retryable),
            (ErrorKind::Remote, Some(502), false),
            "{e}"
        );
        assert!(
            e.message.starts_with("HTTP 502: the upstream could not be reached"),
            "{e}"
        );
        assert!(e.message.ends_with(MAY_HAVE_RUN), "{e}");
        assert_eq!(h.head(&b.id), before + 1, "posted once");
        assert_eq!(proxy.connections(), 3, "the post was not sent again");
        c.close().await;
    })
    .await;
}

#[tokio::test]
async fn moltzap_send_cut_after_it_reached_the_server_is_not_retryable() {
    use agentwire_moltzap::register::Registration;
    use agentwire_moltzap::session::SendMessage;
    use agentwire_moltzap::Credentials;
    use agentwire_native::moltzap::{register, MoltZapClient, MoltZapConfig};
    use agentwire_peer_moltzap::{spawn, PeerConfig};
    bounded(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let h = spawn(listener, PeerConfig::default()).unwrap();
        let w = std::time::Duration::from_secs(5);
        let ka = register(&h.http_url(), &Registration::new("alice"), w)
            .await
            .unwrap()
            .api_key;
        let kb = register(&h.http_url(), &Registration::new("bob"), w)
            .await
            .unwrap()
            .api_key;
        let proxy = CutProxy::start(h.local_addr(), &[(0, "\"parts\"")]).await;
        let url = format!("ws://{}/ws", proxy.addr);
        let a = MoltZapClient::connect(&url, Credentials::AgentKey(ka), MoltZapConfig::default())
            .await
            .unwrap();
        let send = SendMessage::text_to_agent("bob", "order 1");
        let e = a.request(move |s, now| s.messages_send(now, &send)).await.unwrap_err();
        assert_final(e.kind(), e.error.retryable, &e.error.message);
        assert!(!e.unsent, "it went out");
        let bob = MoltZapClient::connect(&h.ws_url(), Credentials::AgentKey(kb), MoltZapConfig::default())
            .await
            .unwrap();
        let list = bob.call("agent/message/list", Some(r#"{"limit":10}"#)).await.unwrap();
        assert_eq!(list.matches("order 1").count(), 1, "sent once: {list}");
        assert_eq!(proxy.connections(), 1, "the client did not reconnect by itself");
    })
    .await;
}

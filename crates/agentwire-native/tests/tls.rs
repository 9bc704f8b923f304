//! Every protocol over TLS on 127.0.0.1: each server (the RKT reference server, the MoltZap and
//! Switch test peers) sits behind a TLS-terminating proxy task (tokio-rustls) with a certificate
//! made here (rcgen, self-signed for 127.0.0.1) and trusted through
//! `agentwire_native::tls::add_root_certificates` (one test's through `add_root_certificate_der`).
//! A certificate that is not trusted fails with kind `auth`, not retryable, saying so. Every test
//! is bounded.

// The engines' errors are large and returned by value, as the engines do.
#![allow(clippy::result_large_err)]

mod common;
mod switch_common;

use agentwire_core::ErrorKind;
use agentwire_moltzap::register::Registration;
use agentwire_moltzap::{Credentials, GenerationChoice};
use agentwire_native::moltzap::{register, MoltZapClient, MoltZapConfig};
use agentwire_native::rkt::RktClient;
use agentwire_native::switch::{self, SwitchClient, SwitchOptions};
use agentwire_native::tls;
use agentwire_peer_switch::Generation;
use agentwire_rkt::reference::ReferenceConfig;
use agentwire_rkt::{ClientConfig, RequestOptions};
use agentwire_switch::open::OpenParams;
use agentwire_switch::ops::{ConnectToRoom, PostMessage};
use agentwire_switch::{ConnectionConfig, Event, Transport, Wire};
use common::bounded;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// A certificate and its key (PKCS#8 DER).
struct Cert {
    der: CertificateDer<'static>,
    pem: String,
    key: Vec<u8>,
}

fn make_cert() -> Cert {
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    Cert {
        der: ck.cert.der().clone(),
        pem: ck.cert.pem(),
        key: ck.key_pair.serialize_der(),
    }
}

/// The certificate the tests trust (added to the process's roots once).
fn trusted() -> &'static Cert {
    static CERT: OnceLock<Cert> = OnceLock::new();
    CERT.get_or_init(|| {
        let cert = make_cert();
        assert_eq!(tls::add_root_certificates(cert.pem.as_bytes()).unwrap(), 1);
        cert
    })
}

/// A TLS server side presenting `cert`.
fn acceptor(cert: &Cert) -> TlsAcceptor {
    #[allow(deprecated)] // ring's provider (see agentwire_native::tls)
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der.clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key.clone())),
        )
        .unwrap();
    TlsAcceptor::from(Arc::new(config))
}

/// A TLS-terminating proxy on 127.0.0.1 presenting `cert`, piping each connection to `backend`.
async fn tls_proxy(cert: &Cert, backend: SocketAddr) -> SocketAddr {
    let acceptor = acceptor(cert);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    addr
}

/// A TLS proxy whose certificate can be swapped, and whose connections can be cut.
struct SwappableProxy {
    addr: SocketAddr,
    acceptor: Arc<std::sync::Mutex<TlsAcceptor>>,
    live: Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl SwappableProxy {
    async fn start(cert: &Cert, backend: SocketAddr) -> SwappableProxy {
        let acceptor = Arc::new(std::sync::Mutex::new(acceptor(cert)));
        let live = Arc::new(std::sync::Mutex::new(Vec::new()));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (current, conns) = (acceptor.clone(), live.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = current.lock().unwrap().clone();
                let task = tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Ok(mut plain) = TcpStream::connect(backend).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
                conns.lock().unwrap().push(task.abort_handle());
            }
        });
        SwappableProxy { addr, acceptor, live }
    }

    fn present(&self, cert: &Cert) {
        *self.acceptor.lock().unwrap() = acceptor(cert);
    }

    /// Drops every proxied connection (the client sees its socket end).
    fn cut(&self) {
        for task in self.live.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

/// The `host:port` of an `http://` or `ws://` URL.
fn addr_of(url: &str) -> SocketAddr {
    let rest = url.split_once("://").unwrap().1;
    rest.split('/').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn rkt_request_over_tls() {
    bounded(async {
        let srv = common::server(ReferenceConfig::default()).await;
        let proxy = tls_proxy(trusted(), srv.local_addr()).await;
        // rkts:// resolves to wss://host:port/rkt.
        for address in [format!("rkts://{proxy}"), format!("wss://{proxy}/rkt")] {
            let c = RktClient::connect(&address, ClientConfig::default()).await.unwrap();
            assert_eq!(c.server_info().agreed_version, 1);
            let echo = c
                .request("echo", Some(json!({"city": "Seoul"})), RequestOptions::default())
                .await
                .unwrap();
            assert_eq!(echo, json!({"intent": "echo", "data": {"city": "Seoul"}}));
            c.close().await;
        }
        srv.shutdown().await.unwrap();
    })
    .await
}

#[tokio::test]
async fn moltzap_register_and_connect_over_tls() {
    bounded(async {
        let h = agentwire_peer_moltzap::spawn(
            TcpListener::bind("127.0.0.1:0").await.unwrap(),
            agentwire_peer_moltzap::PeerConfig::default(),
        )
        .unwrap();
        let proxy = tls_proxy(trusted(), addr_of(&h.http_url())).await;
        let wait = Duration::from_secs(5);
        let key = register(&format!("https://{proxy}"), &Registration::new("alice"), wait)
            .await
            .unwrap()
            .api_key;
        let mut cfg = MoltZapConfig::default();
        cfg.session.generation = GenerationChoice::Auto;
        cfg.session.handshake_timeout_ms = 3_000;
        let c = MoltZapClient::connect(&format!("wss://{proxy}/ws"), Credentials::AgentKey(key), cfg)
            .await
            .unwrap();
        assert_eq!(c.info().url, format!("wss://{proxy}/ws"));
        c.close().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_connect_and_post_over_tls_on_both_wires() {
    use switch_common::*;
    bounded(async {
        for (generation, transport, wire) in [
            (Generation::Current, Transport::WebSocket, Wire::WebSocket),
            (Generation::Released, Transport::Sse, Wire::Sse),
        ] {
            let w = world(peer_config(generation)).await;
            let proxy = tls_proxy(trusted(), w.h.addr()).await;
            let origin = format!("https://{proxy}");
            let connect = |key: String, cfg| {
                let origin = origin.clone();
                async move {
                    tokio::time::timeout(
                        WAIT,
                        SwitchClient::connect_with(&origin, &key, cfg, SwitchOptions::default()),
                    )
                    .await
                    .expect("connect is bounded")
                    .unwrap()
                }
            };
            let a = connect(w.a.key.clone(), config(&w.a, transport, &[])).await;
            let mut b = connect(w.b.key.clone(), config(&w.b, transport, &[&w.room])).await;
            match next(&mut b).await {
                Event::Connected { wire: got, .. } => assert_eq!(got, wire),
                other => panic!("{other:?}"),
            }
            a.call(&ConnectToRoom::new(&w.room)).await.unwrap();
            a.call(&PostMessage::new("over tls")).await.unwrap();
            let (event, _) = next_domain(&mut b, &mut Vec::new()).await;
            assert_eq!(event.message().unwrap().body, "over tls");
            // The one-shot operations of the module take https:// too.
            let ops = switch::list_ops(&origin, &w.a.key, &w.a.id, WAIT).await.unwrap();
            assert!(!ops.operations.is_empty());
            a.close().await;
            b.close().await;
        }
    })
    .await
}

#[tokio::test]
async fn an_untrusted_certificate_is_an_auth_error_that_says_so() {
    bounded(async {
        let _ = trusted(); // another certificate is trusted: not this one
        let stranger = make_cert();
        // No backend: the handshake fails before the proxy would connect to it.
        let dead: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let proxy = tls_proxy(&stranger, dead).await;

        let e = RktClient::connect(&format!("rkts://{proxy}"), ClientConfig::default())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
        assert!(!e.error.retryable, "{e}");
        assert!(e.error.message.contains("not trusted"), "{e}");
        assert!(e.error.message.contains("AGENTWIRE_CA_FILE"), "{e}");

        let cfg = MoltZapConfig::default();
        let creds = Credentials::AgentKey("k".into());
        let e = MoltZapClient::connect(&format!("wss://{proxy}/ws"), creds, cfg)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
        assert!(e.error.message.contains("not trusted"), "{e}");

        let e = switch::list_ops(&format!("https://{proxy}"), "k", "a", Duration::from_secs(5))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Auth, "{e}");
        assert!(!e.retryable && e.message.contains("not trusted"), "{e}");

        // A Switch connection's open stops at once, on either wire, where it used to reopen
        // with its backoff until the connect timeout (here 60 s: the test's bound is 30).
        for transport in [Transport::WebSocket, Transport::Sse] {
            let opts = SwitchOptions {
                connect_timeout: Some(Duration::from_secs(60)),
                ..SwitchOptions::default()
            };
            let started = std::time::Instant::now();
            let mut cfg = ConnectionConfig::new(OpenParams::new("a", "4b0c5d2e-8f1a-4c3b-9d7e-6a5f4e3d2c1b"));
            cfg.transport = transport;
            let e = SwitchClient::connect_with(&format!("https://{proxy}"), "k", cfg, opts)
                .await
                .map(|_| ())
                .unwrap_err();
            assert_eq!(e.kind, ErrorKind::Auth, "{e}");
            assert!(!e.retryable && e.message.contains("not trusted"), "{e}");
            assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_switch_connection_retries_through_an_untrusted_certificate() {
    use switch_common::*;
    bounded(async {
        let w = world(peer_config(Generation::Current)).await;
        let proxy = SwappableProxy::start(trusted(), w.h.addr()).await;
        let origin = format!("https://{}", proxy.addr);
        let mut c = SwitchClient::connect(&origin, &w.a.key, config(&w.a, Transport::WebSocket, &[]))
            .await
            .unwrap();
        // Live, then its reopens meet a certificate it does not trust (a captive portal, say):
        // it goes on retrying, and attaches again once the right certificate is back.
        proxy.present(&make_cert());
        proxy.cut();
        until(&mut c, "a reopen refused for the certificate", |e| {
            assert!(!matches!(e, Event::Stopped { .. }), "{e:?}");
            matches!(e, Event::Disconnected { reason, .. } if reason.contains("not trusted"))
        })
        .await;
        proxy.present(trusted());
        until(&mut c, "the connection back", |e| {
            assert!(!matches!(e, Event::Stopped { .. }), "{e:?}");
            matches!(e, Event::Connected { .. })
        })
        .await;
        c.close().await;
    })
    .await
}

#[tokio::test]
async fn tls_to_a_plain_server_is_a_retryable_closed_error() {
    bounded(async {
        let srv = common::server(ReferenceConfig::default()).await;
        let e = RktClient::connect(&format!("rkts://{}", srv.local_addr()), ClientConfig::default())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
        assert!(e.error.retryable, "{e}");
        assert!(e.error.message.contains("TLS handshake"), "{e}");
        srv.shutdown().await.unwrap();
    })
    .await
}

#[test]
fn root_certificates_that_do_not_parse_are_invalid() {
    let e = tls::add_root_certificates(b"not a certificate").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    let e = tls::add_root_certificates(b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
}

/// `add_root_certificate_der` trusts one certificate given as DER: a server presenting it is
/// refused `auth` before the call and answers after it; bytes that are not a certificate are
/// `invalid` and add nothing.
#[tokio::test]
async fn a_der_root_certificate_is_trusted_once_added() {
    bounded(async {
        let own = make_cert();
        let srv = common::server(ReferenceConfig::default()).await;
        let proxy = tls_proxy(&own, srv.local_addr()).await;
        let address = format!("rkts://{proxy}");
        let e = RktClient::connect(&address, ClientConfig::default()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{e}");

        let e = tls::add_root_certificate_der(b"not a certificate").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
        tls::add_root_certificate_der(&own.der).unwrap();
        let c = RktClient::connect(&address, ClientConfig::default()).await.unwrap();
        assert_eq!(c.server_info().agreed_version, 1);
        c.close().await;
        srv.shutdown().await.unwrap();
    })
    .await
}

/// A bare RKT peer over TLS (presenting the trusted certificate) for one connection: the
/// upgrade, a HELLO_ACK to the client's HELLO, then it holds the socket and reads nothing.
/// Returns the `wss://` URL.
async fn stalling_tls_peer() -> String {
    let cert = trusted();
    let acceptor = acceptor(cert);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("wss://{}/rkt", listener.local_addr().unwrap());
    tokio::spawn(tokio::time::timeout(Duration::from_secs(30), async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let tls = acceptor.accept(tcp).await.unwrap();
        // Held, and never read, until the test ends.
        let Some(_ws) = common::rkt_hello(tls).await else {
            return;
        };
        std::future::pending::<()>().await
    }));
    url
}

/// The write bound holds over TLS: a peer that stops reading while the client writes a 40 MiB
/// request (far more than the TCP buffers and rustls' 64 KiB hold) ends the connection once the
/// write has made no progress for 5 s, and the request fails `closed` instead of waiting for
/// its 30 s TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_a_write_that_makes_no_progress_is_cut() {
    bounded(async {
        let url = stalling_tls_peer().await;
        let cfg = ClientConfig {
            max_message_size: 64 << 20,
            keepalive: false,
            ..ClientConfig::default()
        };
        let c = RktClient::connect(&url, cfg).await.unwrap();
        let pad = "x".repeat(40 << 20);
        let started = std::time::Instant::now();
        let e = tokio::time::timeout(
            Duration::from_secs(15),
            c.request("echo", Some(json!({ "pad": pad })), RequestOptions::default()),
        )
        .await
        .expect("the request still waiting 15 s later: the write is not bounded over TLS")
        .unwrap_err();
        eprintln!("failed after {:?}: {e}", started.elapsed());
        assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
        assert!(e.error.message.contains("write blocked"), "{e}");
        assert!(started.elapsed() >= Duration::from_secs(5), "{e}");
        tokio::time::timeout(Duration::from_secs(4), c.close())
            .await
            .expect("close() still waiting");
    })
    .await
}

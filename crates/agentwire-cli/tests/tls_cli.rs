//! The built `agentwire` over TLS: `rkt serve` behind a TLS-terminating proxy (tokio-rustls, an
//! rcgen certificate for 127.0.0.1) on 127.0.0.1, reached with `wss://` and `rkts://`, trusted
//! through `AGENTWIRE_CA_FILE`; without it the certificate is not trusted.

mod common;

use common::{listen, BIN, LIMIT};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};
use std::thread;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

const CA_FILE: &str = "AGENTWIRE_CA_FILE";

/// Runs `agentwire ARGS` with `env` (and without an inherited `AGENTWIRE_CA_FILE`), bounded by
/// [`LIMIT`]; returns success, stdout and stderr.
fn run_env(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove(CA_FILE)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(child.wait_with_output()));
    let Ok(out) = rx.recv_timeout(LIMIT) else {
        let _ = Command::new("kill").arg(pid.to_string()).status();
        panic!("agentwire {args:?} did not finish within {LIMIT:?}");
    };
    let out = out.unwrap();
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

/// A TLS proxy on 127.0.0.1 (its own runtime, for the test's life) presenting `cert`, piping to
/// `backend`.
fn tls_proxy(cert: CertificateDer<'static>, key: Vec<u8>, backend: SocketAddr) -> SocketAddr {
    #[allow(deprecated)] // ring's provider (see agentwire_native::tls)
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)))
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
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
    });
    rx.recv_timeout(LIMIT).unwrap()
}

#[test]
fn rkt_discover_over_tls_with_agentwire_ca_file() {
    let (_server, url) = listen(&["rkt", "serve", "--port", "0"]);
    let backend: SocketAddr = url
        .trim_start_matches("ws://")
        .trim_end_matches("/rkt")
        .parse()
        .unwrap();
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let proxy = tls_proxy(ck.cert.der().clone(), ck.key_pair.serialize_der(), backend);
    let dir = std::env::temp_dir().join(format!("agentwire-tls-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, ck.cert.pem()).unwrap();
    let ca = ca.to_str().unwrap();

    for address in [format!("wss://{proxy}/rkt"), format!("rkts://{proxy}")] {
        let (ok, out, err) = run_env(&["rkt", "discover", &address], &[(CA_FILE, ca)]);
        assert!(ok, "{address}: {err}");
        let manifest: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(manifest["intents"].is_array(), "{out}");
    }

    let (ok, _, err) = run_env(&["rkt", "discover", &format!("rkts://{proxy}")], &[]);
    assert!(!ok);
    assert!(err.contains("not trusted") && err.contains(CA_FILE), "{err}");

    let missing = dir.join("missing.pem");
    let (ok, _, err) = run_env(
        &["rkt", "discover", "rkts://127.0.0.1:1"],
        &[(CA_FILE, missing.to_str().unwrap())],
    );
    assert!(!ok);
    assert!(err.contains(CA_FILE) && err.contains("missing.pem"), "{err}");
    // `AGENTWIRE_CA_FILE=` is unset, not a file named "".
    let (ok, out, err) = run_env(&["rkt", "resolve", "rkt://localhost"], &[(CA_FILE, "")]);
    assert!(ok && out == "ws://localhost:7749/rkt\n", "{out} {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

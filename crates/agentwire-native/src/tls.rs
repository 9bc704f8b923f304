//! TLS for every connection the drivers open, and the one function that opens them.
//!
//! One crate-private function, `dial`, connects to an origin (host, port, TLS or not) and returns
//! a stream (plain TCP or TLS over it): the RKT and MoltZap WebSockets, the Switch WebSocket, SSE
//! stream and operations, and MoltZap's registration all go through it. `wss://` and `https://` are TLS (rustls on ring, TLS 1.2 and
//! 1.3, ALPN `http/1.1`), with the URL's host as the server name (SNI; an IP address is checked
//! against the certificate's IP names and sends no SNI) and 443 as the default port; `ws://` and
//! `http://` stay plain TCP. (`rkt://` addresses resolve to `ws://`, `rkts://` to `wss://`: see
//! [`agentwire_rkt::resolve()`].)
//!
//! The server's certificate is checked against the Mozilla roots of `webpki-roots` plus the
//! certificates added with [`add_root_certificates`] (PEM) or [`add_root_certificate_der`]: one
//! process-wide set, used by every connection opened after the call. It is how a private CA or a
//! test's self-signed certificate is trusted; the CLI adds the PEM file named by
//! `AGENTWIRE_CA_FILE`. The system's own store is not read.
//!
//! Failures are `agentwire_core::Error`s (each driver wraps them in its own error type):
//! - the TCP connect, or a TLS handshake that fails for any other reason (the peer closed, an
//!   alert, not TLS at all): kind `closed`, retryable;
//! - a certificate the client does not trust (unknown issuer, expired, not for this host, bad
//!   signature): kind `auth`, not retryable, with a message that says the certificate is not
//!   trusted and how to trust a private CA;
//! - a host that cannot be a TLS server name: kind `invalid`.
//!
//! A Switch connection's open (WebSocket or SSE) gives the engine an `auth` or `invalid` failure
//! as one no retry mends (`Connection::handle_open_unusable`): before the first attach the
//! connection stops with it and `SwitchClient`'s connect fails at once; once the connection has
//! been live, the engine retries it with its backoff. The others are opens that got no answer,
//! which the engine always retries.

use agentwire_core::{Error, ErrorKind};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// The environment variable the CLI reads: a PEM file of extra trust anchors.
pub const CA_FILE_ENV: &str = "AGENTWIRE_CA_FILE";

/// The certificates added to the webpki roots, and the client configuration built from them
/// (rebuilt after an addition).
struct Trust {
    extra: Vec<CertificateDer<'static>>,
    config: Option<Arc<ClientConfig>>,
}

static TRUST: Mutex<Trust> = Mutex::new(Trust {
    extra: Vec::new(),
    config: None,
});

fn trust() -> std::sync::MutexGuard<'static, Trust> {
    TRUST.lock().unwrap_or_else(|p| p.into_inner())
}

/// Trusts the certificates of a PEM text (every `CERTIFICATE` block; other blocks are skipped)
/// as roots, besides the webpki roots, for every TLS connection opened from now on in this
/// process. Returns how many were added; a text without any, or one that does not parse, is an
/// `invalid` error and adds nothing.
pub fn add_root_certificates(pem: &[u8]) -> Result<usize, Error> {
    let invalid = |m: String| Error::new(ErrorKind::Invalid, m);
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("root certificates: bad PEM: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(
            "root certificates: no CERTIFICATE block in the PEM text".into(),
        ));
    }
    let mut store = RootCertStore::empty();
    for cert in &certs {
        store
            .add(cert.clone())
            .map_err(|e| invalid(format!("root certificates: {e}")))?;
    }
    let n = certs.len();
    let mut t = trust();
    t.extra.extend(certs);
    t.config = None;
    Ok(n)
}

/// Trusts one DER-encoded certificate as a root (see [`add_root_certificates`]).
pub fn add_root_certificate_der(der: &[u8]) -> Result<(), Error> {
    let cert = CertificateDer::from(der.to_vec());
    RootCertStore::empty()
        .add(cert.clone())
        .map_err(|e| Error::new(ErrorKind::Invalid, format!("root certificate: {e}")))?;
    let mut t = trust();
    t.extra.push(cert);
    t.config = None;
    Ok(())
}

/// Reads the PEM file named by [`CA_FILE_ENV`], if set, into [`add_root_certificates`]; what
/// the CLI does at start. `Ok(0)` when the variable is not set or empty (`VAR=` unsets it).
pub fn add_root_certificates_from_env() -> Result<usize, Error> {
    let Some(path) = std::env::var_os(CA_FILE_ENV).filter(|p| !p.is_empty()) else {
        return Ok(0);
    };
    let pem = std::fs::read(&path).map_err(|e| {
        Error::new(
            ErrorKind::Invalid,
            format!("{CA_FILE_ENV}={}: {e}", path.to_string_lossy()),
        )
    })?;
    add_root_certificates(&pem).map_err(|e| {
        Error::new(
            ErrorKind::Invalid,
            format!("{CA_FILE_ENV}={}: {}", path.to_string_lossy(), e.message),
        )
    })
}

/// The client configuration of the current trust.
fn config() -> Arc<ClientConfig> {
    let mut t = trust();
    if let Some(config) = &t.config {
        return config.clone();
    }
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for cert in &t.extra {
        let _ = roots.add(cert.clone()); // each was checked when added
    }
    // ring, not aws-lc-rs (no C toolchain or cmake to build it); rustls 0.23.48 deprecates
    // ring's provider only for its lack of post-quantum key exchange.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let config = Arc::new(config);
    t.config = Some(config.clone());
    config
}

/// TCP keepalive for a dialed socket: a peer gone without a close (a host down, a NAT that
/// forgot the flow) is found by the kernel's probes after 30 s idle, every 10 s (Linux gives up
/// after 9, about 2 minutes), not after its default 2 hours. The probes run only while nothing
/// sent is unacknowledged: with a frame in flight to a dead peer, the kernel's retransmissions
/// decide (about 15 minutes on Linux) or the protocol's own timeouts do. The protocols' own
/// liveness (the RKT keepalive PING, Switch's pings and beats) stays; MoltZap has none a client
/// can rely on.
fn keepalive() -> socket2::TcpKeepalive {
    let keepalive = socket2::TcpKeepalive::new().with_time(Duration::from_secs(30));
    #[cfg(any(target_os = "linux", target_os = "macos", target_os = "windows"))]
    let keepalive = keepalive.with_interval(Duration::from_secs(10));
    keepalive
}

/// A connection to a server: plain TCP, or TLS over it.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stream::Plain(_) => "Stream::Plain",
            Stream::Tls(_) => "Stream::Tls",
        })
    }
}

/// Connects to `host:port` (an IPv6 host in brackets, as in a URL), Nagle off, TCP keepalive on
/// ([`keepalive`]), and with `tls` completes the TLS handshake with `host` as the server name.
/// Not bounded in time: the caller bounds it. Errors: see the module docs.
pub(crate) async fn dial(host: &str, port: u16, tls: bool) -> Result<Stream, Error> {
    let closed = |m: String| Error::new(ErrorKind::Closed, m).retryable(true);
    let tcp = TcpStream::connect((host.trim_start_matches('[').trim_end_matches(']'), port))
        .await
        .map_err(|e| closed(format!("cannot connect to {host}:{port}: {e}")))?;
    let _ = tcp.set_nodelay(true);
    let _ = socket2::SockRef::from(&tcp).set_tcp_keepalive(&keepalive());
    if !tls {
        return Ok(Stream::Plain(tcp));
    }
    let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']').to_owned())
        .map_err(|e| Error::new(ErrorKind::Invalid, format!("{host} is not a TLS server name: {e}")))?;
    let tls = TlsConnector::from(config())
        .connect(name, tcp)
        .await
        .map_err(|e| handshake_error(host, port, e))?;
    Ok(Stream::Tls(Box::new(tls)))
}

/// A failed handshake: `auth` when the certificate is not trusted, else `closed` (retryable).
fn handshake_error(host: &str, port: u16, e: std::io::Error) -> Error {
    let rustls_error = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match rustls_error {
        Some(rustls::Error::InvalidCertificate(c)) => Error::new(
            ErrorKind::Auth,
            format!(
                "TLS: the certificate of {host}:{port} is not trusted ({c:?}); a private CA is \
                 trusted with agentwire_native::tls::add_root_certificates (CLI: {CA_FILE_ENV}=<PEM file>)"
            ),
        )
        .retryable(false),
        _ => Error::new(
            ErrorKind::Closed,
            format!("TLS handshake with {host}:{port} failed: {e}"),
        )
        .retryable(true),
    }
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_dialed_socket_has_tcp_keepalive_on() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let Stream::Plain(tcp) = dial("127.0.0.1", port, false).await.unwrap() else {
            panic!("a plain socket");
        };
        let (accepted, _) = listener.accept().await.unwrap();
        assert!(socket2::SockRef::from(&tcp).keepalive().unwrap(), "dialed: on");
        assert!(
            !socket2::SockRef::from(&accepted).keepalive().unwrap(),
            "the default: off"
        );
    }
}

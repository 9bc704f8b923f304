//! [`Response::chunk`] over a socket on 127.0.0.1: a wait that is dropped (as the Switch driver
//! drops its read on every turn of its loop) loses nothing, and the read buffer is kept from one
//! call to the next instead of made anew. [`Response::body_start`] reads a body's start only.
//! The head's bound, and the timeout of an [`exchange`] never answered.

use super::*;

/// The next connection to `listener`, its request's head read.
pub(crate) async fn request_read(listener: &tokio::net::TcpListener) -> tokio::net::TcpStream {
    let (mut s, _) = listener.accept().await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(s.read(&mut byte).await.unwrap(), 1);
        head.push(byte[0]);
    }
    s
}

#[tokio::test]
async fn a_dropped_wait_loses_nothing_and_keeps_the_read_buffer() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = Origin::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    let (go, went) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let mut s = request_read(&listener).await;
        s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
            .await
            .unwrap();
        went.await.unwrap();
        s.write_all(b"6\r\nsecond\r\n0\r\n\r\n").await.unwrap();
    });
    let wait = Duration::from_millis(50);
    tokio::time::timeout(Duration::from_secs(10), async {
        let mut response = Response::send(&origin, None, &HttpRequest::get("/events".into()))
            .await
            .unwrap();
        assert_eq!(response.chunk().await.unwrap().unwrap(), b"first");
        assert!(tokio::time::timeout(wait, response.chunk()).await.is_err());
        let kept = (response.pending.as_ptr(), response.pending.capacity());
        assert!(kept.1 >= 16 * 1024, "{kept:?}"); // READ_BUF, written out
        for _ in 0..3 {
            assert!(tokio::time::timeout(wait, response.chunk()).await.is_err());
            assert_eq!((response.pending.as_ptr(), response.pending.capacity()), kept);
        }
        go.send(()).unwrap();
        assert_eq!(response.chunk().await.unwrap().unwrap(), b"second");
        assert_eq!((response.pending.as_ptr(), response.pending.capacity()), kept);
        assert_eq!(response.chunk().await.unwrap(), None);
    })
    .await
    .expect("bounded");
    server.await.unwrap();
}

/// A refusal whose body is longer than what is read, and never ends: its start, at once (the
/// Switch driver got an empty body for one over 64 KiB, a `limit` error it dropped).
#[tokio::test]
async fn the_start_of_an_endless_body_is_read() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = Origin::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    let (done, ended) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let mut s = request_read(&listener).await;
        let mut answer = b"HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for _ in 0..100 {
            answer.extend_from_slice(b"400\r\n");
            answer.extend_from_slice(&[b'x'; 1024]);
            answer.extend_from_slice(b"\r\n");
        }
        // Not all of it is read: the client may be gone before the end is written.
        let _ = s.write_all(&answer).await;
        ended.await.ok();
    });
    tokio::time::timeout(Duration::from_secs(10), async {
        let response = Response::send(&origin, None, &HttpRequest::get("/events".into()))
            .await
            .unwrap();
        assert_eq!(response.status, 409);
        assert_eq!(
            response
                .body_start(70_000, tokio::time::Instant::now() + Duration::from_secs(8))
                .await
                .unwrap(),
            "x".repeat(70_000)
        );
    })
    .await
    .expect("bounded");
    done.send(()).unwrap();
    server.await.unwrap();
}

/// A request the server took and never answered: a timeout naming the path without its query
/// (which may carry a credential), the server and the bound; and it was sent.
#[tokio::test]
async fn an_unanswered_request_names_its_path_without_the_query() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = Origin::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    let server = tokio::spawn(async move {
        let _held = request_read(&listener).await;
        std::future::pending::<()>().await
    });
    let request = HttpRequest::get("/agents/a/events?token=SECRET".into());
    let e = exchange(&origin, None, &request, Duration::from_millis(200), 1_000)
        .await
        .unwrap_err();
    assert!(e.sent);
    assert_eq!(e.error.kind, ErrorKind::Timeout);
    let said = format!(
        "no answer to GET /agents/a/events from {} within 200 ms",
        origin.authority()
    );
    assert_eq!(e.error.message, said);
    server.abort();
}

/// A head over [`MAX_HEAD_BYTES`] is refused however the reads fall: here its first 1,000 bytes
/// come alone, so that reads of 4 KiB would pass 16 KiB before the head's end.
#[tokio::test]
async fn a_head_over_16_kib_is_refused_when_it_comes_in_uneven_pieces() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = Origin::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    let server = tokio::spawn(async move {
        let mut s = request_read(&listener).await;
        let mut head = format!("HTTP/1.1 200 OK\r\nX-Pad: {}\r\n", "p".repeat(16_400)).into_bytes();
        head.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        s.write_all(&head[..1_000]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = s.write_all(&head[1_000..]).await;
    });
    let e = Response::send(&origin, None, &HttpRequest::get("/a".into()))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Limit, "{e}");
    server.await.unwrap();
}

/// A body's start is there once `limit` bytes are: it does not wait for more (nor for the
/// deadline) when they stop there.
#[tokio::test]
async fn a_body_start_is_read_once_its_limit_is_there() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = Origin::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    let server = tokio::spawn(async move {
        let mut s = request_read(&listener).await;
        s.write_all(b"HTTP/1.1 409 Conflict\r\nContent-Length: 100\r\n\r\n0123456789")
            .await
            .unwrap();
        std::future::pending::<()>().await
    });
    let response = Response::send(&origin, None, &HttpRequest::get("/a".into()))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let start = tokio::time::timeout(Duration::from_secs(5), response.body_start(10, deadline))
        .await
        .expect("waited on with its 10 bytes read");
    assert_eq!(start.unwrap(), "0123456789");
    server.abort();
}

//! Each fault on both transports, a client that does not read, and shutdown.

mod common;

use agentwire_peer_switch::{Faults, Generation};
use common::*;
use futures_util::StreamExt;
use std::time::Duration;

fn faults(f: impl FnOnce(&mut Faults)) -> Faults {
    let mut out = Faults::default();
    f(&mut out);
    out
}

#[tokio::test]
async fn drop_after_events() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        h.set_faults(faults(|f| f.drop_after_events = Some(2)));
        let mut w = ws(&h, &a, &format!("connection_id={}&rooms={room}", cid())).await;
        let mut s = sse(&h, &a, &format!("connection_id={}&scope=all", cid())).await;
        next(&mut w).await;
        s.next().await;
        for i in 1..=3 {
            h.post_as_user(&room, "carol", &format!("m{i}"));
        }
        let (frames, code) = until_end(&mut w).await;
        assert_eq!((frames.len(), code), (2, None), "two events, then no close frame");
        assert_eq!(s.next().await.2.as_deref(), Some("1"));
        assert_eq!(s.next().await.2.as_deref(), Some("2"));
        assert_eq!(s.next_raw().await, None);
        assert!(!s.finished, "dropped without the last chunk");
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn stall_writes_nothing_until_lifted() {
    bounded(async {
        let mut c = cfg(Generation::Current);
        c.keepalive = Duration::from_millis(50);
        let h = peer(c).await;
        let a = h.add_agent("alice");
        let room = h.add_room("lobby", &[&a.id]);
        let mut w = ws(&h, &a, &format!("connection_id={}&rooms={room}", cid())).await;
        let mut s = sse(&h, &a, &format!("connection_id={}&scope=all", cid())).await;
        next(&mut w).await;
        s.next().await;
        h.set_faults(faults(|f| f.stall = true));
        h.post_as_user(&room, "carol", "held");
        // Not even pings or keepalives.
        assert!(tokio::time::timeout(Duration::from_millis(300), w.next())
            .await
            .is_err());
        assert!(tokio::time::timeout(Duration::from_millis(300), s.item_within(WAIT))
            .await
            .is_err());
        // HTTP keeps answering.
        let r = get(&h, &format!("/agents/{}/ops", a.id), &a.key).await;
        assert_eq!(r.status, 200);
        h.set_faults(Faults::default());
        assert_eq!(next(&mut w).await["id"], 1);
        assert_eq!(s.next().await.2.as_deref(), Some("1"));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn garbage_every_nth_event() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        h.set_faults(faults(|f| f.garbage_every = Some(2)));
        let mut w = ws(&h, &a, &format!("connection_id={}&rooms={room}", cid())).await;
        let mut s = sse(&h, &a, &format!("connection_id={}&scope=all", cid())).await;
        next(&mut w).await;
        s.next().await;
        for i in 1..=4 {
            h.post_as_user(&room, "carol", &format!("m{i}"));
        }
        let mut got = Vec::new();
        for _ in 0..6 {
            let f = next(&mut w).await;
            got.push(
                f["id"]
                    .as_u64()
                    .map_or_else(|| f.as_str().unwrap_or("?").to_string(), |n| n.to_string()),
            );
        }
        assert_eq!(got, ["1", "}{ not json", "2", "3", "}{ not json", "4"]);
        let mut sse_got = Vec::new();
        for _ in 0..6 {
            let (event, data, id) = s.next_raw().await.unwrap();
            sse_got.push(id.unwrap_or_else(|| format!("{event}: {data}")));
        }
        assert_eq!(
            sse_got,
            ["1", "message: }{ not json", "2", "3", "message: }{ not json", "4"]
        );
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn no_pings() {
    bounded(async {
        let (h, a, _, _) = world(Generation::Current).await;
        h.set_faults(faults(|f| f.no_pings = true));
        let mut w = ws(&h, &a, &format!("connection_id={}", cid())).await;
        next(&mut w).await;
        assert!(tokio::time::timeout(Duration::from_millis(400), w.next())
            .await
            .is_err());
        h.set_faults(Faults::default());
        assert_eq!(next_any(&mut w).await.unwrap()["event"], "ping");
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn ignored_beats_lapse_a_healthy_stream() {
    bounded(async {
        let mut c = cfg(Generation::Released);
        c.heartbeat_ttl = Duration::from_millis(300);
        c.faults.ignore_heartbeats = true;
        let h = peer(c).await;
        let a = h.add_agent("alice");
        let id = cid();
        let mut s = sse(&h, &a, &format!("connection_id={id}")).await;
        s.next().await;
        let beater = {
            let (addr, agent, id) = (h.addr(), a.clone(), id.clone());
            tokio::spawn(async move {
                loop {
                    let body = format!(r#"{{"connection_id":"{id}","cursor":0}}"#);
                    let auth = bearer(&agent.key);
                    let path = format!("/agents/{}/connection/beat", agent.id);
                    request(addr, "POST", &path, &[("authorization", &auth)], Some(&body)).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        };
        assert_eq!(s.next().await.0, "evicted");
        assert_eq!(s.next_raw().await, None);
        beater.abort();
        assert_eq!(beat(&h, &a, &id, 0).await.0, 404);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_client_that_does_not_read_is_cut_off() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        let mut w = ws(&h, &a, &format!("connection_id={}&rooms={room}", cid())).await;
        next(&mut w).await;
        // More events than the socket's queue holds, faster than it is written (the test runs
        // on one thread, so the socket task gets no turn in between).
        let body = "x".repeat(1024);
        let total = 1100;
        for _ in 0..total {
            h.post_as_user(&room, "carol", &body);
        }
        let (frames, code) = until_end(&mut w).await;
        assert!(frames.len() < total, "{} of {total} delivered", frames.len());
        assert_eq!(code, None, "dropped, not closed");
        assert_eq!(h.connections(&a.id), 1, "the connection outlives its socket");
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn shutdown_closes_sockets_and_ends_streams() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        let mut w = ws(&h, &a, &format!("connection_id={}&rooms={room}", cid())).await;
        let mut s = sse(&h, &a, &format!("connection_id={}", cid())).await;
        next(&mut w).await;
        s.next().await;
        let addr = h.addr();
        h.shutdown().await;
        assert_eq!(until_end(&mut w).await.1, Some(1001));
        assert_eq!(s.next_raw().await, None);
        assert!(s.finished);
        assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    })
    .await;
}

//! The current generation's WebSocket with a plain tokio-tungstenite client: the open, pings and
//! pongs, fan-out with per-agent sequences, claims at open, lapse, the cap, refusals, scope and
//! filter; and the released generation's missing route. Resume and takeover are in `resume.rs`.

mod common;

use agentwire_peer_switch::Generation;
use common::*;
use serde_json::{json, Value};
use std::time::Duration;

/// The peer's defaults are the numbers of switch-agent-connection.md and
/// switch-released-0.19.md (the tests run it faster): a ping (and the announced beat) every 2 s,
/// a lapse after 6 s without a pong or beat, a `: keepalive` comment after 15 s idle, 32
/// connections per agent, and a buffer of 2000 events and 15 minutes.
#[test]
fn the_defaults_are_the_specs_numbers() {
    for generation in [Generation::Current, Generation::Released] {
        let c = agentwire_peer_switch::PeerConfig::new(generation);
        assert_eq!(
            (c.heartbeat_interval, c.heartbeat_ttl, c.keepalive, c.replay_max_age),
            (
                Duration::from_secs(2),
                Duration::from_secs(6),
                Duration::from_secs(15),
                Duration::from_secs(15 * 60)
            )
        );
        assert_eq!((c.max_connections_per_agent, c.replay_capacity), (32, 2000));
    }
}

#[tokio::test]
async fn open_sends_connection_state_first_then_pings() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        let c = cid();
        let mut w = ws(
            &h,
            &a,
            &format!("connection_id={c}&rooms={room}&client=probe&client_version=0.0.1"),
        )
        .await;
        let state = next_any(&mut w).await.unwrap();
        assert_eq!(state["event"], "connection_state");
        assert!(state.get("id").is_none());
        let d = &state["data"];
        assert_eq!(d["connection_id"], c.as_str());
        assert_eq!(d["agent_id"], a.id.as_str());
        assert!(d["generation"].as_u64().unwrap() >= 1);
        assert_eq!(
            (d["scope"].as_str(), d["filter"].as_str()),
            (Some("single"), Some("all"))
        );
        assert_eq!(d["spawn_capable"], false);
        assert_eq!(d["rooms"], json!([room]));
        assert_eq!((d["cursor"].as_u64(), d["protocol"].as_u64()), (Some(0), Some(1)));
        assert_eq!(d["heartbeat_interval_seconds"], 0.1);
        assert_eq!(
            d["server"],
            json!({"version": "0.20.0", "contracts": {"agent-protocol": {"speaks": 6, "accepts": 1}}})
        );
        assert_eq!(
            d["client"],
            json!({"speaks": null, "accepts": null, "artifact": "probe", "version": "0.0.1"})
        );
        assert_eq!(next_any(&mut w).await.unwrap(), json!({"event": "ping", "data": {}}));
        send(&mut w, r#"{"type":"pong","cursor":0}"#).await;
        send(&mut w, r#"{"type":"something else"}"#).await;
        send(&mut w, "not json at all").await;
        assert_eq!(next_any(&mut w).await.unwrap()["event"], "ping");
        assert_eq!(h.connections(&a.id), 1);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn pongs_keep_a_connection_alive_past_its_ttl() {
    bounded(async {
        let mut c = cfg(Generation::Current);
        // Pings every 100 ms (cfg), TTL 1 s: answered for 2.5 s; a pause under 900 ms is tolerated.
        c.heartbeat_ttl = Duration::from_millis(1_000);
        let h = peer(c).await;
        let a = h.add_agent("alice");
        let mut w = ws(&h, &a, &format!("connection_id={}", cid())).await;
        assert_eq!(next_any(&mut w).await.unwrap()["event"], "connection_state");
        let until = tokio::time::Instant::now() + Duration::from_millis(2_500);
        // "A `generation` in the pong is ignored: the socket uses the generation from when it
        // opened": each pong names a generation this socket never had, and still counts (other
        // tests keep sockets alive with plain pongs).
        while tokio::time::Instant::now() < until {
            let f = next_any(&mut w).await.expect("socket ended");
            assert_eq!(f["event"], "ping", "{f}");
            send(&mut w, r#"{"type":"pong","cursor":0,"generation":999}"#).await;
        }
        assert_eq!(h.connections(&a.id), 1);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn messages_fan_out_with_per_agent_sequences() {
    bounded(async {
        let (h, a, b, room) = world(Generation::Current).await;
        // bob's numbering runs ahead: an event in a room alice is not in.
        let side = h.add_room("side", &[&b.id]);
        h.post_as_user(&side, "carol", "before");
        let (ca, cb) = (cid(), cid());
        let mut wa = ws(&h, &a, &format!("connection_id={ca}&rooms={room}")).await;
        let mut wb = ws(&h, &b, &format!("connection_id={cb}&rooms={room}")).await;
        assert_eq!(next(&mut wa).await["data"]["cursor"], 0);
        assert_eq!(next(&mut wb).await["data"]["cursor"], 1);
        let r = op(
            &h,
            &a,
            Some(&ca),
            "connect_to_room",
            &format!(r#"{{"room_id":"{room}"}}"#),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(next(&mut wa).await["event"], "subscription_changed");
        let r = op(&h, &a, Some(&ca), "post_message", r#"{"body":"hello @bob"}"#).await;
        let event_id = r.json()["result"]["event_id"].as_str().unwrap().to_string();
        let ma = next(&mut wa).await;
        let mb = next(&mut wb).await;
        assert_eq!((ma["id"].as_u64(), ma["data"]["sequence"].as_u64()), (Some(1), Some(1)));
        assert_eq!((mb["id"].as_u64(), mb["data"]["sequence"].as_u64()), (Some(2), Some(2)));
        for (m, addressed) in [(&ma, false), (&mb, true)] {
            assert_eq!(m["event"], "message");
            let d = &m["data"];
            assert_eq!(
                (d["type"].as_str(), d["room_id"].as_str()),
                (Some("message"), Some(room.as_str()))
            );
            assert_eq!(
                (&d["bridge_id"], &d["channel_type"]),
                (&Value::Null, &json!("channel_public"))
            );
            let p = &d["payload"];
            assert_eq!(p["addressed"], addressed);
            assert_eq!(
                (p["sender_name"].as_str(), p["body"].as_str()),
                (Some("alice"), Some("hello @bob"))
            );
            assert_eq!(p["message_id"], event_id.as_str());
            assert!(p["sender"].as_str().unwrap().starts_with("@switch-agent-"));
            assert!(p["timestamp"].as_u64().unwrap() > 1_700_000_000_000);
            assert_eq!((&p["thread_id"], &p["attachments"]), (&Value::Null, &json!([])));
        }
        assert_eq!((h.head(&a.id), h.head(&b.id)), (1, 2));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn rooms_on_open_take_the_claim_from_a_sibling() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        // Protocol 6 clients are told with room_released; protocol 1 clients only see the new set.
        let mut old6 = ws(
            &h,
            &a,
            &format!("connection_id={}&rooms={room}&protocol=6&protocol_accepts=1", cid()),
        )
        .await;
        assert_eq!(next(&mut old6).await["data"]["protocol"], 6);
        let mut new = ws(&h, &a, &format!("connection_id={}&rooms={room}", cid())).await;
        assert_eq!(next(&mut new).await["data"]["rooms"], json!([room]));
        assert_eq!(
            next(&mut old6).await,
            json!({"event": "subscription_changed", "data": {"rooms": [],
                "reason": "room taken over by another connection of this agent"}})
        );
        assert_eq!(
            next(&mut old6).await,
            json!({"event": "room_released", "data": {"room_id": room, "session_id": null}})
        );
        let mut third = ws(&h, &a, &format!("connection_id={}&rooms={room}", cid())).await;
        next(&mut third).await;
        assert_eq!(next(&mut new).await["event"], "subscription_changed");
        quiet(&mut new, Duration::from_millis(200)).await;
        // Only the claimer gets the room's events.
        h.post_as_user(&room, "carol", "hi");
        assert_eq!(next(&mut third).await["id"], 1);
        quiet(&mut new, Duration::from_millis(100)).await;
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_claim_taken_from_an_all_connection_changes_not_its_set() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        let q = format!(
            "connection_id={}&rooms={room}&scope=all&protocol=6&protocol_accepts=1",
            cid()
        );
        let mut all = ws(&h, &a, &q).await;
        assert_eq!(next(&mut all).await["data"]["rooms"], json!([room]));
        let mut single = ws(&h, &a, &format!("connection_id={}&rooms={room}", cid())).await;
        next(&mut single).await;
        // It lost the claim (room_released) but still covers the room: no subscription_changed.
        assert_eq!(
            next(&mut all).await,
            json!({"event": "room_released", "data": {"room_id": room, "session_id": null}})
        );
        quiet(&mut all, Duration::from_millis(200)).await;
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_lapsed_heartbeat_evicts_and_forgets_the_connection() {
    bounded(async {
        let mut c = cfg(Generation::Current);
        c.heartbeat_ttl = Duration::from_millis(300);
        c.faults.ignore_heartbeats = true;
        let h = peer(c).await;
        let a = h.add_agent("alice");
        let mut w = ws(&h, &a, &format!("connection_id={}", cid())).await;
        let mut evicted = None;
        while let Some(f) = next_any(&mut w).await {
            match f["event"].as_str() {
                Some("ping") => send(&mut w, r#"{"type":"pong","cursor":0}"#).await,
                Some("evicted") => {
                    evicted = Some(f);
                    break;
                }
                _ => {}
            }
        }
        assert_eq!(
            evicted.unwrap()["data"],
            json!({"code": "heartbeat_lapsed", "reason": "heartbeat lapsed; reopen the stream and resume from your cursor"})
        );
        assert_eq!(until_end(&mut w).await.1, Some(1000));
        assert_eq!(h.connections(&a.id), 0);
        h.shutdown().await;
        // A dropped socket leaves the connection until its TTL lapses (2 s here, so that a
        // loaded machine's delays stay well inside it).
        let mut c = cfg(Generation::Current);
        c.heartbeat_ttl = Duration::from_secs(2);
        let h = peer(c).await;
        let a = h.add_agent("alice");
        let w = ws(&h, &a, &format!("connection_id={}", cid())).await;
        drop(w);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(h.connections(&a.id), 1);
        let until = tokio::time::Instant::now() + Duration::from_secs(10);
        while h.connections(&a.id) != 0 {
            assert!(tokio::time::Instant::now() < until, "the connection outlived its TTL by 8 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn the_33rd_connection_is_refused() {
    bounded(async {
        let (h, a, _, _) = world(Generation::Current).await;
        let mut open = Vec::new();
        for _ in 0..32 {
            let mut w = ws(&h, &a, &format!("connection_id={}", cid())).await;
            assert_eq!(next(&mut w).await["event"], "connection_state");
            open.push(w);
        }
        assert_eq!(h.connections(&a.id), 32);
        let mut w = ws(&h, &a, &format!("connection_id={}", cid())).await;
        let (frames, code) = until_end(&mut w).await;
        let detail = format!("agent {} already has 32 open connections", a.id);
        assert_eq!(
            frames,
            [json!({"event": "refused", "data": {"status": 409, "detail": detail}})]
        );
        assert_eq!(code, Some(4409));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn refusals_are_frames_and_4xxx_closes() {
    bounded(async {
        let (h, a, _, _) = world(Generation::Current).await;
        let c = cid();
        for auth in [None, Some("Bearer nope"), Some(a.key.as_str())] {
            let mut w = ws_try(&h, &a.id, &format!("connection_id={c}"), auth).await.unwrap();
            assert_eq!(until_end(&mut w).await, (vec![], Some(4401)), "{auth:?}");
        }
        let cases = [
            ("scope=all".to_string(), 400, json!("connection_id is required to open an event stream; generate a UUID and reuse it when reconnecting so the connection survives the drop")),
            (format!("connection_id={c}&scope=everything"), 400, json!("scope must be 'single' or 'all', got 'everything'")),
            (format!("connection_id={c}&filter=some"), 400, json!("filter must be 'all' or 'addressed', got 'some'")),
            (format!("connection_id={c}&start_from=banana"), 400, json!("start_from must be 'head' or a sequence number, got 'banana'")),
            (format!("connection_id={c}&rooms=00000000-0000-0000-0000-000000000000"), 403, json!("Room not found: 00000000-0000-0000-0000-000000000000")),
            (format!("connection_id={c}&protocol=7&protocol_accepts=7"), 409, json!({
                "message": "this client speaks agent-protocol 7-7 and the server speaks 1-6; the ranges do not overlap, so update switch-core",
                "contract": "agent-protocol",
                "server": {"version": "0.20.0", "speaks": 6, "accepts": 1},
                "client": {"speaks": 7, "accepts": 7},
                "remedy": "update switch-core"})),
        ];
        for (query, status, detail) in cases {
            let mut w = ws(&h, &a, &query).await;
            let (frames, code) = until_end(&mut w).await;
            assert_eq!(frames, [json!({"event": "refused", "data": {"status": status, "detail": detail}})], "{query}");
            assert_eq!(code, Some(4000 + status));
        }
        let mut w = ws(&h, &a, &format!("connection_id={c}&protocol=x")).await;
        let (frames, code) = until_end(&mut w).await;
        assert_eq!((frames[0]["data"]["status"].as_u64(), code), (Some(422), Some(4422)));
        assert_eq!(frames[0]["data"]["detail"][0]["loc"], json!(["query", "protocol"]));
        assert_eq!(h.connections(&a.id), 0);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn scope_all_filter_addressed_and_a_single_connection_without_rooms() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        let side = h.add_room("side", &[&a.id]);
        let mut all = ws(&h, &a, &format!("connection_id={}&scope=all", cid())).await;
        let mut rooms = vec![room.clone(), side.clone()];
        rooms.sort();
        assert_eq!(next(&mut all).await["data"]["rooms"], json!(rooms));
        let mut addressed = ws(&h, &a, &format!("connection_id={}&scope=all&filter=addressed", cid())).await;
        assert_eq!(next(&mut addressed).await["data"]["filter"], "addressed");
        let mut none = ws(&h, &a, &format!("connection_id={}", cid())).await;
        assert_eq!(next(&mut none).await["data"]["rooms"], json!([]));
        h.post_as_user(&room, "carol", "for everyone");
        h.post_as_user(&side, "carol", "hey @alice");
        let (m1, m2) = (next(&mut all).await, next(&mut all).await);
        assert_eq!(
            (m1["data"]["room_id"].as_str(), m2["data"]["room_id"].as_str()),
            (Some(room.as_str()), Some(side.as_str()))
        );
        let only = next(&mut addressed).await;
        assert_eq!(
            (only["id"].as_u64(), only["data"]["payload"]["addressed"].as_bool()),
            (Some(2), Some(true))
        );
        // Nothing for the roomless single-scope socket, but it stays open and is pinged.
        assert_eq!(next_any(&mut none).await.unwrap()["event"], "ping");
        quiet(&mut none, Duration::from_millis(200)).await;
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn the_released_generation_has_no_websocket_route() {
    bounded(async {
        let (h, a, _, _) = world(Generation::Released).await;
        let q = format!("connection_id={}", cid());
        let e = ws_try(&h, &a.id, &q, Some(&bearer(&a.key))).await.err().unwrap();
        assert!(e.contains("403"), "{e}");
        let e = ws_try(&h, &a.id, &q, None).await.err().unwrap();
        assert!(e.contains("401"), "{e}");
        let e = ws_try(&h, &a.id, &q, Some("Bearer wrong")).await.err().unwrap();
        assert!(e.contains("401"), "{e}");
        h.shutdown().await;
    })
    .await;
}

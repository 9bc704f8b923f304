//! The connection routes (subscribe, unsubscribe, placements), registration, the legacy
//! message route and the request bounds, over raw HTTP/1.1.

mod common;

use agentwire_peer_kit::testing::exchange;
use agentwire_peer_switch::{Agent, Generation, PeerHandle};
use common::*;
use serde_json::json;

#[tokio::test]
async fn subscribe_unsubscribe_and_placements() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        let side = h.add_room("side", &[&a.id]);
        let stranger = h.add_room("private", &[]);
        let (c1, mut s1) = conn(&h, &a, &room).await;
        let (c2, mut s2) = conn(&h, &a, "").await;
        let sub = |takeover: bool| format!(r#"{{"connection_id":"{c2}","room_id":"{room}","takeover":{takeover}}}"#);
        let (status, body) = route(&h, &a, "subscribe", &sub(false)).await;
        let occupied =
            format!("room {room} is already held by connection {c1} for this agent; close it or pass takeover");
        assert_eq!((status, body), (409, json!({"detail": occupied})));
        let (status, body) = route(&h, &a, "subscribe", &sub(true)).await;
        assert_eq!(status, 200);
        assert_eq!(
            (body["ok"].as_bool(), body["rooms"].clone()),
            (Some(true), json!([room]))
        );
        assert_eq!(body["evicted_connection_id"], c1.as_str());
        assert!(body["warning"]
            .as_str()
            .unwrap()
            .starts_with("You evicted another session"));
        assert_eq!(
            s1.next().await.1,
            json!({"rooms": [], "reason": "room taken over by another connection of this agent"})
        );
        assert_eq!(
            s2.next().await.1,
            json!({"rooms": [room], "reason": "subscription updated"})
        );
        let unsub = format!(r#"{{"connection_id":"{c2}","room_id":"{room}"}}"#);
        assert_eq!(
            route(&h, &a, "unsubscribe", &unsub).await,
            (200, json!({"ok": true, "rooms": []}))
        );
        assert_eq!(s2.next().await.1["rooms"], json!([]));
        let nope = format!(r#"{{"connection_id":"{}","room_id":"{room}","takeover":true}}"#, cid());
        assert_eq!(route(&h, &a, "subscribe", &nope).await.0, 404);
        // Placements: every room must be the agent's, none twice; always a takeover.
        let place = |p: &str| format!(r#"{{"connection_id":"{c1}","placements":{p},"generation":null}}"#);
        let (status, _) = route(
            &h,
            &a,
            "placements",
            &place(&format!(r#"{{"s1":"{room}","s2":"{stranger}"}}"#)),
        )
        .await;
        assert_eq!(status, 403);
        let (status, _) = route(
            &h,
            &a,
            "placements",
            &place(&format!(r#"{{"s1":"{room}","s2":"{room}"}}"#)),
        )
        .await;
        assert_eq!(status, 400);
        result_placed(&h, &a, &c2, &side).await;
        s2.next().await;
        let (status, body) = route(
            &h,
            &a,
            "placements",
            &place(&format!(r#"{{"s1":"{room}","s9":"{side}"}}"#)),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let mut both = vec![room.clone(), side.clone()];
        both.sort();
        assert_eq!(body["placements"], json!({"s1": room, "s9": side}));
        assert_eq!(body["rooms"], json!(both));
        // "403 otherwise, and nothing changes" (and the same for the 400): the first change c1
        // hears of since its room was taken is this placement's.
        assert_eq!(s1.next().await.1["rooms"], json!(both));
        assert_eq!(
            body["released"],
            json!([{"connection_id": c2, "room_id": side, "session_id": "s0"}])
        );
        assert_eq!(s2.next().await.1["rooms"], json!([]));
        // Omitting a session releases its room.
        let (status, body) = route(&h, &a, "placements", &place(&format!(r#"{{"s1":"{room}"}}"#))).await;
        assert_eq!(
            (status, body["rooms"].clone(), body["released"].clone()),
            (200, json!([room]), json!([]))
        );
        assert_eq!(route(&h, &a, "placements", r#"{"connection_id":"x"}"#).await.0, 422);
        h.shutdown().await;
    })
    .await;
}

async fn result_placed(h: &PeerHandle, a: &Agent, conn: &str, room: &str) {
    let body = format!(r#"{{"connection_id":"{conn}","placements":{{"s0":"{room}"}}}}"#);
    let (status, v) = route(h, a, "placements", &body).await;
    assert_eq!((status, v["rooms"].clone()), (200, json!([room])));
}

#[tokio::test]
async fn registration_and_the_legacy_routes() {
    bounded(async {
        let h = peer(cfg(Generation::Released)).await;
        let token = "switch-peer-registration";
        let body = r#"{"name":"dora","description":"d","connector_type":"custom","integration_profile":{}}"#;
        let r = post(&h, "/agents", token, body).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        let agent = Agent {
            id: v["id"].as_str().unwrap().to_string(),
            name: "dora".into(),
            key: v["api_key"].as_str().unwrap().to_string(),
        };
        assert!(agent.key.starts_with("sk_switch_"));
        assert_eq!(post(&h, "/agents", "wrong", body).await.status, 401);
        assert_eq!(request(h.addr(), "POST", "/agents", &[], Some(body)).await.status, 401);
        let r = post(&h, "/agents", token, "{}").await;
        assert_eq!(
            (r.status, r.json()["detail"][0]["loc"].clone()),
            (422, json!(["body", "name"]))
        );
        let room = h.add_room("r", &[&agent.id]);
        let mut s = sse(&h, &agent, &format!("connection_id={}&rooms={room}", cid())).await;
        s.next().await;
        let r = post(
            &h,
            &format!("/agents/{}/message", agent.id),
            &agent.key,
            &format!(r#"{{"room_id":"{room}","content":"legacy"}}"#),
        )
        .await;
        assert_eq!((r.status, r.json()["ok"].as_bool()), (200, Some(true)));
        // The capture's key order (`legacy_message_ok`: switch-core writes `ok` first).
        assert!(r.body.starts_with(r#"{"ok":true,"event_id":"#), "{}", r.body);
        assert_eq!(s.next().await.1["payload"]["body"], "legacy");
        let r = request(h.addr(), "GET", "/version", &[], None).await;
        assert_eq!(
            r.body,
            r#"{"version":"0.19.0","contracts":{"agent-protocol":{"speaks":1,"accepts":1}}}"#
        );
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn request_bounds() {
    bounded(async {
        let (h, a, _, _) = world(Generation::Current).await;
        let addr = h.addr();
        let big_head = format!("GET /version HTTP/1.1\r\nx-filler: {}\r\n\r\n", "a".repeat(17 * 1024));
        let got = exchange(addr, &big_head).await;
        assert!(got.starts_with("HTTP/1.1 431 "), "{got:?}");
        let big_body = format!(
            "POST /agents/{}/ops/list_rooms HTTP/1.1\r\nauthorization: Bearer {}\r\ncontent-length: 70000\r\n\r\n",
            a.id, a.key
        );
        assert!(exchange(addr, &big_body).await.starts_with("HTTP/1.1 413 "));
        assert!(exchange(addr, "NOT HTTP\r\n\r\n").await.starts_with("HTTP/1.1 400 "));
        h.shutdown().await;
    })
    .await;
}

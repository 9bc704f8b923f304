//! Operations over raw HTTP/1.1, with the answers of
//! `tests/vectors/switch-0.19/http_responses.json` where it has them. The connection routes
//! and registration are in `routes.rs`.

mod common;

use agentwire_peer_switch::Generation;
use common::*;
use serde_json::{json, Value};
use std::path::PathBuf;

const NOT_CONNECTED: &str = r#"{"detail":"Not connected to a room. Call connect_to_room first."}"#;

fn result(r: &Resp) -> Value {
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["result"].clone()
}

#[tokio::test]
async fn the_catalog_copies_switch_core_schemas() {
    bounded(async {
        let (h, a, _, _) = world(Generation::Released).await;
        let r = get(&h, &format!("/agents/{}/ops", a.id), &a.key).await;
        assert_eq!(r.status, 200);
        let ours = r.json()["operations"].clone();
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../vectors/switch-0.19/ops.json");
        let theirs: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let names: Vec<&String> = ours.as_object().unwrap().keys().collect();
        assert_eq!(names.len(), 6);
        for name in names {
            assert_eq!(ours[name], theirs["operations"][name], "{name}");
        }
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn connect_to_room_post_and_read() {
    bounded(async {
        let (h, a, b, room) = world(Generation::Current).await;
        let (ca, mut sa) = conn(&h, &a, "").await;
        let (_, mut sb) = conn(&h, &b, &room).await;
        let ctx = result(
            &op(
                &h,
                &a,
                Some(&ca),
                "connect_to_room",
                &format!(r#"{{"room_id":"{room}"}}"#),
            )
            .await,
        );
        assert_eq!(
            (ctx["agent_id"].as_str(), ctx["room_id"].as_str()),
            (Some(a.id.as_str()), Some(room.as_str()))
        );
        assert_eq!((ctx["name"].as_str(), &ctx["warning"]), (Some("lobby"), &Value::Null));
        for k in [
            "roles",
            "references",
            "linked_rooms",
            "documents",
            "packages",
            "reference_types",
        ] {
            assert_eq!(ctx[k], json!([]), "{k}");
        }
        assert!(ctx["instructions"].as_str().unwrap().contains("lobby"));
        assert_eq!(ctx["participants"].as_array().unwrap().len(), 2);
        let (event, data, _) = sa.next().await;
        assert_eq!(
            (event.as_str(), data["rooms"].clone()),
            ("subscription_changed", json!([room]))
        );
        let root = result(&op(&h, &a, Some(&ca), "post_message", r#"{"body":"root"}"#).await)["event_id"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(root.starts_with('$') && root.len() == 44, "{root}");
        let reply = format!(r#"{{"body":"reply @bob","thread_id":"{root}"}}"#);
        result(&op(&h, &a, Some(&ca), "post_message", &reply).await);
        // A reply into a reply goes to the root.
        let second = sb.next().await;
        let third = sb.next().await;
        assert_eq!(second.1["payload"]["body"], "root");
        assert_eq!(
            (
                third.1["payload"]["thread_id"].as_str(),
                third.1["payload"]["addressed"].as_bool()
            ),
            (Some(root.as_str()), Some(true))
        );
        result(&op(&h, &a, Some(&ca), "post_message", r#"{"body":"other"}"#).await);
        let page = result(&op(&h, &a, Some(&ca), "read_context", "{}").await);
        assert_eq!(
            (page["truncated"].as_bool(), page["threads"].as_array().unwrap().len()),
            (Some(false), 2)
        );
        let t0 = &page["threads"][0];
        assert_eq!(
            (t0["root"]["body"].as_str(), t0["replies"][0]["body"].as_str()),
            (Some("root"), Some("reply @bob"))
        );
        assert_eq!(t0["root"]["kind"], "message");
        assert_eq!(t0["root"]["sender_name"], "alice");
        assert_eq!(page["threads"][1]["root"]["body"], "other");
        assert_eq!(page["oldest_timestamp"], t0["root"]["timestamp"]);
        let page = result(&op(&h, &a, Some(&ca), "read_context", r#"{"limit":1}"#).await);
        assert_eq!(
            (page["truncated"].as_bool(), page["threads"].as_array().unwrap().len()),
            (Some(true), 1)
        );
        let page = result(&op(&h, &a, Some(&ca), "read_context", r#"{"since":"2999-01-01T00:00:00Z"}"#).await);
        assert_eq!(
            (page["threads"].clone(), page["oldest_timestamp"].clone()),
            (json!([]), Value::Null)
        );
        let page = result(
            &op(
                &h,
                &a,
                Some(&ca),
                "read_context",
                r#"{"before":"2000-01-01T00:00:00Z"}"#,
            )
            .await,
        );
        assert_eq!(page["threads"], json!([]));
        assert_eq!(
            op(&h, &a, Some(&ca), "read_context", r#"{"since":"yesterday"}"#)
                .await
                .status,
            400
        );
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn connect_to_room_takes_over_with_a_warning() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        let (c1, mut s1) = conn(&h, &a, "").await;
        let (c2, _s2) = conn(&h, &a, "").await;
        let args = format!(r#"{{"room_id":"{room}"}}"#);
        assert_eq!(result(&op(&h, &a, Some(&c1), "connect_to_room", &args).await)["warning"], Value::Null);
        s1.next().await;
        let ctx = result(&op(&h, &a, Some(&c2), "connect_to_room", &args).await);
        let warning = format!("You evicted another session of this agent from room {room} (connection {c1}). Only one session of an agent may act in a room, so that session has been disconnected from it and will stop receiving its events. If that session was doing work here, it no longer is.");
        assert_eq!(ctx["warning"], warning.as_str());
        let (event, data, _) = s1.next().await;
        assert_eq!((event.as_str(), data["rooms"].clone()), ("subscription_changed", json!([])));
        let r = op(&h, &a, Some(&c1), "post_message", r#"{"body":"x"}"#).await;
        assert_eq!((r.status, r.body.as_str()), (400, NOT_CONNECTED));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn targeted_messages_rooms_and_participants() {
    bounded(async {
        let (h, a, b, room) = world(Generation::Current).await;
        let carol = h.add_agent("carol");
        let _side = h.add_room("aardvark", &[&a.id]);
        h.add_room("elsewhere", &[&carol.id]);
        let (ca, _sa) = conn(&h, &a, &room).await;
        result(
            &op(
                &h,
                &a,
                Some(&ca),
                "connect_to_room",
                &format!(r#"{{"room_id":"{room}"}}"#),
            )
            .await,
        );
        let args = r#"{"body":"please look","target_names":["bob","nobody"]}"#;
        let t = result(&op(&h, &a, Some(&ca), "send_targeted_message", args).await);
        assert_eq!(t["target_statuses"], json!({"bob": "disconnected"}));
        let (_, mut sb) = conn(&h, &b, &room).await;
        let t = result(
            &op(
                &h,
                &a,
                Some(&ca),
                "send_targeted_message",
                r#"{"body":"now","target_names":["bob"]}"#,
            )
            .await,
        );
        assert_eq!(t["target_statuses"], json!({"bob": "live"}));
        let (_, m, id) = sb.next().await;
        assert_eq!(
            (m["payload"]["body"].as_str(), m["payload"]["addressed"].as_bool()),
            (Some("@bob now"), Some(true))
        );
        assert_eq!(id.as_deref(), Some("2"));
        let r = op(&h, &a, Some(&ca), "send_targeted_message", r#"{"body":"nobody"}"#).await;
        assert_eq!(r.status, 400);
        let rooms = result(&op(&h, &a, Some(&ca), "list_rooms", r#"{"include_archived":true}"#).await);
        let names: Vec<&str> = rooms
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["aardvark", "lobby"]);
        assert_eq!(
            rooms[1],
            json!({"room_id": room, "name": "lobby", "description": "", "connected": true, "archived": false})
        );
        assert_eq!(rooms[0]["connected"], false);
        h.post_as_user(&room, "dave", "hi");
        let people = result(&op(&h, &a, Some(&ca), "list_participants", "").await);
        assert_eq!(
            people,
            json!([
                {"id": a.id, "name": "alice", "type": "agent", "status": "live", "alias": null},
                {"id": b.id, "name": "bob", "type": "agent", "status": "live", "alias": null},
                {"id": "@dave:localhost", "name": "@dave:localhost", "type": "user", "status": null, "alias": null},
            ])
        );
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn operation_errors() {
    bounded(async {
        let (h, a, _, _) = world(Generation::Released).await;
        let stranger = h.add_room("private", &[]);
        let (c, _s) = conn(&h, &a, "").await;
        let dead = cid();
        let r = op(&h, &a, Some(&dead), "post_message", r#"{"body":"x"}"#).await;
        let detail = format!(r#"{{"detail":"connection {dead} is not open; reconnect and resume from your cursor"}}"#);
        assert_eq!((r.status, r.body), (409, detail));
        let r = op(&h, &a, Some(&c), "no_such_op", "{}").await;
        assert_eq!(r.status, 404);
        assert_eq!(
            r.json()["detail"],
            "unknown operation 'no_such_op'; expected one of: connect_to_room, list_participants, list_rooms, post_message, read_context, send_targeted_message"
        );
        let r = op(&h, &a, Some(&c), "post_message", r#"{"body":"x","bogus":1}"#).await;
        assert_eq!((r.status, r.body.as_str()), (400, r#"{"detail":"post_message does not accept: bogus"}"#));
        for name in ["post_message", "read_context", "list_participants"] {
            let args = if name == "post_message" { r#"{"body":"x"}"# } else { "{}" };
            let r = op(&h, &a, Some(&c), name, args).await;
            assert_eq!((r.status, r.body.as_str()), (400, NOT_CONNECTED), "{name}");
            let r = op(&h, &a, None, name, args).await;
            assert_eq!((r.status, r.body.as_str()), (400, NOT_CONNECTED), "{name} without a connection");
        }
        assert_eq!(op(&h, &a, Some(&c), "post_message", "{}").await.status, 400);
        assert_eq!(op(&h, &a, Some(&c), "post_message", r#"{"body":1}"#).await.status, 400);
        assert_eq!(op(&h, &a, Some(&c), "post_message", "[1]").await.status, 400);
        let r = op(&h, &a, Some(&c), "connect_to_room", &format!(r#"{{"room_id":"{stranger}"}}"#)).await;
        assert_eq!(r.status, 403);
        assert_eq!(op(&h, &a, None, "connect_to_room", &format!(r#"{{"room_id":"{stranger}"}}"#)).await.status, 400);
        let r = request(h.addr(), "POST", &format!("/agents/{}/ops/list_rooms", a.id), &[("authorization", "Bearer x")], Some("{}")).await;
        assert_eq!((r.status, r.body.as_str()), (401, "Invalid credentials"));
        let r = request(h.addr(), "OPTIONS", &format!("/agents/{}/ops", a.id), &[], None).await;
        assert_eq!(r.status, 401, "no CORS: a preflight hits the Bearer check");
        assert_eq!(get(&h, "/nowhere", &a.key).await.status, 404);
        h.shutdown().await;
    })
    .await;
}

//! The peer's behaviour with plain tokio-tungstenite clients and raw JSON frames: registration,
//! both handshakes, DM and group fan-out, list windows, presence.

mod common;

use agentwire_peer_kit::testing::exchange;
use agentwire_peer_moltzap::{Generation, PeerConfig};
use common::*;
use serde_json::{json, Value};
use std::time::Duration;

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("test timed out");
}

#[tokio::test]
async fn http_registration_and_health() {
    bounded(async {
        let h = released().await;
        let addr = h.local_addr();
        assert_eq!(addr.ip().to_string(), "127.0.0.1");
        assert_eq!(
            http(addr, "GET", "/health", None).await,
            (200, r#"{"status":"ok","connections":0,"authenticated":0}"#.into())
        );
        let (status, body) = http(
            addr,
            "POST",
            "/api/v1/auth/register",
            Some(r#"{"name":"agent-one","description":"d"}"#),
        )
        .await;
        assert_eq!(status, 201);
        let v: Value = serde_json::from_str(&body).unwrap();
        let key = v["apiKey"].as_str().unwrap();
        let rest = key.strip_prefix("moltzap_agent_").unwrap();
        let (a, b) = rest.split_once('_').unwrap();
        assert!(
            a.len() == 16
                && b.len() == 64
                && (a.to_string() + b)
                    .bytes()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(v["agentId"].as_str().unwrap().len(), 36);
        assert!(body.starts_with(r#"{"agentId":"#));
        // Taken name: what the released server answers.
        assert_eq!(
            http(addr, "POST", "/api/v1/auth/register", Some(r#"{"name":"agent-one"}"#)).await,
            (500, r#"{"error":"Registration failed"}"#.into())
        );
        for bad in [
            r#"{"name":"A-upper"}"#,
            r#"{"name":"ab"}"#,
            r#"{"name":"-abc"}"#,
            r#"{}"#,
            "not json",
            r#"{"name":"okname","x":1}"#,
        ] {
            let (status, body) = http(addr, "POST", "/api/v1/auth/register", Some(bad)).await;
            assert_eq!(status, 400, "{bad}");
            assert!(
                serde_json::from_str::<Value>(&body).unwrap()["error"].is_string(),
                "{body}"
            );
        }
        assert_eq!(http(addr, "GET", "/nope", None).await.0, 404);
        let mut w = ws(&h).await;
        let (_, health) = http(addr, "GET", "/health", None).await;
        assert_eq!(health, r#"{"status":"ok","connections":1,"authenticated":0}"#);
        send(&mut w, "{").await;
        assert_eq!(
            next_text(&mut w).await,
            r#"{"jsonrpc":"2.0","type":"response","id":null,"error":{"code":-32700,"message":"Invalid JSON"}}"#
        );
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn request_bounds() {
    bounded(async {
        let h = current().await;
        let addr = h.local_addr();
        // Over 16 KiB, though complete within the reads that cross the bound.
        let big_head = format!("GET /health HTTP/1.1\r\nx-filler: {}\r\n\r\n", "a".repeat(17 * 1024));
        let got = exchange(addr, &big_head).await;
        assert!(got.starts_with("HTTP/1.1 431 "), "{got:?}");
        assert!(got.ends_with(r#"{"error":"Request head too large"}"#), "{got:?}");
        // A body over 64 KiB, sent in full.
        let big_body = format!(
            "POST /api/v1/auth/register HTTP/1.1\r\ncontent-length: 70000\r\n\r\n{}",
            "a".repeat(70_000)
        );
        let got = exchange(addr, &big_body).await;
        assert!(got.starts_with("HTTP/1.1 413 "), "{got:?}");
        assert!(got.ends_with(r#"{"error":"Body too large"}"#), "{got:?}");
        let got = exchange(addr, "NOT HTTP\r\n\r\n").await;
        assert!(got.starts_with("HTTP/1.1 400 "), "{got:?}");
        // Still serving.
        assert_eq!(http(addr, "GET", "/health", None).await.0, 200);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn released_dm_fan_out_and_windows() {
    bounded(async {
        let h = released().await;
        let (a_id, a_key) = register(&h, "alice").await;
        let (b_id, b_key) = register(&h, "bob-b").await;
        let mut a = ws(&h).await;
        let mut a2 = ws(&h).await;
        let mut b = ws(&h).await;
        // Before auth.
        let v = call(&mut a, &rreq("1", "system/ping", "{}")).await;
        assert_eq!(
            v["error"],
            json!({"code":-32000,"message":"Not authenticated. Send auth/connect first."})
        );
        let hello = auth_released(&mut a, &a_key).await;
        assert_eq!(hello["result"]["agentId"], a_id.as_str());
        assert_eq!(hello["result"]["protocolVersion"], "2026.425.3");
        auth_released(&mut a2, &a_key).await;
        auth_released(&mut b, &b_key).await;
        let sent = call(
            &mut a,
            &rreq(
                "2",
                "messages/send",
                r#"{"to":"agent:bob-b","parts":[{"type":"text","text":"hi"}]}"#,
            ),
        )
        .await;
        let msg = &sent["result"]["message"];
        assert_eq!(msg["senderId"], a_id.as_str());
        let conv = msg["conversationId"].as_str().unwrap().to_string();
        for w in [&mut b, &mut a2] {
            let ev = next_json(w).await;
            assert_eq!(ev["type"], "event");
            assert_eq!(ev["event"], "messages/received");
            assert_eq!(ev["data"]["message"], *msg);
        }
        silent(&mut a, Duration::from_millis(100)).await;
        // The DM is reused, by `to` and by conversationId.
        let again = call(
            &mut b,
            &rreq(
                "3",
                "messages/send",
                r#"{"to":"agent:alice","parts":[{"type":"text","text":"yo"}]}"#,
            ),
        )
        .await;
        assert_eq!(again["result"]["message"]["conversationId"], conv.as_str());
        next_json(&mut a).await;
        next_json(&mut a2).await;
        for i in 0..5 {
            let p = format!(r#"{{"conversationId":"{conv}","parts":[{{"type":"text","text":"m{i}"}}]}}"#);
            let v = call(&mut a, &rreq(&format!("m{i}"), "messages/send", &p)).await;
            assert!(v["result"]["message"].is_object(), "{v}");
            next_json(&mut b).await;
            next_json(&mut a2).await;
        }
        let list = call(
            &mut b,
            &rreq(
                "l",
                "messages/list",
                &format!(r#"{{"conversationId":"{conv}","limit":2}}"#),
            ),
        )
        .await;
        let texts: Vec<&str> = list["result"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["parts"][0]["text"].as_str().unwrap())
            .collect();
        assert_eq!(texts, ["m3", "m4"]);
        assert_eq!(list["result"]["hasMore"], true);
        let all = call(
            &mut b,
            &rreq(
                "l2",
                "messages/list",
                &format!(r#"{{"conversationId":"{conv}","limit":100}}"#),
            ),
        )
        .await;
        assert_eq!(all["result"]["messages"].as_array().unwrap().len(), 7);
        assert_eq!(all["result"]["hasMore"], false);
        for limit in ["0", "101", "\"5\""] {
            let v = call(
                &mut b,
                &rreq(
                    "l3",
                    "messages/list",
                    &format!(r#"{{"conversationId":"{conv}","limit":{limit}}}"#),
                ),
            )
            .await;
            assert_eq!(v["error"]["code"], -32602, "{limit}");
        }
        // conversations/list and get, lookups.
        let convs = call(&mut b, &rreq("c", "conversations/list", "{}")).await;
        assert_eq!(convs["result"]["conversations"][0]["unreadCount"], 7);
        assert_eq!(convs["result"]["conversations"][0]["lastMessagePreview"], "m4");
        let got = call(
            &mut b,
            &rreq("g", "conversations/get", &format!(r#"{{"conversationId":"{conv}"}}"#)),
        )
        .await;
        assert_eq!(got["result"]["conversation"]["type"], "dm");
        assert_eq!(got["result"]["participants"][1]["agentName"], "bob-b");
        let look = call(
            &mut a,
            &rreq("k", "agents/lookup", &format!(r#"{{"agentIds":["{b_id}"]}}"#)),
        )
        .await;
        assert_eq!(
            look["result"]["agents"][0],
            json!({"id": b_id, "name": "bob-b", "status": "active"})
        );
        let list = call(&mut a, &rreq("k2", "agents/list", "{}")).await;
        assert_eq!(list["result"]["agents"][&a_id]["name"], "alice");
        // A new connection's HelloOk lists the conversation and its count.
        let mut b2 = ws(&h).await;
        let hello = auth_released(&mut b2, &b_key).await;
        assert_eq!(hello["result"]["conversations"][0]["id"], conv.as_str());
        assert_eq!(hello["result"]["unreadCounts"][&conv], 7);
        let v = call(&mut a, &rreq("u", "nope/nope", "{}")).await;
        assert_eq!(v["error"], json!({"code":-32601,"message":"Unknown method: nope/nope"}));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn group_fan_out() {
    bounded(async {
        let h = released().await;
        let (_, ka) = register(&h, "ga-1").await;
        let (ib, kb) = register(&h, "gb-1").await;
        let (ic, kc) = register(&h, "gc-1").await;
        let (mut a, mut b, mut c) = (ws(&h).await, ws(&h).await, ws(&h).await);
        auth_released(&mut a, &ka).await;
        auth_released(&mut b, &kb).await;
        auth_released(&mut c, &kc).await;
        let p = format!(r#"{{"type":"group","name":"trio","participants":[{{"type":"agent","id":"{ib}"}},{{"type":"agent","id":"{ic}"}}]}}"#);
        let created = call(&mut a, &rreq("g", "conversations/create", &p)).await;
        let conv = created["result"]["conversation"].clone();
        assert_eq!(conv["type"], "group");
        for w in [&mut b, &mut c] {
            let ev = next_json(w).await;
            assert_eq!((ev["event"].as_str(), &ev["data"]["conversation"]), (Some("conversations/created"), &conv));
        }
        let id = conv["id"].as_str().unwrap();
        let sent = call(&mut b, &rreq("s", "messages/send", &format!(r#"{{"conversationId":"{id}","parts":[{{"type":"text","text":"hi all"}}]}}"#))).await;
        for w in [&mut a, &mut c] {
            let ev = next_json(w).await;
            assert_eq!(ev["data"]["message"], sent["result"]["message"]);
        }
        silent(&mut b, Duration::from_millis(100)).await;
        let refused = call(&mut a, &rreq("t", "messages/send", r#"{"to":"group:trio","parts":[{"type":"text","text":"x"}]}"#)).await;
        assert_eq!(refused["error"], json!({"code":-32602,"message":"Invalid 'to' format — use agent:<name>"}));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn presence_fan_out() {
    bounded(async {
        let h = released().await;
        let (_, ka) = register(&h, "pa-1").await;
        let (ib, kb) = register(&h, "pb-1").await;
        let mut a = ws(&h).await;
        auth_released(&mut a, &ka).await;
        let sub = call(&mut a, &rreq("s", "presence/subscribe", &format!(r#"{{"agentIds":["{ib}"]}}"#))).await;
        assert_eq!(sub["result"]["statuses"], json!([{"agentId": ib, "status": "offline"}]));
        let mut b = ws(&h).await;
        auth_released(&mut b, &kb).await;
        assert_eq!(next_json(&mut a).await["data"], json!({"agentId": ib, "status": "online"}));
        let up = call(&mut b, &rreq("u", "presence/update", r#"{"status":"away"}"#)).await;
        assert_eq!(up["result"], json!({}));
        let ev = next_text(&mut a).await;
        assert_eq!(ev, format!(r#"{{"jsonrpc":"2.0","type":"event","event":"presence/changed","data":{{"agentId":"{ib}","status":"away"}}}}"#));
        let bad = call(&mut b, &rreq("u2", "presence/update", r#"{"status":"busy"}"#)).await;
        assert_eq!(bad["error"]["code"], -32602);
        drop(b);
        assert_eq!(next_json(&mut a).await["data"], json!({"agentId": ib, "status": "offline"}));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn released_refuses_current_handshake_then_accepts_auth_connect() {
    bounded(async {
        let h = released().await;
        let (_, key) = register(&h, "auto-one").await;
        let mut w = ws(&h).await;
        let v = creq(
            "1",
            "agent/network/connect",
            &format!(r#"{{"agentKey":"{key}","minProtocol":"2026.811.0","maxProtocol":"2026.811.0"}}"#),
        );
        send(&mut w, &v).await;
        assert_eq!(
            next_text(&mut w).await,
            r#"{"jsonrpc":"2.0","type":"response","id":"1","error":{"code":-32600,"message":"Invalid request frame"}}"#
        );
        // Same socket: the released handshake works.
        auth_released(&mut w, &key).await;
        // Several objects in one message are not one JSON value for a released server.
        send(
            &mut w,
            &format!("{}{}", rreq("a", "system/ping", "{}"), rreq("b", "system/ping", "{}")),
        )
        .await;
        assert_eq!(next_json(&mut w).await["error"]["code"], -32700);
        send(&mut w, "[1]").await;
        assert_eq!(
            next_text(&mut w).await,
            r#"{"jsonrpc":"2.0","type":"response","id":null,"error":{"code":-32600,"message":"Invalid request frame"}}"#
        );
        let both = call(&mut w, &rreq("c", "auth/connect", "{}")).await; // already authenticated: HelloOk again
        assert!(both["result"]["policy"].is_object());
        h.shutdown().await;
    })
    .await;
}

/// The released handshake's rules (moltzap-released-2026.425.md, "Handshake"): params are
/// exactly one credential with `minProtocol` and `maxProtocol`, both keys are -32602 "Invalid
/// parameters", a bad key is -32000 "Authentication failed", the protocol strings are not
/// compared, and none of these refusals closes the socket: the connect is retried on it.
#[tokio::test]
async fn released_connect_takes_exactly_one_credential_and_keeps_the_socket_on_refusals() {
    bounded(async {
        let h = released().await;
        let (id, key) = register(&h, "one-key").await;
        let mut w = ws(&h).await;
        let both = format!(r#"{{"agentKey":"{key}","sessionToken":"t","minProtocol":"1","maxProtocol":"1"}}"#);
        let v = call(&mut w, &rreq("1", "auth/connect", &both)).await;
        assert_eq!(
            v["error"],
            json!({"code": -32602, "message": "Invalid parameters"}),
            "{v}"
        );
        let v = call(
            &mut w,
            &rreq("2", "auth/connect", r#"{"minProtocol":"1","maxProtocol":"1"}"#),
        )
        .await;
        assert_eq!(v["error"]["code"], -32602, "no credential: {v}");
        let v = call(
            &mut w,
            &rreq(
                "3",
                "auth/connect",
                r#"{"agentKey":"moltzap_agent_x_y","minProtocol":"1","maxProtocol":"1"}"#,
            ),
        )
        .await;
        assert_eq!(
            v["error"],
            json!({"code": -32000, "message": "Authentication failed"}),
            "{v}"
        );
        // Any protocol strings: the released server does not compare them.
        let ok = format!(r#"{{"agentKey":"{key}","minProtocol":"zzz","maxProtocol":"0"}}"#);
        let v = call(&mut w, &rreq("4", "auth/connect", &ok)).await;
        assert_eq!(v["result"]["agentId"], id.as_str(), "{v}");
        h.shutdown().await;
    })
    .await;
}

/// The released entities' bounds (moltzap-released-2026.425.md, "Entities"): a message has 1
/// to 10 parts and a text part 1 to 32,768 characters; `messages/send` past either is -32602,
/// and the edges are sent.
#[tokio::test]
async fn released_messages_take_1_to_10_parts_and_texts_of_1_to_32768_characters() {
    bounded(async {
        let h = released().await;
        let (_, ka) = register(&h, "edge-a").await;
        register(&h, "edge-b").await;
        let mut a = ws(&h).await;
        auth_released(&mut a, &ka).await;
        let text = |t: &str| format!(r#"{{"type":"text","text":"{t}"}}"#);
        let send = |parts: Vec<String>| format!(r#"{{"to":"agent:edge-b","parts":[{}]}}"#, parts.join(","));
        let long = "x".repeat(32_768);
        for (n, parts, ok) in [
            (1, vec![], false),
            (2, vec![text("y"); 11], false),
            (3, vec![text("")], false),
            (4, vec![text(&format!("{long}x"))], false),
            (5, vec![text("y"); 10], true),
            (6, vec![text(&long)], true),
        ] {
            let v = call(&mut a, &rreq(&n.to_string(), "messages/send", &send(parts))).await;
            if ok {
                assert!(v["result"]["message"]["id"].is_string(), "{n}: {v}");
            } else {
                assert_eq!(v["error"]["code"], -32602, "{n}: {v}");
            }
        }
        h.shutdown().await;
    })
    .await;
}

/// The released lookups (moltzap-released-2026.425.md, "Methods served"): `agents/lookup` takes
/// 1 to 100 UUIDs and `agents/lookupByName` 1 to 100 names, each answering `{agents:
/// [AgentCard]}` (unknown ones left out); an empty list, 101 entries or an id that is no UUID is
/// -32602.
#[tokio::test]
async fn released_lookups_take_1_to_100_ids_or_names() {
    bounded(async {
        let h = released().await;
        let (a_id, ka) = register(&h, "look-a").await;
        let mut a = ws(&h).await;
        auth_released(&mut a, &ka).await;
        let card = json!({"id": a_id, "name": "look-a", "status": "active"});
        let names = |n: usize| json!({"names": vec!["look-a"; n]}).to_string();
        let ids = |n: usize| json!({"agentIds": vec![a_id.as_str(); n]}).to_string();
        for (n, method, params, want) in [
            (
                1,
                "agents/lookupByName",
                json!({"names": ["look-a", "nobody"]}).to_string(),
                Some(1),
            ),
            (2, "agents/lookupByName", names(100), Some(0)),
            (3, "agents/lookupByName", names(0), None),
            (4, "agents/lookupByName", names(101), None),
            (5, "agents/lookup", ids(100), Some(0)),
            (6, "agents/lookup", ids(0), None),
            (7, "agents/lookup", ids(101), None),
            (8, "agents/lookup", json!({"agentIds": ["look-a"]}).to_string(), None),
        ] {
            let v = call(&mut a, &rreq(&n.to_string(), method, &params)).await;
            match want {
                Some(count) => {
                    let agents = v["result"]["agents"].as_array().unwrap_or_else(|| panic!("{n}: {v}"));
                    // 0: as many as the server gives for a name repeated (the spec does not say).
                    assert!(count == 0 || agents.len() == count, "{n}: {v}");
                    assert_eq!(agents[0], card, "{n}");
                }
                None => assert_eq!(v["error"]["code"], -32602, "{n}: {v}"),
            }
        }
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn current_generation() {
    bounded(async {
        let h = current().await;
        let (a_id, ka) = register(&h, "cur-a").await;
        let (_, kb) = register(&h, "cur-b").await;
        let mut a = ws(&h).await;
        let mut b = ws(&h).await;
        // Before auth: an Unauthorized `_tag`, socket stays open.
        assert_eq!(
            call(&mut a, &creq("1", "system/ping", "{}")).await,
            json!({"jsonrpc":"2.0","id":"1","error":{"code":-32000,"message":"Not authenticated. Send agent/network/connect first.","_tag":"Unauthorized"}})
        );
        let bad = call(&mut a, &creq("2", "agent/network/connect", r#"{"agentKey":"moltzap_agent_x_y","minProtocol":"2026.811.0","maxProtocol":"2026.811.0"}"#)).await;
        assert_eq!(bad["error"]["_tag"], "Unauthorized");
        let old = call(&mut a, &creq("3", "agent/network/connect", &format!(r#"{{"agentKey":"{ka}","minProtocol":"2026.425.3","maxProtocol":"2026.425.3"}}"#))).await;
        assert_eq!((old["error"]["code"].as_i64(), old["error"]["_tag"].as_str()), (Some(-32008), Some("ProtocolMismatch")));
        // A released frame (its `type` key) is not a standard JSON-RPC request: -32600, as any
        // unknown key (moltzap-transport.md: no custom field on the wire).
        let released = call(&mut a, &rreq("4", "auth/connect", &format!(r#"{{"agentKey":"{ka}","minProtocol":"1","maxProtocol":"1"}}"#))).await;
        assert_eq!(released, json!({"jsonrpc":"2.0","id":"4","error":{"code":-32600,"message":"Invalid request frame","_tag":"InvalidRequest"}}));
        // Not a method either, in a standard frame.
        let released = call(&mut a, &creq("4", "auth/connect", &format!(r#"{{"agentKey":"{ka}","minProtocol":"1","maxProtocol":"1"}}"#))).await;
        assert_eq!(released["error"]["_tag"], "Unauthorized");
        send(&mut a, &format!(r#"{{"jsonrpc":"2.0","id":7,"method":"agent/network/connect","params":{{"agentKey":"{ka}","minProtocol":"2026.811.0","maxProtocol":"2026.811.0"}}}}"#)).await;
        assert_eq!(next_text(&mut a).await, r#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
        auth_current(&mut b, &kb).await;
        let sent = call(&mut a, &creq("5", "messages/send", r#"{"to":"agent:cur-b","parts":[{"type":"text","text":"hello"}]}"#)).await;
        assert_eq!(sent["result"]["message"]["senderId"], a_id.as_str());
        let note = next_json(&mut b).await;
        assert_eq!(note["method"], "messages/received");
        assert!(note.get("type").is_none() && note.get("id").is_none());
        assert_eq!(note["params"]["message"], sent["result"]["message"]);
        silent(&mut a, Duration::from_millis(100)).await;
        let list = call(&mut b, &creq("6", "agent/message/list", r#"{"limit":10}"#)).await;
        assert_eq!(list["result"]["messages"][0]["parts"][0]["text"], "hello");
        assert_eq!(list["result"]["hasMore"], false);
        assert_eq!(call(&mut b, &creq("7", "nope", "{}")).await["error"], json!({"code":-32601,"message":"Unknown method: nope","_tag":"MethodNotFound"}));
        send(&mut b, "{oops").await;
        assert_eq!(next_text(&mut b).await, r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON","_tag":"ParseError"}}"#);
        // Unknown keys after auth too, with `type` or any other name.
        for extra in [r#""type":"request""#, r#""direction":"up""#] {
            let frame = format!(r#"{{"jsonrpc":"2.0",{extra},"id":"x","method":"system/ping","params":{{}}}}"#);
            assert_eq!(call(&mut b, &frame).await["error"]["code"], -32600, "{extra}");
        }
        // A batch: each request answered.
        send(&mut b, &format!("[{},{}]", creq("b1", "system/ping", "{}"), creq("b2", "system/ping", "{}"))).await;
        assert_eq!(next_json(&mut b).await["id"], "b1");
        assert_eq!(next_json(&mut b).await["id"], "b2");
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn oversized_message_closes_1009() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    bounded(async {
        let h = released().await;
        let mut w = ws(&h).await;
        send(&mut w, &"x".repeat((1 << 20) + 1)).await;
        let end = tokio::time::timeout(WAIT, async {
            loop {
                match w.next().await {
                    Some(Ok(Message::Close(f))) => return f.map(|f| u16::from(f.code)),
                    Some(Ok(_)) => continue,
                    _ => return None,
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(end, Some(1009));
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn conversation_management() {
    bounded(async {
        let h = released().await;
        let (_, ka) = register(&h, "ma-1").await;
        let (ib, kb) = register(&h, "mb-1").await;
        let (ic, kc) = register(&h, "mc-1").await;
        let (mut a, mut b, mut c) = (ws(&h).await, ws(&h).await, ws(&h).await);
        auth_released(&mut a, &ka).await;
        auth_released(&mut b, &kb).await;
        auth_released(&mut c, &kc).await;
        let p = format!(r#"{{"type":"group","name":"duo","participants":[{{"type":"agent","id":"{ib}"}}]}}"#);
        let id = call(&mut a, &rreq("g", "conversations/create", &p)).await["result"]["conversation"]["id"]
            .as_str()
            .unwrap()
            .to_string();
        next_json(&mut b).await; // conversations/created
        let cid = format!(r#"{{"conversationId":"{id}"}}"#);
        let up = call(
            &mut a,
            &rreq(
                "u",
                "conversations/update",
                &format!(r#"{{"conversationId":"{id}","name":"renamed"}}"#),
            ),
        )
        .await;
        assert_eq!(up["result"], json!({}));
        let ev = next_json(&mut b).await;
        assert_eq!(
            (ev["event"].as_str(), ev["data"]["conversation"]["name"].as_str()),
            (Some("conversations/updated"), Some("renamed"))
        );
        let add = format!(r#"{{"conversationId":"{id}","participant":{{"type":"agent","id":"{ic}"}}}}"#);
        assert_eq!(
            call(&mut a, &rreq("add", "conversations/addParticipant", &add)).await["result"],
            json!({})
        );
        assert_eq!(next_json(&mut b).await["event"], "conversations/updated");
        assert_eq!(next_json(&mut c).await["event"], "conversations/updated");
        assert_eq!(
            call(&mut c, &rreq("m", "conversations/mute", &cid)).await["result"],
            json!({})
        );
        assert_eq!(
            call(&mut c, &rreq("um", "conversations/unmute", &cid)).await["result"],
            json!({})
        );
        assert_eq!(
            call(&mut a, &rreq("ar", "conversations/archive", &cid)).await["result"],
            json!({})
        );
        let ev = next_json(&mut b).await;
        assert_eq!(ev["event"], "conversations/archived");
        assert_eq!(ev["data"]["conversationId"], id.as_str());
        next_json(&mut c).await;
        let listed = call(&mut b, &rreq("l", "conversations/list", "{}")).await;
        assert_eq!(listed["result"]["conversations"], json!([]));
        let only = call(&mut b, &rreq("l2", "conversations/list", r#"{"archived":"only"}"#)).await;
        assert_eq!(only["result"]["conversations"][0]["id"], id.as_str());
        let send = format!(r#"{{"conversationId":"{id}","parts":[{{"type":"text","text":"x"}}]}}"#);
        assert_eq!(
            call(&mut b, &rreq("s", "messages/send", &send)).await["error"]["code"],
            -32022
        );
        assert_eq!(
            call(&mut a, &rreq("un", "conversations/unarchive", &cid)).await["result"],
            json!({})
        );
        assert_eq!(next_json(&mut b).await["event"], "conversations/unarchived");
        next_json(&mut c).await;
        assert_eq!(
            call(&mut c, &rreq("lv", "conversations/leave", &cid)).await["result"],
            json!({})
        );
        assert_eq!(
            call(&mut c, &rreq("g2", "conversations/get", &cid)).await["error"]["code"],
            -32001
        );
        let rm = format!(r#"{{"conversationId":"{id}","participant":{{"type":"agent","id":"{ib}"}}}}"#);
        assert_eq!(
            call(&mut a, &rreq("rm", "conversations/removeParticipant", &rm)).await["result"],
            json!({})
        );
        assert_eq!(next_json(&mut b).await["event"], "conversations/updated");
        assert_eq!(
            call(&mut b, &rreq("s2", "messages/send", &send)).await["error"]["code"],
            -32001
        );
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn connection_limit() {
    bounded(async {
        let mut cfg = agentwire_peer_moltzap::PeerConfig::new(agentwire_peer_moltzap::Generation::Released);
        cfg.max_connections = 1;
        let h = peer(cfg).await;
        let _w = ws(&h).await;
        let (status, body) = http(h.local_addr(), "GET", "/health", None).await;
        assert_eq!((status, body.as_str()), (503, r#"{"error":"Too many connections"}"#));
        h.shutdown().await;
    })
    .await;
}

/// `conversations/list` with the cursor u64::MAX is answered (it overflowed `start + limit` and
/// panicked the task), and a connection that ends gives back what it holds: the `/health` count,
/// its place in the state (its agent goes offline) and its TCP slot (`max_connections`). (The
/// counters are given back in drop guards, for a panicking task too: this test found the leak
/// with the overflow's panic.)
#[tokio::test]
async fn a_huge_cursor_is_answered_and_an_ended_connection_releases_its_counters() {
    bounded(async {
        let mut cfg = PeerConfig::new(Generation::Released);
        cfg.max_connections = 2;
        let h = peer(cfg).await;
        let (_, ka) = register(&h, "panic-a").await;
        let (ib, kb) = register(&h, "panic-b").await;
        let mut a = ws(&h).await;
        auth_released(&mut a, &ka).await;
        call(
            &mut a,
            &rreq("s", "presence/subscribe", &format!(r#"{{"agentIds":["{ib}"]}}"#)),
        )
        .await;
        let mut b = ws(&h).await;
        auth_released(&mut b, &kb).await;
        assert_eq!(next_json(&mut a).await["data"]["status"], "online");
        // The cursor u64::MAX: past every page, no next cursor (it overflowed and panicked).
        let q = r#"{"cursor":"18446744073709551615","limit":10}"#;
        let list = call(&mut b, &rreq("l", "conversations/list", q)).await;
        assert_eq!(list["result"], json!({"conversations": []}), "{list}");
        drop(b);
        assert_eq!(
            next_json(&mut a).await["data"],
            json!({"agentId": ib, "status": "offline"})
        );
        for _ in 0..100 {
            if h.connections() == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(h.connections(), 1);
        let mut c = ws(&h).await;
        auth_released(&mut c, &kb).await;
        h.shutdown().await;
    })
    .await;
}

/// `conversations/list` pages (released, as the spec: `{limit?, cursor?}` → `{conversations,
/// cursor?}`): most recently active first, each page's `cursor` naming the next, none on the
/// last (the capture's one-page answer has none); `max_conversations_page` caps a page below
/// `limit`; a cursor the peer did not give is refused.
#[tokio::test]
async fn conversations_list_follows_its_cursor_across_pages() {
    bounded(async {
        let mut cfg = PeerConfig::new(Generation::Released);
        cfg.max_conversations_page = 2;
        let h = peer(cfg).await;
        let (_, ka) = register(&h, "page-a").await;
        for n in ["page-b", "page-c", "page-d"] {
            register(&h, n).await;
        }
        let mut a = ws(&h).await;
        auth_released(&mut a, &ka).await;
        let mut dms = Vec::new();
        for n in ["page-b", "page-c", "page-d"] {
            let p = format!(r#"{{"to":"agent:{n}","parts":[{{"type":"text","text":"hi {n}"}}]}}"#);
            let sent = call(&mut a, &rreq("s", "messages/send", &p)).await;
            dms.push(sent["result"]["message"]["conversationId"].as_str().unwrap().to_owned());
        }
        let ids = |v: &Value| -> Vec<String> {
            v["result"]["conversations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap().to_owned())
                .collect()
        };
        // limit 20, pages of 2 at most: d and c, then b.
        let first = call(&mut a, &rreq("l1", "conversations/list", r#"{"limit":20}"#)).await;
        assert_eq!(ids(&first), vec![dms[2].clone(), dms[1].clone()], "{first}");
        let cursor = first["result"]["cursor"]
            .as_str()
            .expect("a cursor to the rest")
            .to_owned();
        let p = format!(r#"{{"limit":20,"cursor":"{cursor}"}}"#);
        let second = call(&mut a, &rreq("l2", "conversations/list", &p)).await;
        assert_eq!(ids(&second), vec![dms[0].clone()], "{second}");
        assert!(second["result"].get("cursor").is_none(), "the last page: {second}");
        // A limit below the cap: pages of one.
        let one = call(&mut a, &rreq("l3", "conversations/list", r#"{"limit":1}"#)).await;
        assert_eq!(ids(&one), vec![dms[2].clone()]);
        assert!(one["result"]["cursor"].is_string(), "{one}");
        let bad = call(&mut a, &rreq("l4", "conversations/list", r#"{"cursor":"x"}"#)).await;
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
        h.shutdown().await;
    })
    .await;
}

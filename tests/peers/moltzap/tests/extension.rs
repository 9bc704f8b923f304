//! agentwire's MoltZap extension (current generation): `data` parts, `group:` sends, `postId`
//! deduplication, the per-recipient send faults; and the released generation refusing them.

mod common;

use agentwire_peer_moltzap::Faults;
use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("test timed out");
}

/// A `messages/send` (current generation) with these params.
async fn send_msg(w: &mut Ws, id: &str, params: &Value) -> Value {
    call(w, &creq(id, "messages/send", &params.to_string())).await
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

fn error_of(v: &Value) -> (i64, String) {
    let e = &v["error"];
    assert!(e.is_object(), "not an error: {v}");
    (e["code"].as_i64().unwrap(), e["message"].as_str().unwrap().to_string())
}

/// Registers and connects agents (current generation): (ids, sockets).
async fn agents(h: &agentwire_peer_moltzap::PeerHandle, names: &[&str]) -> (Vec<String>, Vec<Ws>) {
    let (mut ids, mut socks) = (Vec::new(), Vec::new());
    for name in names {
        let (id, key) = register(h, name).await;
        let mut w = ws(h).await;
        auth_current(&mut w, &key).await;
        ids.push(id);
        socks.push(w);
    }
    (ids, socks)
}

#[tokio::test]
async fn data_part_round_trip() {
    bounded(async {
        let h = current().await;
        let (_, mut s) = agents(&h, &["data-a", "data-b"]).await;
        let (a, rest) = s.split_first_mut().unwrap();
        let b = &mut rest[0];
        // Key order and number forms as sent.
        let frame = creq(
            "1",
            "messages/send",
            r#"{"to":"agent:data-b","parts":[{"type":"text","text":"q"},{"type":"data","value":{"z":1,"a":[1.50,null,"x"],"m":{"k":true}}}]}"#,
        );
        send(a, &frame).await;
        let answer = next_text(a).await;
        assert!(
            answer.contains(r#"{"type":"data","value":{"z":1,"a":[1.50,null,"x"],"m":{"k":true}}}"#),
            "{answer}"
        );
        let sent: Value = serde_json::from_str(&answer).unwrap();
        let note = next_text(b).await;
        assert!(
            note.contains(r#"{"type":"data","value":{"z":1,"a":[1.50,null,"x"],"m":{"k":true}}}"#),
            "{note}"
        );
        let note: Value = serde_json::from_str(&note).unwrap();
        assert_eq!(note["method"], "messages/received");
        assert_eq!(note["params"]["message"], sent["result"]["message"]);
        // Any JSON value; the list carries it too.
        for (i, v) in [json!(null), json!(3), json!("s"), json!([])].into_iter().enumerate() {
            let r = send_msg(
                a,
                &format!("v{i}"),
                &json!({"to": "agent:data-b", "parts": [{"type": "data", "value": v}]}),
            )
            .await;
            assert_eq!(r["result"]["message"]["parts"][0]["value"], v, "{r}");
            assert_eq!(next_json(b).await["params"]["message"]["parts"][0]["value"], v);
        }
        let list = call(b, &creq("l", "agent/message/list", r#"{"limit":1}"#)).await;
        assert_eq!(list["result"]["messages"][0]["parts"][0], json!({"type": "data", "value": []}));
        // 65,536 bytes serialized: accepted; one more: refused.
        let exact = Value::String("x".repeat(65_534));
        let r = send_msg(a, "big", &json!({"to": "agent:data-b", "parts": [{"type": "data", "value": exact}]})).await;
        assert!(r["result"]["message"]["id"].is_string(), "big refused");
        next_json(b).await;
        let over = Value::String("x".repeat(65_535));
        let r = send_msg(a, "over", &json!({"to": "agent:data-b", "parts": [{"type": "data", "value": over}]})).await;
        assert_eq!(error_of(&r).0, -32602);
        // Malformed data parts.
        for parts in [
            json!([{"type": "data"}]),
            json!([{"type": "data", "value": 1, "extra": 2}]),
            json!([{"type": "video", "url": "u"}]),
        ] {
            let r = send_msg(a, "bad", &json!({"to": "agent:data-b", "parts": parts})).await;
            assert_eq!(error_of(&r).0, -32602, "{parts}");
        }
        silent(b, Duration::from_millis(100)).await;
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn group_send_reuses_one_fixed_conversation() {
    bounded(async {
        let h = current().await;
        let (ids, mut s) = agents(&h, &["grp-a", "grp-b", "grp-c", "grp-d"]).await;
        // Self omitted.
        let first = send_msg(
            &mut s[0],
            "1",
            &json!({"to": "group:grp-b,grp-c", "parts": text("one")}),
        )
        .await;
        let conv = first["result"]["message"]["conversationId"]
            .as_str()
            .unwrap()
            .to_string();
        for w in [1, 2] {
            let note = next_json(&mut s[w]).await;
            assert_eq!(note["params"]["message"], first["result"]["message"]);
        }
        silent(&mut s[3], Duration::from_millis(100)).await;
        // Another sender, another order, self omitted: the same conversation.
        let second = send_msg(
            &mut s[2],
            "2",
            &json!({"to": "group:grp-b,grp-a", "parts": text("two")}),
        )
        .await;
        assert_eq!(second["result"]["message"]["conversationId"], conv.as_str());
        for w in [0, 1] {
            assert_eq!(
                next_json(&mut s[w]).await["params"]["message"],
                second["result"]["message"]
            );
        }
        // Self included equals self omitted.
        let third = send_msg(
            &mut s[0],
            "3",
            &json!({"to": "group:grp-c,grp-a,grp-b", "parts": text("three")}),
        )
        .await;
        assert_eq!(third["result"]["message"]["conversationId"], conv.as_str());
        for w in [1, 2] {
            assert_eq!(
                next_json(&mut s[w]).await["params"]["message"],
                third["result"]["message"]
            );
        }
        // The conversation: a group, no name, created by the first sender, three members.
        let got = call(
            &mut s[1],
            &creq("g", "conversations/get", &json!({"conversationId": conv}).to_string()),
        )
        .await;
        let c = &got["result"]["conversation"];
        assert_eq!(c["type"], "group");
        assert!(c.get("name").is_none(), "{c}");
        assert_eq!(c["createdBy"], ids[0].as_str());
        let parts = got["result"]["participants"].as_array().unwrap();
        let mut members: Vec<(&str, &str)> = parts
            .iter()
            .map(|p| (p["participant"]["id"].as_str().unwrap(), p["role"].as_str().unwrap()))
            .collect();
        members.sort();
        let mut want = vec![
            (ids[0].as_str(), "owner"),
            (ids[1].as_str(), "member"),
            (ids[2].as_str(), "member"),
        ];
        want.sort();
        assert_eq!(members, want);
        // Its members are fixed.
        for (i, method) in ["conversations/leave", "conversations/removeParticipant"]
            .iter()
            .enumerate()
        {
            let mut params = json!({"conversationId": conv});
            if i == 1 {
                params["participant"] = json!({"type": "agent", "id": ids[1]});
            }
            let r = call(&mut s[0], &creq("m", method, &params.to_string())).await;
            assert_eq!(error_of(&r).0, -32602, "{method}");
        }
        let add = call(
            &mut s[0],
            &creq(
                "add",
                "conversations/addParticipant",
                &json!({"conversationId": conv, "participant": {"type": "agent", "id": ids[3]}}).to_string(),
            ),
        )
        .await;
        assert_eq!(error_of(&add).0, -32602);
        // Another member set: another conversation.
        let other = send_msg(
            &mut s[3],
            "4",
            &json!({"to": "group:grp-a,grp-b", "parts": text("four")}),
        )
        .await;
        assert_ne!(other["result"]["message"]["conversationId"], conv.as_str());
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn group_send_refusals() {
    bounded(async {
        let h = current().await;
        let mut names: Vec<String> = (0..33).map(|i| format!("big-{i:02}")).collect();
        for n in &names {
            register(&h, n).await;
        }
        let (_, key) = register(&h, "big-me").await;
        let mut w = ws(&h).await;
        auth_current(&mut w, &key).await;
        let to = |list: &[String]| format!("group:{}", list.join(","));
        let refused = [
            // Two members, with or without self.
            to(&names[..1]),
            format!("group:big-me,{}", names[0]),
            // 33 members with self.
            to(&names[..32]),
            // A name twice; self twice.
            format!("group:{0},{1},{0}", names[0], names[1]),
            format!("group:big-me,{},{},big-me", names[0], names[1]),
        ];
        for (i, t) in refused.iter().enumerate() {
            let r = send_msg(&mut w, &format!("r{i}"), &json!({"to": t, "parts": text("x")})).await;
            assert_eq!(error_of(&r).0, -32602, "{t}: {r}");
        }
        // Unknown names: -32002 naming the first unknown in input order.
        names.insert(1, "nobody".into());
        names.insert(3, "ghost".into());
        let r = send_msg(&mut w, "u", &json!({"to": to(&names[..4]), "parts": text("x")})).await;
        assert_eq!(error_of(&r), (-32002, "Agent 'nobody' not found".to_string()));
        let r = send_msg(&mut w, "e", &json!({"to": "group:", "parts": text("x")})).await;
        assert_eq!(error_of(&r), (-32002, "Agent '' not found".to_string()));
        names.retain(|n| n != "nobody" && n != "ghost");
        // 3 and 32 members are fine.
        for (i, n) in [2, 31].into_iter().enumerate() {
            let r = send_msg(
                &mut w,
                &format!("ok{i}"),
                &json!({"to": to(&names[..n]), "parts": text("x")}),
            )
            .await;
            assert!(r["result"]["message"]["id"].is_string(), "{n}: {r}");
        }
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn post_id_dedupe() {
    bounded(async {
        let h = current().await;
        let (_, mut s) = agents(&h, &["post-a", "post-b"]).await;
        let plain = send_msg(&mut s[0], "0", &json!({"to": "agent:post-b", "parts": text("plain")})).await;
        assert!(plain["result"]["message"].get("postId").is_none(), "{plain}");
        next_json(&mut s[1]).await;
        let first = send_msg(
            &mut s[0],
            "1",
            &json!({"to": "agent:post-b", "parts": text("once"), "postId": "p-1"}),
        )
        .await;
        assert_eq!(first["result"]["message"]["postId"], "p-1");
        let note = next_json(&mut s[1]).await;
        assert_eq!(note["params"]["message"], first["result"]["message"]);
        // Again, even with other content: the original message, nothing stored or sent.
        let again = send_msg(
            &mut s[0],
            "2",
            &json!({"to": "agent:post-b", "parts": text("twice"), "postId": "p-1"}),
        )
        .await;
        assert_eq!(again["result"], first["result"]);
        silent(&mut s[1], Duration::from_millis(150)).await;
        let list = call(&mut s[1], &creq("l", "agent/message/list", r#"{"limit":10}"#)).await;
        assert_eq!(list["result"]["messages"].as_array().unwrap().len(), 2, "{list}");
        // Per sender: another sender's p-1 is its own post.
        let theirs = send_msg(
            &mut s[1],
            "3",
            &json!({"to": "agent:post-a", "parts": text("b's"), "postId": "p-1"}),
        )
        .await;
        assert_ne!(theirs["result"]["message"]["id"], first["result"]["message"]["id"]);
        assert_eq!(next_json(&mut s[0]).await["params"]["message"]["postId"], "p-1");
        // Invalid postIds.
        for bad in [
            json!(""),
            json!("x".repeat(129)),
            json!("caf\u{e9}"),
            json!("a\nb"),
            json!(7),
        ] {
            let r = send_msg(
                &mut s[0],
                "bad",
                &json!({"to": "agent:post-b", "parts": text("x"), "postId": bad}),
            )
            .await;
            assert_eq!(error_of(&r).0, -32602, "{bad}");
        }
        let longest = send_msg(
            &mut s[0],
            "4",
            &json!({"to": "agent:post-b", "parts": text("x"), "postId": "~".repeat(128)}),
        )
        .await;
        assert!(longest["result"]["message"]["id"].is_string(), "{longest}");
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn released_refuses_the_extension() {
    bounded(async {
        let h = released().await;
        let mut socks = Vec::new();
        for name in ["rel-a", "rel-b", "rel-c"] {
            let (_, key) = register(&h, name).await;
            let mut w = ws(&h).await;
            auth_released(&mut w, &key).await;
            socks.push(w);
        }
        let a = &mut socks[0];
        for (i, params) in [
            json!({"to": "agent:rel-b", "parts": [{"type": "data", "value": {"k": 1}}]}),
            json!({"to": "group:rel-b,rel-c", "parts": text("x")}),
            json!({"to": "agent:rel-b", "parts": text("x"), "postId": "p-1"}),
        ]
        .iter()
        .enumerate()
        {
            let r = call(a, &rreq(&format!("{i}"), "messages/send", &params.to_string())).await;
            assert_eq!(error_of(&r).0, -32602, "{params}: {r}");
        }
        silent(&mut socks[1], Duration::from_millis(100)).await;
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn refuse_send_to() {
    bounded(async {
        let h = current().await;
        let (_, mut s) = agents(&h, &["ref-a", "ref-b", "ref-c"]).await;
        h.set_faults(Faults {
            refuse_send_to: vec!["ref-b".into()],
            ..Faults::default()
        });
        let r = send_msg(&mut s[0], "1", &json!({"to": "agent:ref-b", "parts": text("x")})).await;
        assert_eq!(
            r,
            json!({"jsonrpc":"2.0","id":"1","error":{"code":-32603,"message":"Internal error","_tag":"InternalError"}})
        );
        silent(&mut s[1], Duration::from_millis(100)).await;
        let list = call(&mut s[0], &creq("l", "agent/message/list", r#"{"limit":10}"#)).await;
        assert_eq!(list["result"]["messages"], json!([]));
        // Other recipients are not affected.
        let ok = send_msg(&mut s[0], "2", &json!({"to": "agent:ref-c", "parts": text("y")})).await;
        assert!(ok["result"]["message"]["id"].is_string(), "{ok}");
        assert_eq!(next_json(&mut s[2]).await["method"], "messages/received");
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn delay_send_to() {
    bounded(async {
        let h = current().await;
        let (_, mut s) = agents(&h, &["del-a", "del-b"]).await;
        h.set_faults(Faults {
            // 2 s: the requests below must all come before it, even on a loaded machine.
            delay_send_to: vec![("del-b".into(), 2_000)],
            ..Faults::default()
        });
        let t = Instant::now();
        send(
            &mut s[0],
            &creq(
                "d",
                "messages/send",
                r#"{"to":"agent:del-b","parts":[{"type":"text","text":"late"}]}"#,
            ),
        )
        .await;
        // Other requests go on meanwhile, and the send has no effect yet.
        let list = call(&mut s[0], &creq("l", "agent/message/list", r#"{"limit":10}"#)).await;
        assert_eq!(list["id"], "l");
        assert_eq!(list["result"]["messages"], json!([]));
        let list = call(&mut s[1], &creq("l", "agent/message/list", r#"{"limit":10}"#)).await;
        assert_eq!(list["result"]["messages"], json!([]));
        assert!(t.elapsed() < Duration::from_millis(2_000));
        // Then the answer and the fan-out, together.
        let sent = next_json(&mut s[0]).await;
        assert_eq!(sent["id"], "d");
        assert!(t.elapsed() >= Duration::from_millis(2_000));
        let note = next_json(&mut s[1]).await;
        assert_eq!(note["params"]["message"], sent["result"]["message"]);
        h.shutdown().await;
    })
    .await;
}

//! Resume over the WebSocket: replay after a drop, gaps (retention and a restart that lost the
//! numbering), takeover and `expected_generation` fencing.

mod common;

use agentwire_peer_switch::Generation;
use common::*;
use serde_json::{json, Value};
use std::time::Duration;

fn seqs(frames: &[Value]) -> Vec<u64> {
    frames.iter().filter_map(|f| f["id"].as_u64()).collect()
}

#[tokio::test]
async fn resume_replays_exactly_the_missed_events() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        let c = cid();
        let mut w = ws(&h, &a, &format!("connection_id={c}&rooms={room}")).await;
        let generation = next(&mut w).await["data"]["generation"].as_u64().unwrap();
        for i in 1..=3 {
            h.post_as_user(&room, "carol", &format!("m{i}"));
        }
        let got: Vec<Value> = vec![next(&mut w).await, next(&mut w).await, next(&mut w).await];
        assert_eq!(seqs(&got), [1, 2, 3]);
        drop(w);
        h.post_as_user(&room, "carol", "m4");
        h.post_as_user(&room, "carol", "m5");
        let q = format!("connection_id={c}&rooms={room}&start_from=3&expected_generation={generation}");
        let mut w = ws(&h, &a, &q).await;
        let state = next(&mut w).await;
        assert_eq!(state["data"]["cursor"], 3);
        assert!(state["data"]["generation"].as_u64().unwrap() > generation);
        let (m4, m5) = (next(&mut w).await, next(&mut w).await);
        assert_eq!(seqs(&[m4.clone(), m5]), [4, 5]);
        assert_eq!(m4["data"]["payload"]["body"], "m4");
        quiet(&mut w, Duration::from_millis(200)).await;
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_cursor_outside_the_window_gets_a_gap() {
    bounded(async {
        let mut c = cfg(Generation::Current);
        c.replay_capacity = 2;
        let h = peer(c).await;
        let a = h.add_agent("alice");
        let room = h.add_room("lobby", &[&a.id]);
        for i in 1..=5 {
            h.post_as_user(&room, "carol", &format!("m{i}"));
        }
        let mut w = ws(&h, &a, &format!("connection_id={}&rooms={room}&start_from=1", cid())).await;
        assert_eq!(next(&mut w).await["event"], "connection_state");
        let gap = next(&mut w).await;
        assert_eq!(
            gap,
            json!({"event": "gap", "data": {"from_sequence": 1, "resumed_at": 3, "resumed_position": 3,
                "rooms": [room], "all_rooms": false,
                "reason": "events older than the retention window were dropped; re-read room context"}})
        );
        assert_eq!(seqs(&[next(&mut w).await, next(&mut w).await]), [4, 5]);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn restart_closes_with_1012_and_lost_numbering_gives_a_restart_gap() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        let c = cid();
        let mut w = ws(&h, &a, &format!("connection_id={c}&rooms={room}")).await;
        next(&mut w).await;
        for i in 1..=3 {
            h.post_as_user(&room, "carol", &format!("m{i}"));
        }
        let got = [next(&mut w).await, next(&mut w).await, next(&mut w).await];
        assert_eq!(seqs(&got), [1, 2, 3]);
        // A plain restart keeps the numbering and the buffer: resume replays.
        h.restart(false);
        assert_eq!(until_end(&mut w).await, (vec![], Some(1012)));
        assert_eq!(h.connections(&a.id), 0);
        let mut w = ws(&h, &a, &format!("connection_id={c}&rooms={room}&start_from=1")).await;
        next(&mut w).await;
        assert_eq!(seqs(&[next(&mut w).await, next(&mut w).await]), [2, 3]);
        // Lost numbering: a cursor above the head.
        h.restart(true);
        assert_eq!(until_end(&mut w).await.1, Some(1012));
        assert_eq!(h.head(&a.id), 0);
        h.post_as_user(&room, "carol", "while away");
        let mut w = ws(&h, &a, &format!("connection_id={c}&rooms={room}&start_from=3")).await;
        assert_eq!(next(&mut w).await["data"]["cursor"], 1);
        let gap = next(&mut w).await;
        assert_eq!(gap["event"], "gap");
        let d = &gap["data"];
        // Both the head, as the capture gap_restart.sse (from_sequence = resumed_at).
        assert_eq!(
            (
                d["from_sequence"].as_u64(),
                d["resumed_at"].as_u64(),
                d["resumed_position"].as_u64()
            ),
            (Some(1), Some(1), Some(1))
        );
        assert_eq!(d["all_rooms"], true);
        assert!(d["reason"]
            .as_str()
            .unwrap()
            .starts_with("the server restarted since your last connection"));
        h.post_as_user(&room, "carol", "after");
        assert_eq!(next(&mut w).await["id"], 2);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn reopening_takes_over_and_expected_generation_fences() {
    bounded(async {
        let (h, a, _, room) = world(Generation::Current).await;
        let c = cid();
        let mut w1 = ws(&h, &a, &format!("connection_id={c}&rooms={room}")).await;
        let g1 = next(&mut w1).await["data"]["generation"].as_u64().unwrap();
        let mut w2 = ws(&h, &a, &format!("connection_id={c}&expected_generation={g1}")).await;
        let state = next(&mut w2).await;
        let g2 = state["data"]["generation"].as_u64().unwrap();
        assert!(g2 > g1);
        assert_eq!(state["data"]["rooms"], json!([room]), "the claim stays with the connection");
        let (frames, code) = until_end(&mut w1).await;
        assert_eq!(
            frames,
            [json!({"event": "evicted", "data": {"code": "taken_over", "reason": "another stream attached to this connection"}})]
        );
        assert_eq!(code, Some(1000));
        // A reconnect fenced with the old generation is refused and changes nothing.
        let mut w3 = ws(&h, &a, &format!("connection_id={c}&expected_generation={g1}")).await;
        let (frames, code) = until_end(&mut w3).await;
        assert_eq!(code, Some(4409));
        assert_eq!(frames[0]["event"], "refused");
        assert_eq!(frames[0]["data"]["status"], 409);
        // The code in the detail, where the engine reads it (the frame has no field for it).
        let detail = &frames[0]["data"]["detail"];
        assert_eq!(detail["code"], "taken_over", "{detail}");
        assert!(detail["message"].as_str().unwrap().starts_with("taken_over: "), "{detail}");
        quiet(&mut w2, Duration::from_millis(200)).await;
        h.post_as_user(&room, "carol", "still here");
        assert_eq!(next(&mut w2).await["id"], 1);
        h.shutdown().await;
    })
    .await;
}

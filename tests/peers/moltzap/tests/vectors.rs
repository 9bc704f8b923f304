//! Replays the client lines (`=>`) of the captured released-server sessions in
//! `tests/vectors/moltzap-2026.425/` against the released peer and checks every answer
//! (`<=`, and the events of the "queue"/"got" lines) against the capture, byte for byte once
//! uuids and timestamps are normalized. Captured uuids are mapped to the peer's as they are
//! learnt (the same captured uuid must always stand for the same peer uuid), and substituted in
//! later client lines; agent keys are mapped through the registrations.

mod common;

use common::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

fn vectors() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../vectors/moltzap-2026.425");
    assert!(dir.is_dir(), "vectors not found at {}", dir.display());
    dir
}

struct Replay {
    /// Captured value → the peer's (uuids and agent keys).
    map: HashMap<String, String>,
    conns: HashMap<String, Ws>,
    checked: usize,
}

impl Replay {
    fn substitute(&self, line: &str) -> String {
        let mut out = line.to_string();
        for (from, to) in &self.map {
            out = out.replace(from, to);
        }
        out
    }

    /// Compares a captured answer with the peer's; learns the uuid pairs.
    fn check(&mut self, expected: &str, actual: &str) {
        let (e, eids) = normalize(expected);
        let (a, aids) = normalize(actual);
        assert_eq!(a, e, "\npeer:     {actual}\ncaptured: {expected}");
        for (cap, ours) in eids.into_iter().zip(aids) {
            let known = self.map.entry(cap.clone()).or_insert_with(|| ours.clone());
            assert_eq!(*known, ours, "captured uuid {cap} stands for two peer uuids");
        }
        self.checked += 1;
    }

    async fn conn(&mut self, h: &agentwire_peer_moltzap::PeerHandle, name: &str) -> &mut Ws {
        if !self.conns.contains_key(name) {
            let w = ws(h).await;
            self.conns.insert(name.to_string(), w);
        }
        self.conns.get_mut(name).unwrap()
    }

    /// `=> …`: sends the substituted line (`RAW x` sends `x` as is).
    async fn send(&mut self, h: &agentwire_peer_moltzap::PeerHandle, name: &str, line: &str) {
        let text = match line.strip_prefix("RAW ") {
            Some(raw) => raw.to_string(),
            None => self.substitute(line),
        };
        let w = self.conn(h, name).await;
        send(w, &text).await;
    }

    /// `<= …`: the next message on the connection is this one.
    async fn expect(&mut self, name: &str, expected: &str) {
        let w = self.conns.get_mut(name).expect("answer on an unopened connection");
        let got = next_text(w).await;
        self.check(expected, &got);
    }

    /// A "queue"/"got" line: each event listed arrives on the connection (other events
    /// in between are skipped: the capture drained some of them earlier).
    async fn expect_events(&mut self, name: &str, list: &str) {
        let frames: Vec<serde_json::Value> = serde_json::from_str(list).unwrap();
        for f in frames.iter().filter(|f| f["type"] == "event") {
            let expected = serde_json::to_string(f).unwrap();
            let (want, _) = normalize(&expected);
            let mut found = None;
            for _ in 0..8 {
                let w = self.conns.get_mut(name).unwrap();
                let got = next_text_within(w, Duration::from_secs(2)).await.expect("socket ended");
                let got = serde_json::to_string(&serde_json::from_str::<serde_json::Value>(&got).unwrap()).unwrap();
                if normalize(&got).0 == want {
                    found = Some(got);
                    break;
                }
            }
            // Both sides went through serde_json::Value: compared with the same key order.
            let got = found.unwrap_or_else(|| panic!("{name} never got {expected}"));
            self.check(&expected, &got);
        }
    }
}

#[tokio::test]
async fn smoke_replays() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let h = released().await;
        let text = std::fs::read_to_string(vectors().join("smoke.sample.out")).unwrap();
        let mut r = Replay {
            map: HashMap::new(),
            conns: HashMap::new(),
            checked: 0,
        };
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("HTTP register ") {
                // HTTP register NAME -> 201 {"agentId","apiKey"}
                let (name, answer) = rest.split_once(" -> 201 ").unwrap();
                let cap: serde_json::Value = serde_json::from_str(answer).unwrap();
                let (id, key) = register(&h, name).await;
                r.map.insert(cap["agentId"].as_str().unwrap().to_string(), id);
                r.map.insert(cap["apiKey"].as_str().unwrap().to_string(), key);
                continue;
            }
            let Some(rest) = line.strip_prefix('[') else { continue };
            let (name, rest) = rest.split_once("] ").unwrap();
            if let Some(frame) = rest.strip_prefix("=> ") {
                r.send(&h, name, frame).await;
            } else if let Some(frame) = rest.strip_prefix("<= ") {
                r.expect(name, frame).await;
            }
        }
        // A's own message never came back to A; B's never to B.
        for name in ["A", "B"] {
            silent(r.conns.get_mut(name).unwrap(), Duration::from_millis(100)).await;
        }
        assert_eq!(r.checked, 14);
        h.shutdown().await;
    })
    .await
    .expect("timed out");
}

#[tokio::test]
async fn probe_edges_replays() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let h = released().await;
        let text = std::fs::read_to_string(vectors().join("probe-edges.sample.out")).unwrap();
        let mut r = Replay {
            map: HashMap::new(),
            conns: HashMap::new(),
            checked: 0,
        };
        // The capture's agents: their keys (from its auth/connect lines) and names (from its
        // conversations/get answer); registered here under the same names.
        for (key, name) in [
            (
                "moltzap_agent_b9f1a51e05e00e6f_59071673d60c9a9efc9d83c7af6acafe23219b50d3eddc02",
                "pa-mx644r4e",
            ),
            (
                "moltzap_agent_7c09f231a77f8b76_88f4af9c273ba531db6d1810694793fecd255526c63eb901",
                "pb-mx644r4e",
            ),
            (
                "moltzap_agent_913a57c8938be94e_208c7e8e9adf1eea4c5756bc3526ed872d3d9fdfa6359b34",
                "pc-mx644r4e",
            ),
        ] {
            let (_, ours) = register(&h, name).await;
            r.map.insert(key.to_string(), ours);
        }
        // Which connection each section runs on (the capture's own sockets).
        let mut conn = "A";
        for line in text.lines() {
            if let Some(title) = line.strip_prefix("--- ") {
                conn = match title {
                    "B connect" | "presence/update away" => "B",
                    "C connect" => "C",
                    _ => "A",
                };
            } else if let Some(frame) = line.strip_prefix("=> ") {
                r.send(&h, conn, frame).await;
            } else if let Some(frame) = line.strip_prefix("<= ") {
                r.expect(conn, frame).await;
            } else if let Some((who, list)) = line.split_once(": [") {
                let name = &who[..1];
                r.expect_events(name, &format!("[{list}")).await;
            }
        }
        // 24 answers, and the events: B's conversations/created, B's and C's messages/received,
        // A's presence/changed.
        assert_eq!(r.checked, 24 + 4);
        h.shutdown().await;
    })
    .await
    .expect("timed out");
}

/// idle-probe: a released server sends no WebSocket pings (95 s in the capture; 300 ms here).
#[tokio::test]
async fn released_sends_no_pings() {
    use futures_util::StreamExt;
    tokio::time::timeout(Duration::from_secs(10), async {
        let h = peer(
            agentwire_peer_moltzap::PeerConfig::new(agentwire_peer_moltzap::Generation::Released)
                .with_ping_interval(Duration::from_millis(20)),
        )
        .await;
        let (_, key) = register(&h, "idle-one").await;
        let mut w = ws(&h).await;
        auth_released(&mut w, &key).await;
        let got = tokio::time::timeout(Duration::from_millis(300), w.next()).await;
        assert!(got.is_err(), "something arrived: {got:?}");
        h.shutdown().await;
    })
    .await
    .expect("timed out");
}

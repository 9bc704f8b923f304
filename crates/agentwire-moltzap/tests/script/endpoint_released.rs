//! The released server's side of the endpoint script (`endpoint.rs`): its frames
//! (`"type":"response"` / `"type":"event"`, string ids, ISO `createdAt`; see
//! `tests/vectors/moltzap-2026.425/`), and its answers to a released recovery:
//! `conversations/list` pages with a fuzzed `cursor` and `messages/list` windows with fuzzed
//! rows.

/// The `conversations/list` pages a recovery asks for at most on one connection: the engine's
/// `MAX_RECOVERY_PAGES` (10) answered, and each of `RECOVERY_ATTEMPTS` (4) less one retries
/// asking a page again.
pub const MAX_LISTS_PER_CONNECTION: usize = 10 + 3;
/// The `messages/list` windows a recovery asks for at most on one connection: the engine's
/// `MAX_RECOVERY_CONVERSATIONS` (200), and the `RECOVERY_WINDOWS_IN_FLIGHT` (4) asked again by
/// each of the 3 retries.
pub const MAX_WINDOWS_PER_CONNECTION: usize = 200 + 4 * 3;
/// The longest cursor the engine follows (`MAX_RECOVERY_CURSOR_BYTES`).
pub const MAX_CURSOR_BYTES: usize = 1_024;

/// A released server's time for the script's `now` (ms): `2026-12-02T..Z`, ISO with millis.
pub fn iso(ms: u64) -> String {
    let s = ms / 1_000;
    format!(
        "2026-12-02T{:02}:{:02}:{:02}.{:03}Z",
        (s / 3_600) % 24,
        (s / 60) % 60,
        s % 60,
        ms % 1_000
    )
}

/// A response frame: `body` is `"result":…` or `"error":…`.
pub fn response(id: &str, body: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","type":"response","id":"{id}",{body}}}"#)
}

/// A `messages/received` event carrying `message`.
pub fn received(message: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","type":"event","event":"messages/received","data":{{"message":{message}}}}}"#)
}

/// A message; its text is its id (so a delivery names the record it came from).
pub fn message(id: &str, conv: &str, sender: &str, created_at: Option<&str>, data: Option<&str>) -> String {
    let at = created_at.map_or(String::new(), |t| format!(r#","createdAt":"{t}""#));
    let data = data.map_or(String::new(), |d| format!(",{d}"));
    format!(
        r#"{{"id":"{id}","conversationId":"{conv}","senderId":"{sender}","parts":[{{"type":"text","text":"{id}"}}{data}]{at}}}"#
    )
}

/// The `auth/connect` result.
pub fn hello() -> &'static str {
    r#""result":{"protocolVersion":"2026.425.3","agentId":"alice","conversations":[],"unreadCounts":{}}"#
}

/// The server's state across a script's recovery answers.
#[derive(Default)]
pub struct Pager {
    /// Fresh cursors minted.
    minted: u64,
    /// The last cursor given (a repeated one names it again).
    last: Option<String>,
}

impl Pager {
    /// A `conversations/list` page: `k` chooses its cursor (absent, null, a fresh string, the
    /// last one again, a number, one too long) and `n` its conversations (some known, some
    /// new, with a last message old, new, absent or not a string).
    pub fn page(&mut self, now: u64, k: u8, n: u8) -> String {
        let mut convs = Vec::new();
        for i in 0..usize::from(n % 26) {
            let id = if i < 3 {
                format!("c{i}")
            } else {
                format!("k{}-{i}", self.minted % 4)
            };
            let last = match (usize::from(n) + i) % 5 {
                0 => String::new(),
                1 => r#","lastMessageTimestamp":"2026-01-01T00:00:00.000Z""#.to_owned(),
                2 => r#","lastMessageTimestamp":5"#.to_owned(),
                _ => format!(r#","lastMessageTimestamp":"{}""#, iso(now)),
            };
            if i == 7 && n & 0x80 != 0 {
                convs.push("7".to_owned());
            } else {
                convs.push(format!(r#"{{"id":"{id}","type":"dm","unreadCount":0{last}}}"#));
            }
        }
        let cursor = match k % 6 {
            0 => String::new(),
            1 => r#","cursor":null"#.to_owned(),
            2 | 3 => {
                let c = if k % 6 == 3 {
                    self.last.clone().unwrap_or_else(|| "p0".to_owned())
                } else {
                    self.minted += 1;
                    format!("p{}", self.minted)
                };
                self.last = Some(c.clone());
                format!(r#","cursor":"{c}""#)
            }
            4 => r#","cursor":{"after":1}"#.to_owned(),
            _ => format!(r#","cursor":"{}""#, "x".repeat(MAX_CURSOR_BYTES + 1)),
        };
        format!(r#""result":{{"conversations":[{}]{cursor}}}"#, convs.join(","))
    }

    /// A page of an endless server: always a cursor never given before.
    pub fn endless_page(&mut self, now: u64, conv: u64) -> String {
        self.minted += 1;
        format!(
            r#""result":{{"conversations":[{{"id":"e{}","type":"dm","unreadCount":0,"lastMessageTimestamp":"{}"}}],"cursor":"p{}"}}"#,
            conv % 300,
            iso(now),
            self.minted
        )
    }
}

/// A `messages/list` window of `conv`: up to 5 rows, ids from a small set (so some were seen
/// already, live or in another window), their `createdAt` old, now, later or absent, some
/// from this agent, some not a message.
pub fn window(now: u64, conv: &str, k: u8, n: u8) -> String {
    let mut rows = Vec::new();
    for i in 0..usize::from(n % 6) {
        let id = format!("r{}", (usize::from(k) * 7 + i * 3) % 48);
        let sender = if (usize::from(k) + i) % 7 == 0 { "alice" } else { "bob" };
        let at = match (usize::from(n / 8) + i) % 4 {
            0 => None,
            1 => Some("2026-12-02T00:00:00.000Z".to_owned()),
            2 => Some(iso(now + 5_000)),
            _ => Some(iso(now)),
        };
        if (usize::from(k) + i) % 11 == 10 {
            rows.push(r#"{"id":3,"parts":[]}"#.to_owned());
        } else {
            rows.push(message(&id, conv, sender, at.as_deref(), None));
        }
    }
    format!(r#""result":{{"messages":[{}],"hasMore":false}}"#, rows.join(","))
}

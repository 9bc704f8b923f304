//! The recovery at every connect (the first too): the recent window read back, oldest first,
//! through the same path as live records, which wait for it. The current generation reads it with one
//! `agent/message/list`; the released one lists the conversations (`conversations/list`, its
//! `cursor` followed page by page, at most [`MAX_RECOVERY_PAGES`]) and reads the newest window of
//! each one active since the last record seen (`messages/list`), a few at a time.

use super::super::wire::Record;
use super::super::{Call, Endpoint, LogKind, Timer};
use super::{
    obj, string, to_second, ReleasedRecovery, Since, MAX_RECOVERY_CONVERSATIONS, MAX_RECOVERY_CURSOR_BYTES,
    MAX_RECOVERY_LIMIT, MAX_RECOVERY_PAGES, RECOVERY_ATTEMPTS, RECOVERY_PAGE_LIMIT, RECOVERY_WINDOWS_IN_FLIGHT,
    RESOLVE_BACKOFF_MS,
};
use crate::harness::json::JsonValue;
use crate::MoltZapError;
use agentwire_core::{ErrorKind, Millis};

impl Endpoint {
    /// At every connect, the first too: the recent window (at most [`MAX_RECOVERY_LIMIT`] rows;
    /// released, as many per conversation read), oldest first, through the same path. Until it is answered,
    /// live pushes wait.
    pub(in crate::harness::endpoint) fn recover(&mut self, now: Millis) {
        self.timers.cancel(&Timer::Recover);
        self.records.recovery_attempts = 0;
        // A released recovery cut by the lost connection starts again.
        self.records.released = None;
        self.recover_again(now);
    }

    /// One attempt of the recovery (also when its retry is due).
    pub(in crate::harness::endpoint) fn recover_again(&mut self, now: Millis) {
        if self.cfg.recovery_limit == 0 {
            return self.release_live(now);
        }
        if self.session.generation() != crate::frame::Generation::Current {
            return self.recover_released(now);
        }
        let limit = self.cfg.recovery_limit.min(MAX_RECOVERY_LIMIT);
        let params = crate::harness::canonical::to_canonical(&JsonValue::object([("limit", JsonValue::from(limit))]));
        self.records.recovering = true;
        if let Err(e) = self.call(now, "agent/message/list", &params, Call::Recover) {
            return self.recovery_failed(now, "agent/message/list", e);
        }
        self.process(now);
    }

    /// The recovered rows are queued (those seen are skipped), then the live pushes that waited
    /// for them. A recovery that got no answer is retried (see [`Endpoint::recovery_failed`]).
    pub(in crate::harness::endpoint) fn recovered(&mut self, now: Millis, result: Result<String, MoltZapError>) {
        let text = match result {
            Ok(text) => text,
            Err(e) => return self.recovery_failed(now, "agent/message/list", e),
        };
        let mut rows = Vec::new();
        match JsonValue::parse(&text) {
            Ok(v) => {
                if let Some(JsonValue::Array(messages)) = obj(&v, "messages") {
                    for m in messages {
                        match Record::from_message(m) {
                            Ok(r) => rows.push(r),
                            Err(why) => self.log(None, LogKind::Unreadable(why)),
                        }
                    }
                }
            }
            Err(e) => self.log(
                None,
                LogKind::Unreadable(format!("agent/message/list answered no JSON: {e}")),
            ),
        }
        // The window is the newest rows: a push held across a lost connection (so older than
        // this recovery) that is not in it is older than all of them.
        for r in self.take_carried(&rows).into_iter().chain(rows) {
            self.queue_record(now, r);
        }
        self.release_live(now);
    }

    /// The live pushes held across a lost connection, taken out of `live`: those the rows read
    /// back do not hold (a row's copy is queued in its place).
    fn take_carried(&mut self, rows: &[Record]) -> Vec<Record> {
        let n = std::mem::take(&mut self.records.carried).min(self.records.live.len());
        let ids: std::collections::HashSet<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        self.records
            .live
            .drain(..n)
            .filter(|r| !ids.contains(r.id.as_str()))
            .collect()
    }

    /// The released recovery, begun or taken up again (its retry is due): the `conversations/list`
    /// page it is at until the last is answered, then the windows left to read.
    fn recover_released(&mut self, now: Millis) {
        self.records.recovering = true;
        let listed = match &mut self.records.released {
            Some(r) => {
                r.waiting = false;
                r.listed
            }
            None => {
                self.records.run += 1;
                self.records.released = Some(ReleasedRecovery {
                    run: self.records.run,
                    overflows_at_start: self.records.overflows,
                    ..ReleasedRecovery::default()
                });
                false
            }
        };
        if listed {
            return self.read_windows(now);
        }
        self.list_page(now);
    }

    /// Asks for the next `conversations/list` page: the first, or the one the last cursor
    /// followed names (asked again after a retry).
    fn list_page(&mut self, now: Millis) {
        let Some(r) = &self.records.released else { return };
        let mut params = vec![("limit", JsonValue::from(RECOVERY_PAGE_LIMIT))];
        if let Some(cursor) = r.cursors.last() {
            params.push(("cursor", cursor.clone().into()));
        }
        let params = crate::harness::canonical::to_canonical(&JsonValue::object(params));
        let call = Call::RecoverConversations(self.records.run);
        if let Err(e) = self.call(now, "conversations/list", &params, call) {
            return self.recovery_failed(now, "conversations/list", e);
        }
        self.process(now);
    }

    /// A `conversations/list` page answered: its conversations with activity since the last
    /// record seen (or since the oldest dropped for overflow), or all of them when nothing is
    /// known, are to be read; then its `cursor` is followed, unless the listing stops (see
    /// [`Endpoint::next_page`]). Once it ends, the windows are read.
    pub(in crate::harness::endpoint) fn recovered_conversations(
        &mut self,
        now: Millis,
        run: u64,
        result: Result<String, MoltZapError>,
    ) {
        if self.records.released.as_ref().is_none_or(|r| r.run != run || r.listed) {
            return;
        }
        let ready = self.session.state() == crate::session::SessionState::Ready;
        let text = match result {
            Ok(text) => text,
            Err(e)
                if !ready
                    || matches!(
                        e.kind(),
                        ErrorKind::Closed | ErrorKind::Timeout | ErrorKind::Cancelled | ErrorKind::Limit
                    ) =>
            {
                return self.recovery_failed(now, "conversations/list", e);
            }
            Err(e) => return self.stop_listing(now, format!("conversations/list: {}", e.error.message)),
        };
        let page = match JsonValue::parse(&text) {
            Ok(JsonValue::Object(mut o)) => match o.remove("conversations") {
                Some(JsonValue::Array(cs)) => Ok((cs, o.remove("cursor"))),
                _ => Err("conversations/list answered no conversations".to_owned()),
            },
            Ok(_) => Err("conversations/list answered no conversations".to_owned()),
            Err(e) => Err(format!("conversations/list answered no JSON: {e}")),
        };
        let (conversations, cursor) = match page {
            Ok(p) => p,
            Err(why) => return self.stop_listing(now, why),
        };
        let since = self.records.since();
        let Some(r) = &mut self.records.released else { return };
        r.pages += 1;
        for c in conversations.iter().take(RECOVERY_PAGE_LIMIT as usize) {
            let Some(id) =
                string(obj(c, "id")).filter(|id| !id.is_empty() && id.len() <= super::super::MAX_RECORD_ID_BYTES)
            else {
                continue;
            };
            // A conversation without a last message has nothing to read back.
            let Some(last) = string(obj(c, "lastMessageTimestamp")) else {
                continue;
            };
            let active = match &since {
                Since::All => true,
                Since::At(at) => to_second(last) >= to_second(at),
            };
            // Listed twice (on two pages): read once. At most a page's limit per page, so at
            // most MAX_RECOVERY_CONVERSATIONS in all.
            if active && r.todo.len() < MAX_RECOVERY_CONVERSATIONS as usize && !r.todo.iter().any(|t| t == id) {
                r.todo.push_back(id.to_owned());
            }
        }
        match Self::next_page(r, cursor) {
            Ok(Some(cursor)) => {
                r.cursors.push(cursor);
                self.list_page(now);
            }
            Ok(None) => {
                r.listed = true;
                self.read_windows(now);
            }
            Err(why) => self.stop_listing(now, why),
        }
    }

    /// After a page: the cursor to follow, none (the last page), or why the listing stops
    /// there: a cursor that is not a string or is longer than [`MAX_RECOVERY_CURSOR_BYTES`],
    /// one followed already (a server naming the same page again would list forever), or
    /// [`MAX_RECOVERY_PAGES`] read. The list's order is not given (by the released spec or the
    /// captures), so a page never tells that the ones after it hold nothing newer.
    fn next_page(r: &ReleasedRecovery, cursor: Option<JsonValue>) -> Result<Option<String>, String> {
        let cursor = match cursor {
            None | Some(JsonValue::Null) => return Ok(None),
            Some(JsonValue::String(c)) => c,
            Some(other) => {
                return Err(format!(
                    "conversations/list answered a cursor of type {}, not a string",
                    other.type_name()
                ))
            }
        };
        if cursor.len() > MAX_RECOVERY_CURSOR_BYTES {
            return Err(format!(
                "conversations/list answered a cursor of {} bytes, more than {MAX_RECOVERY_CURSOR_BYTES}",
                cursor.len()
            ));
        }
        if r.cursors.contains(&cursor) {
            return Err(format!(
                "conversations/list answered the cursor {} again",
                crate::harness::errors::quote(&cursor)
            ));
        }
        if r.pages >= MAX_RECOVERY_PAGES {
            return Err(format!(
                "a recovery lists at most {MAX_RECOVERY_PAGES} pages: more conversations may have activity"
            ));
        }
        Ok(Some(cursor))
    }

    /// The listing stops before its last page (why, logged): the first page not read, the
    /// recovery ends as a refused one (the live pushes go on without it); else the windows of
    /// the conversations listed are read, and what the pages not read would have read back
    /// stays to read (a dropped record's marker is kept).
    fn stop_listing(&mut self, now: Millis, why: String) {
        let Some(r) = &mut self.records.released else { return };
        if r.pages == 0 {
            let why = format!("the recent window was not read back ({why}); live records go on without it");
            self.log(None, LogKind::Unreadable(why));
            return self.give_up_released(now);
        }
        r.listed = true;
        r.incomplete = true;
        let why = format!(
            "the conversations listed after page {} of conversations/list are not read back ({why})",
            r.pages
        );
        self.log(None, LogKind::Unreadable(why));
        self.read_windows(now);
    }

    /// Asks for the windows left to read, at most [`RECOVERY_WINDOWS_IN_FLIGHT`] at once; when
    /// none is left or in flight, the rows are queued.
    fn read_windows(&mut self, now: Millis) {
        let limit = self.cfg.recovery_limit.min(MAX_RECOVERY_LIMIT);
        loop {
            let Some(r) = &mut self.records.released else { return };
            if r.waiting {
                return;
            }
            if r.todo.is_empty() && r.in_flight == 0 {
                return self.finish_released(now);
            }
            if r.in_flight >= RECOVERY_WINDOWS_IN_FLIGHT {
                break;
            }
            let Some(conv) = r.todo.pop_front() else { break };
            r.in_flight += 1;
            let run = r.run;
            let params = crate::harness::canonical::to_canonical(&JsonValue::object([
                ("conversationId", conv.clone().into()),
                ("limit", JsonValue::from(limit)),
            ]));
            let call = Call::RecoverWindow {
                run,
                conversation: conv.clone(),
            };
            if let Err(e) = self.call(now, "messages/list", &params, call) {
                let Some(r) = &mut self.records.released else { return };
                r.in_flight -= 1;
                r.todo.push_front(conv);
                // The session is full: the windows in flight make room as they are answered.
                if e.kind() == ErrorKind::Limit && r.in_flight > 0 {
                    break;
                }
                return self.recovery_failed(now, "messages/list", e);
            }
        }
        self.process(now);
    }

    /// One conversation's window (`messages/list`, ascending): its rows are kept until every
    /// window is read. A window refused by the server is logged and the others go on; one
    /// without an answer is asked again as a recovery is.
    pub(in crate::harness::endpoint) fn recovered_window(
        &mut self,
        now: Millis,
        run: u64,
        conv: &str,
        result: Result<String, MoltZapError>,
    ) {
        let ready = self.session.state() == crate::session::SessionState::Ready;
        let Some(r) = self.records.released.as_mut().filter(|r| r.run == run) else {
            return;
        };
        r.in_flight = r.in_flight.saturating_sub(1);
        let text = match result {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::Closed || !ready => {
                return self.recovery_failed(now, "messages/list", e);
            }
            Err(e) if matches!(e.kind(), ErrorKind::Timeout | ErrorKind::Cancelled | ErrorKind::Limit) => {
                r.todo.push_front(conv.to_owned());
                if r.waiting {
                    // A retry is already waiting for its backoff: this one goes with it.
                    return;
                }
                return self.recovery_failed(now, "messages/list", e);
            }
            Err(e) => {
                r.incomplete = true;
                let why = format!(
                    "the recent window of conversation {} was not read back (messages/list: {})",
                    crate::harness::errors::quote(conv),
                    e.error.message
                );
                self.log(None, LogKind::Unreadable(why));
                return self.read_windows(now);
            }
        };
        let rows = match JsonValue::parse(&text) {
            Ok(JsonValue::Object(mut o)) => match o.remove("messages") {
                Some(JsonValue::Array(ms)) => Ok(ms),
                _ => Err("messages/list answered no messages".to_owned()),
            },
            Ok(_) => Err("messages/list answered no messages".to_owned()),
            Err(e) => Err(format!("messages/list answered no JSON: {e}")),
        };
        match rows {
            Ok(rows) => {
                for m in &rows {
                    match Record::from_message(m) {
                        Ok(record) => self.keep_recovered(record),
                        Err(why) => self.log(None, LogKind::Unreadable(why)),
                    }
                }
            }
            Err(why) => {
                if let Some(r) = &mut self.records.released {
                    r.incomplete = true;
                }
                let why = format!(
                    "the recent window of conversation {} was not read back ({why})",
                    crate::harness::errors::quote(conv)
                );
                self.log(None, LogKind::Unreadable(why));
            }
        }
        self.read_windows(now);
    }

    /// A row read back, kept until every window is read: at most `max_pending_records` (past
    /// it `RecordsOverflow`, not seen, as a record finding the queue full); those seen are
    /// skipped now.
    fn keep_recovered(&mut self, record: Record) {
        if self.records.seen.contains(&record.id) {
            return;
        }
        let cap = self.cfg.max_pending_records.max(1);
        let Some(r) = &mut self.records.released else { return };
        if r.rows.len() >= cap {
            self.records.dropped(&record);
            return self.log(Some(&record.id), LogKind::RecordsOverflow);
        }
        r.rows.push(record);
    }

    /// Every window was read: the rows are queued oldest first (by `createdAt`; a window is
    /// ascending already), then the live pushes that waited. A record dropped for overflow
    /// before the recovery began has been read back unless a window was refused.
    fn finish_released(&mut self, now: Millis) {
        let Some(r) = self.records.released.take() else { return };
        if !r.incomplete && self.records.overflows == r.overflows_at_start {
            self.records.dropped_since = None;
        }
        self.queue_recovered(now, r.rows);
        self.release_live(now);
    }

    /// The released recovery ends without every window: the rows read are queued, then the
    /// live pushes.
    fn give_up_released(&mut self, now: Millis) {
        if let Some(r) = self.records.released.take() {
            self.queue_recovered(now, r.rows);
        }
        self.release_live(now);
    }

    fn queue_recovered(&mut self, now: Millis, rows: Vec<Record>) {
        // The pushes held across a lost connection that no window holds come first: a
        // conversation's window is its newest rows, so they are older than it.
        let mut rows: Vec<Record> = self.take_carried(&rows).into_iter().chain(rows).collect();
        // By the server's `createdAt` (one server writes one format, so its text sorts as its
        // time); stable: rows of one time keep the order their windows gave.
        rows.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        for row in rows {
            self.queue_record(now, row);
        }
    }

    /// A recovery failed. Cut by a lost connection: the live pushes keep waiting, and the next
    /// connect recovers. Without an answer (a timeout, a session with too many requests in
    /// flight): asked again after a backoff (1, 2, 4 s), up to [`RECOVERY_ATTEMPTS`] times, the
    /// live pushes still waiting, so none overtakes the records the window would give back.
    /// Refused by the server, or out of attempts: the live pushes are released alone (released:
    /// after the rows already read).
    fn recovery_failed(&mut self, now: Millis, method: &str, e: MoltZapError) {
        if self.session.state() != crate::session::SessionState::Ready || e.kind() == ErrorKind::Closed {
            self.records.recovering = true;
            return;
        }
        if matches!(e.kind(), ErrorKind::Timeout | ErrorKind::Cancelled | ErrorKind::Limit) {
            self.records.recovery_attempts += 1;
            let n = self.records.recovery_attempts;
            if n < RECOVERY_ATTEMPTS {
                self.records.recovering = true;
                if let Some(r) = &mut self.records.released {
                    r.waiting = true;
                }
                let backoff = RESOLVE_BACKOFF_MS.saturating_mul(1 << (n - 1));
                self.timers.set(Timer::Recover, now.saturating_add(backoff));
                return;
            }
        }
        let why = format!(
            "the recent window was not read back ({method}: {}); live records go on without it",
            e.error.message
        );
        self.log(None, LogKind::Unreadable(why));
        self.give_up_released(now);
    }

    /// No recovery outstanding: the live pushes that waited are queued.
    fn release_live(&mut self, now: Millis) {
        self.records.recovering = false;
        self.records.released = None;
        self.timers.cancel(&Timer::Recover);
        self.records.carried = 0;
        for r in std::mem::take(&mut self.records.live) {
            self.queue_record(now, r);
        }
        self.process(now);
    }
}

//! The rooms the upstream last said the connection covers, which a gap the bridge fills in or
//! makes up names: kept so that a `room_released` and a gap cost no pass over them.

use agentwire_switch::frame::string_len;

/// The rooms in the order the upstream listed them (a room listed twice is there twice, as it
/// came), with the length of their JSON array as the frame encoder writes it, so whether a gap
/// can carry them is known without writing it.
#[derive(Debug)]
pub(super) struct Rooms {
    /// As listed. A released room stays in it (marked in `index`) until the released ones
    /// outnumber the others.
    list: Vec<String>,
    /// Built at the release after `SCANS` releases since `list` was set or compacted; until
    /// then a release is a pass over `list` (cheaper than sorting it for a few).
    index: Option<Index>,
    /// Releases made by a pass since `list` was set or compacted.
    scans: usize,
    /// The rooms of `list` not released.
    live: usize,
    /// The length of `["a","b",…]` with the rooms not released, as the encoder writes it.
    json_len: usize,
}

impl Default for Rooms {
    /// None (`[]`).
    fn default() -> Rooms {
        Rooms {
            list: Vec::new(),
            index: None,
            scans: 0,
            live: 0,
            json_len: 2,
        }
    }
}

/// Releases made by a pass over the list before it is indexed.
const SCANS: usize = 16;

/// Where each room of the list is, for a release to find its copies by binary search.
#[derive(Debug)]
struct Index {
    /// The positions in `list`, ordered by the room there (copies of a room are neighbours).
    by_room: Vec<u32>,
    /// Per position in `list`: released.
    released: Vec<bool>,
}

impl Rooms {
    /// The upstream's new list (`connection_state`, `subscription_changed`).
    pub(super) fn set(&mut self, rooms: &[String]) {
        // As `Vec::clone_from`: the strings of the last list are written over, not reallocated.
        self.list.truncate(rooms.len());
        let (old, new) = rooms.split_at(self.list.len());
        self.list.clone_from_slice(old);
        self.list.extend_from_slice(new);
        self.index = None;
        self.scans = 0;
        self.live = rooms.len();
        self.json_len = 2 + rooms.iter().map(|r| string_len(r)).sum::<usize>() + rooms.len().saturating_sub(1);
    }

    /// `room_released`: every copy of `room` goes.
    pub(super) fn release(&mut self, room: &str) {
        if self.index.is_none() && self.scans < SCANS {
            self.scans += 1;
            let before = self.list.len();
            self.list.retain(|r| r != room);
            return self.released(room, before - self.list.len());
        }
        let list = &self.list;
        let index = self.index.get_or_insert_with(|| {
            // Positions fit a u32: a list comes in one frame, far below 4 G rooms.
            let mut by_room: Vec<u32> = (0..list.len() as u32).collect();
            by_room.sort_unstable_by(|&a, &b| list[a as usize].cmp(&list[b as usize]));
            Index {
                by_room,
                released: vec![false; list.len()],
            }
        });
        let name = |k: &u32| list[*k as usize].as_str();
        let from = index.by_room.partition_point(|k| name(k) < room);
        let to = from + index.by_room[from..].partition_point(|k| name(k) == room);
        // Copies are released together: the first says for all.
        match index.by_room.get(from) {
            Some(&k) if from < to && !index.released[k as usize] => {}
            _ => return,
        }
        for &k in &index.by_room[from..to] {
            index.released[k as usize] = true;
        }
        self.released(room, to - from);
        // Dropped once they outnumber the rest: each pass (and the index built again after it)
        // is paid for by as many releases.
        if self.list.len() - self.live > self.live {
            let released = self.index.take().map(|i| i.released).unwrap_or_default();
            let mut k = 0;
            self.list.retain(|_| {
                k += 1;
                !released[k - 1]
            });
            self.scans = 0;
        }
    }

    /// `n` copies of `room` are gone.
    fn released(&mut self, room: &str, n: usize) {
        self.live -= n;
        self.json_len = match self.live {
            0 => 2,
            // Each copy took its string and a comma.
            _ if n > 0 => self.json_len - n * (string_len(room) + 1),
            _ => self.json_len,
        };
    }

    /// The length [`Rooms::to_vec`] takes in an encoded frame: `rooms: []` becomes
    /// `rooms: <this many bytes>`.
    pub(super) fn json_len(&self) -> usize {
        self.json_len
    }

    /// The rooms not released, in order.
    pub(super) fn to_vec(&self) -> Vec<String> {
        match &self.index {
            None => self.list.clone(),
            Some(index) => {
                let released = index.released.iter();
                self.list
                    .iter()
                    .zip(released)
                    .filter(|(_, gone)| !**gone)
                    .map(|(r, _)| r.clone())
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentwire_switch::frame::{encode, Frame, Gap};

    fn gap_len(rooms: Vec<String>) -> usize {
        encode(&Frame::Gap(Gap {
            from_sequence: 1,
            resumed_at: 2,
            resumed_position: None,
            rooms: Some(rooms),
            all_rooms: Some(true),
            reason: "r".into(),
        }))
        .len()
    }

    /// What a gap takes with the rooms is what `json_len` says, and releases keep the order,
    /// whether they pass over the list or find the rooms in the index.
    #[test]
    fn the_length_kept_is_the_encoded_one_through_releases() {
        // Every ASCII character and a few beyond, one room.
        let all: String = (0u8..128)
            .map(char::from)
            .chain(['\u{80}', '\u{7ff}', '\u{ffff}'])
            .collect();
        let mut one = Rooms::default();
        one.set(std::slice::from_ref(&all));
        assert_eq!(gap_len(vec![all]), gap_len(Vec::new()) - 2 + one.json_len());
        let empty = gap_len(Vec::new());
        assert_eq!(Rooms::default().json_len(), 2);
        let check = |rooms: &Rooms, want: &[&str]| {
            assert_eq!(rooms.to_vec(), want);
            assert_eq!(gap_len(rooms.to_vec()), empty - 2 + rooms.json_len(), "{want:?}");
        };
        let names = [
            "a",
            "é",
            "😀x",
            "q\"\\",
            "\u{1}\n\u{7f}",
            "a",
            "b",
            "",
            "a",
            "c",
            "d",
            "e",
        ];
        let list: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        for scans in [0, SCANS] {
            let mut rooms = Rooms::default();
            rooms.set(&list);
            rooms.scans = scans;
            check(&rooms, &names);
            for (gone, left) in [
                ("nope", &names[..]),
                ("a", &["é", "😀x", "q\"\\", "\u{1}\n\u{7f}", "b", "", "c", "d", "e"]),
                ("a", &["é", "😀x", "q\"\\", "\u{1}\n\u{7f}", "b", "", "c", "d", "e"]),
                ("😀x", &["é", "q\"\\", "\u{1}\n\u{7f}", "b", "", "c", "d", "e"]),
                ("", &["é", "q\"\\", "\u{1}\n\u{7f}", "b", "c", "d", "e"]),
                ("é", &["q\"\\", "\u{1}\n\u{7f}", "b", "c", "d", "e"]),
                ("b", &["q\"\\", "\u{1}\n\u{7f}", "c", "d", "e"]),
                ("d", &["q\"\\", "\u{1}\n\u{7f}", "c", "e"]),
                ("q\"\\", &["\u{1}\n\u{7f}", "c", "e"]),
                ("\u{1}\n\u{7f}", &["c", "e"]),
                ("e", &["c"]),
                ("c", &[]),
            ] {
                rooms.release(gone);
                check(&rooms, left);
                assert!(
                    rooms.list.len() <= 2 * rooms.live,
                    "released rooms are dropped once they outnumber the rest"
                );
                if gone == "nope" {
                    assert_eq!(rooms.index.is_some(), scans == SCANS, "indexed after {SCANS} passes");
                }
            }
            rooms.set(&["x".to_owned(), "y".to_owned()]);
            check(&rooms, &["x", "y"]);
            assert!(rooms.index.is_none() && rooms.scans == 0);
        }
    }

    /// Through the index, released rooms stay in the list until they outnumber the others, and
    /// are dropped then (with the index), not before.
    #[test]
    fn released_rooms_are_dropped_once_they_outnumber_the_rest_and_not_before() {
        let mut rooms = Rooms::default();
        rooms.set(&["a", "b", "c", "d", "e", "f", "g", "h"].map(String::from));
        rooms.scans = SCANS;
        // 4 released of 8 do not outnumber the 4 others; 5 do.
        for (gone, kept) in [("a", 8), ("b", 8), ("c", 8), ("d", 8), ("nope", 8), ("e", 3)] {
            rooms.release(gone);
            assert_eq!((rooms.list.len(), rooms.index.is_some()), (kept, kept == 8), "{gone}");
        }
        assert_eq!(
            (rooms.to_vec(), rooms.live, rooms.scans),
            (["f", "g", "h"].map(String::from).to_vec(), 3, 0)
        );
    }

    /// `SCANS` releases pass over the list; the one after them builds the index.
    #[test]
    fn the_list_is_indexed_after_scans_passes() {
        let mut rooms = Rooms::default();
        rooms.set(&["a".to_owned(), "b".to_owned()]);
        for n in 1..=SCANS {
            rooms.release("nope");
            assert_eq!((rooms.scans, rooms.index.is_none()), (n, true));
        }
        rooms.release("nope");
        assert!(rooms.index.is_some());
        assert_eq!(rooms.to_vec(), ["a", "b"]);
    }
}

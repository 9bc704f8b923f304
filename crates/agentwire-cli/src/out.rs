//! Everything the commands print on stdout goes through here. A line is written with stdout
//! locked and flushed; a stdout that can no longer be written stops the command cleanly instead
//! of panicking as `println!` does. A closed pipe (the reader went away: `| head -1`) is an
//! ordinary end, exit 0 as for `yes | head`; any other write error is reported on stderr and
//! fails the command.
//!
//! Whatever a server sent may end up in a line (an error message, an operation's or an agent's
//! name, an event's text), so every line, on stdout ([`outln!`], [`write()`]) and on stderr
//! ([`errln!`]), is made terminal-safe on the way out ([`terminal_safe`]): no control character
//! but tab and newline reaches the terminal raw. A server's text that belongs on one line is
//! shown with [`OneLine`], which escapes newlines too.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

/// `eprintln!` that drops the line when stderr cannot be written (`2>&1 | head` gone) instead
/// of panicking: what stderr says is advice, and the exit code still tells the outcome.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::out::write_err(format_args!($($arg)*))
    };
}

pub(crate) use errln;

/// stdout cannot be written any more: the command stops (closing its client) and exits with
/// `ExitCode::from(closed)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed {
    broken_pipe: bool,
}

impl From<Closed> for ExitCode {
    fn from(closed: Closed) -> ExitCode {
        if closed.broken_pipe {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}

/// The exit code of a command whose last act was writing to stdout.
pub fn exit(written: Result<(), Closed>) -> ExitCode {
    written.map_or_else(ExitCode::from, |()| ExitCode::SUCCESS)
}

/// Why a command did not complete: its client's error `E`, or a closed stdout. Each command
/// module adds `From<E>`.
pub enum Failed<E> {
    Error(E),
    Closed(Closed),
}

impl<E> From<Closed> for Failed<E> {
    fn from(closed: Closed) -> Failed<E> {
        Failed::Closed(closed)
    }
}

/// `args` formatted and made terminal-safe, with a newline when `newline`.
fn safe_line(args: fmt::Arguments<'_>, newline: bool) -> String {
    let text = fmt::format(args);
    let mut line = match terminal_safe(&text, true) {
        Cow::Borrowed(_) => text,
        Cow::Owned(escaped) => escaped,
    };
    if newline {
        line.push('\n');
    }
    line
}

/// Writes `args` (and a newline when `newline`) to stdout, terminal-safe, and flushes it.
pub fn write(args: fmt::Arguments<'_>, newline: bool) -> Result<(), Closed> {
    let line = safe_line(args, newline);
    let mut stdout = io::stdout().lock();
    let written = stdout.write_all(line.as_bytes()).and_then(|()| stdout.flush());
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(Closed { broken_pipe: true }),
        Err(e) => {
            errln!("error: cannot write to stdout: {e}");
            Err(Closed { broken_pipe: false })
        }
    }
}

/// Writes `args` and a newline to stderr, terminal-safe; a stderr that cannot be written is
/// ignored ([`errln!`]).
pub fn write_err(args: fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_all(safe_line(args, true).as_bytes());
}

/// `println!` that returns `Err(Closed)` instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*), true)
    };
}

pub(crate) use outln;

/// Whether `c` must not reach a terminal raw: a C0 control but tab (and newline when
/// `newline` is allowed), DEL, a C1 control (U+0080–U+009F: U+009B is a CSI, U+009D an OSC in
/// terminals that take 8-bit controls), or a bidirectional embedding, override or isolate
/// (U+202A–U+202E, U+2066–U+2069), which reorder the text shown around it.
fn is_unsafe(c: char, newline: bool) -> bool {
    match c {
        '\t' => false,
        '\n' => !newline,
        '\0'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// `text` with every character a terminal would act on ([`is_unsafe`]) written as `\uXXXX`:
/// ESC as `\u001b`, U+009B as `\u009b`. Newlines are kept when `newline`. Inside a JSON string
/// that is the character's own escape, and outside one (JSON text has these characters raw
/// only in strings) the characters cannot occur, so JSON stays valid JSON with the same value;
/// in plain text it is a visible escape. Text without such characters is returned as it is.
pub fn terminal_safe(text: &str, newline: bool) -> Cow<'_, str> {
    let Some(first) = text.find(|c| is_unsafe(c, newline)) else {
        return Cow::Borrowed(text);
    };
    let mut safe = String::with_capacity(text.len() + 8);
    safe.push_str(&text[..first]);
    for c in text[first..].chars() {
        if is_unsafe(c, newline) {
            // Every unsafe character is in the Basic Multilingual Plane: four digits.
            safe.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            safe.push(c);
        }
    }
    Cow::Owned(safe)
}

/// A server's text that belongs on one line (a name, an error message): shown terminal-safe
/// with its newlines escaped too (`\u000a`), so it cannot start a line of its own that looks
/// like the command's.
pub struct OneLine<'a>(pub &'a str);

impl fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&terminal_safe(self.0, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_visibly() {
        let hostile = "\u{1b}]0;PWNED\u{7}\u{1b}[2J\rfake> \u{7f}";
        assert_eq!(
            terminal_safe(hostile, true),
            "\\u001b]0;PWNED\\u0007\\u001b[2J\\u000dfake> \\u007f"
        );
        assert_eq!(
            terminal_safe("\0\u{8}\u{b}\u{c}\u{1f}", true),
            "\\u0000\\u0008\\u000b\\u000c\\u001f"
        );
    }

    #[test]
    fn c1_controls_and_bidi_overrides_are_escaped() {
        assert_eq!(
            terminal_safe("a\u{80}b\u{9b}2J\u{9c}\u{9d}0;T\u{9f}", true),
            "a\\u0080b\\u009b2J\\u009c\\u009d0;T\\u009f"
        );
        assert_eq!(
            terminal_safe(
                "\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}evil\u{2066}\u{2067}\u{2068}\u{2069}",
                true
            ),
            "\\u202a\\u202b\\u202c\\u202d\\u202eevil\\u2066\\u2067\\u2068\\u2069"
        );
        // Their neighbours are ordinary text.
        for c in ['\u{a0}', '\u{2029}', '\u{202f}', '\u{2065}', '\u{206a}', '\u{200f}'] {
            assert!(!is_unsafe(c, false), "{c:?}");
        }
    }

    #[test]
    fn tab_and_plain_unicode_pass_untouched() {
        let plain = "Seoul\t서울 — naïve 🦀 «ok» \\u001b as text";
        assert!(matches!(terminal_safe(plain, false), Cow::Borrowed(p) if p == plain));
        assert_eq!(terminal_safe("", false), "");
    }

    #[test]
    fn newlines_are_kept_only_where_lines_are_expected() {
        assert_eq!(terminal_safe("one\ntwo", true), "one\ntwo");
        assert_eq!(terminal_safe("one\ntwo", false), "one\\u000atwo");
        assert_eq!(
            OneLine("op\nerror: fake\r\u{1b}[31m").to_string(),
            "op\\u000aerror: fake\\u000d\\u001b[31m"
        );
        assert_eq!(OneLine("post_message").to_string(), "post_message");
    }

    #[test]
    fn json_stays_valid_json_with_the_same_value() {
        let value = serde_json::json!({
            "text": "c1:\u{9b}2J\u{9d}0;T\u{9c} esc:\u{1b}[2J del:\u{7f} \u{202e}evil\u{202c} \\u009b tab:\t ok 서울",
            "\u{9b}key": ["\u{2066}", 1],
        });
        for json in [value.to_string(), serde_json::to_string_pretty(&value).unwrap()] {
            let safe = terminal_safe(&json, true);
            assert!(!safe.chars().any(|c| is_unsafe(c, true)), "{safe}");
            assert!(safe.contains("\\u009b2J") && safe.contains("\\u202e"), "{safe}");
            let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
            assert_eq!(back, value);
        }
    }

    #[test]
    fn a_formatted_line_is_safe_and_ends_with_its_newline() {
        let name = "\u{1b}]52;c;cm0=\u{7}x";
        assert_eq!(
            safe_line(format_args!("error: {name}\n  details: {}", OneLine("a\nb")), true),
            "error: \\u001b]52;c;cm0=\\u0007x\n  details: a\\u000ab\n"
        );
        assert_eq!(safe_line(format_args!("> "), false), "> ");
    }
}

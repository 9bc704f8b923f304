//! The `rkt connect` REPL: one command per line, each answered before the next is read.

use crate::out::{self, outln, Closed, OneLine};
use agentwire_core::ErrorKind;
use agentwire_native::rkt::RktClient;
use agentwire_rkt::{AuthBody, RequestOptions, RktError};
use serde::Deserialize;
use serde_json::Value;
use std::io::IsTerminal;
use std::process::ExitCode;
use tokio::io::{AsyncBufReadExt, BufReader};

const HELP: &str = r#"commands:
  {"intent":"echo","params":{...},"stream":false}   send a REQUEST, print the response body
  discover                                          print the capability manifest
  ping                                              measure one round trip
  memory set KEY JSON [NAMESPACE] [TTL]             store a JSON value (TTL in seconds)
  memory get KEY [NAMESPACE]                        read a value
  pay AMOUNT CURRENCY [DESCRIPTION]                 send a payment
  auth KEY                                          authenticate with an API key (bearer)
  help                                              this list
  exit                                              say GOODBYE and quit (so does end of input; Ctrl-C too, exit 130)"#;

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct JsonRequest {
    intent: String,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    stream: bool,
}

#[derive(Debug, PartialEq)]
enum Line {
    Empty,
    Request(JsonRequest),
    Discover,
    Ping,
    MemorySet {
        key: String,
        value: Value,
        namespace: Option<String>,
        ttl_s: Option<u64>,
    },
    MemoryGet {
        key: String,
        namespace: Option<String>,
    },
    Pay {
        amount: f64,
        currency: String,
        description: Option<String>,
    },
    Auth(String),
    Help,
    Exit,
}

fn invalid(message: impl Into<String>) -> RktError {
    RktError::local(ErrorKind::Invalid, message)
}

/// The first whitespace-separated word of `s`, and the rest with leading space removed.
fn word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    (&s[..end], s[end..].trim_start())
}

fn parse(line: &str) -> Result<Line, RktError> {
    let line = line.trim();
    if line.starts_with('{') {
        return serde_json::from_str(line)
            .map(Line::Request)
            .map_err(|e| invalid(format!("request must be {{\"intent\", \"params\"?, \"stream\"?}}: {e}")));
    }
    let (command, rest) = word(line);
    // Words after a command that takes none are refused, as are words past a command's last
    // argument (only `pay`'s DESCRIPTION is free text).
    let alone = |line: Line| {
        if rest.is_empty() {
            Ok(line)
        } else {
            Err(invalid(format!("usage: {command} (no arguments)")))
        }
    };
    let line = match command {
        "" => Line::Empty,
        "discover" => alone(Line::Discover)?,
        "ping" => alone(Line::Ping)?,
        "help" => alone(Line::Help)?,
        "exit" | "quit" => alone(Line::Exit)?,
        "auth" => match word(rest) {
            (key, "") if !key.is_empty() => Line::Auth(key.to_string()),
            _ => return Err(invalid("usage: auth KEY")),
        },
        "pay" => {
            let (amount, rest) = word(rest);
            let (currency, description) = word(rest);
            let amount: f64 = amount
                .parse()
                .map_err(|_| invalid("usage: pay AMOUNT CURRENCY [DESCRIPTION]"))?;
            if currency.is_empty() {
                return Err(invalid("usage: pay AMOUNT CURRENCY [DESCRIPTION]"));
            }
            let description = (!description.is_empty()).then(|| description.to_string());
            Line::Pay {
                amount,
                currency: currency.to_string(),
                description,
            }
        }
        "memory" => match word(rest) {
            ("set", rest) => parse_memory_set(rest)?,
            ("get", rest) => {
                let (key, rest) = word(rest);
                let (namespace, extra) = word(rest);
                if key.is_empty() || !extra.is_empty() {
                    return Err(invalid("usage: memory get KEY [NAMESPACE]"));
                }
                Line::MemoryGet {
                    key: key.to_string(),
                    namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
                }
            }
            _ => {
                return Err(invalid(
                    "usage: memory set KEY JSON [NAMESPACE] [TTL] | memory get KEY [NAMESPACE]",
                ))
            }
        },
        other => return Err(invalid(format!("unknown command `{other}` (try `help`)"))),
    };
    Ok(line)
}

/// `KEY JSON [NAMESPACE] [TTL]`: the JSON value may contain spaces; it ends where it parses.
fn parse_memory_set(rest: &str) -> Result<Line, RktError> {
    const USAGE: &str = "usage: memory set KEY JSON [NAMESPACE] [TTL]";
    let (key, rest) = word(rest);
    if key.is_empty() {
        return Err(invalid(USAGE));
    }
    let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    let value = match values.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => return Err(invalid(format!("value must be JSON (quote strings: \"Seoul\"): {e}"))),
        None => return Err(invalid(USAGE)),
    };
    let (namespace, rest) = word(&rest[values.byte_offset()..]);
    let (ttl, extra) = word(rest);
    if !extra.is_empty() {
        return Err(invalid(USAGE));
    }
    let ttl_s = match ttl {
        "" => None,
        t => Some(
            t.parse::<u64>()
                .map_err(|_| invalid(format!("TTL `{t}` is not a number of seconds from 0 to {}", u64::MAX)))?,
        ),
    };
    let namespace = (!namespace.is_empty()).then(|| namespace.to_string());
    Ok(Line::MemorySet {
        key: key.to_string(),
        value,
        namespace,
        ttl_s,
    })
}

fn print_json(v: &Value) -> Result<(), Closed> {
    outln!("{}", serde_json::to_string(v).unwrap_or_default())
}

fn print_error(e: &RktError) -> Result<(), Closed> {
    // The message and the details are the server's: each stays on its line.
    outln!("error: {}", OneLine(&e.to_string()))?;
    if let Some(s) = e.retry_after_s {
        outln!("  retry after {s} s")?;
    }
    if let Some(details) = &e.details {
        outln!("  details: {}", OneLine(details))?;
    }
    Ok(())
}

type Failed = crate::out::Failed<RktError>;

impl From<RktError> for Failed {
    fn from(e: RktError) -> Failed {
        Failed::Error(e)
    }
}

async fn execute(client: &RktClient, line: Line) -> Result<(), Failed> {
    match line {
        Line::Empty | Line::Exit => {}
        Line::Help => outln!("{HELP}")?,
        Line::Request(JsonRequest {
            intent,
            params,
            stream: false,
        }) => print_json(&client.request(&intent, params, RequestOptions::default()).await?)?,
        Line::Request(JsonRequest {
            intent,
            params,
            stream: true,
        }) => {
            let mut chunks = client.stream(&intent, params, RequestOptions::default()).await?;
            while let Some(chunk) = chunks.recv().await {
                print_json(&chunk?)?;
            }
        }
        Line::Discover => outln!(
            "{}",
            serde_json::to_string_pretty(&client.discover().await?).unwrap_or_default()
        )?,
        Line::Ping => outln!("pong: {:.3} ms", client.ping().await?.as_secs_f64() * 1000.0)?,
        Line::MemorySet {
            key,
            value,
            namespace,
            ttl_s,
        } => print_json(&client.memory_set(&key, value, namespace.as_deref(), ttl_s).await?)?,
        Line::MemoryGet { key, namespace } => match client.memory_get(&key, namespace.as_deref()).await? {
            Some(value) => print_json(&value)?,
            None => outln!("(not found)")?,
        },
        Line::Pay {
            amount,
            currency,
            description,
        } => print_json(&client.pay(amount, &currency, description.as_deref(), None).await?)?,
        Line::Auth(token) => {
            let ok = client
                .auth(AuthBody::Bearer {
                    token,
                    scopes: Vec::new(),
                })
                .await?;
            outln!("{}", serde_json::to_string(&ok).unwrap_or_default())?;
        }
    }
    Ok(())
}

/// Runs the REPL until `exit`, the end of input, the end of the connection (exit 1), a closed
/// stdout or a signal (Ctrl-C, SIGTERM: even in the middle of a request), then says GOODBYE.
pub async fn run(client: RktClient) -> ExitCode {
    let mut stop = crate::signal::Stop::new();
    let code = tokio::select! {
        code = session(&client) => code,
        signal = stop.recv() => signal.exit_code(),
    };
    client.close().await;
    code
}

async fn session(client: &RktClient) -> ExitCode {
    let info = client.server_info();
    let user_agent = OneLine(info.server.user_agent.as_deref().unwrap_or("unknown"));
    let caps = if info.server.capabilities.is_empty() {
        "none".to_string()
    } else {
        info.server.capabilities.join(",")
    };
    let caps = OneLine(&caps);
    if let Err(closed) = outln!("connected to {} (server {user_agent}, caps {caps})", info.url) {
        return closed.into();
    }
    let interactive = std::io::stdin().is_terminal();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        if interactive {
            if let Err(closed) = out::write(format_args!("> "), false) {
                return closed.into();
            }
        }
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => return ExitCode::SUCCESS,
            // The rest of the script did not run: the command fails (a command's error is
            // printed inline, this one is the REPL's own).
            Err(e) => return crate::command::fail(format!("cannot read input: {e}")),
        };
        let printed = match parse(&line) {
            Ok(Line::Exit) => return ExitCode::SUCCESS,
            Ok(line) => match execute(client, line).await {
                Ok(()) => Ok(()),
                // The connection is gone: every later command would fail the same way, and
                // the script did not run to its end.
                Err(Failed::Error(e)) if e.kind() == ErrorKind::Closed => {
                    return print_error(&e).map_or_else(ExitCode::from, |()| ExitCode::FAILURE);
                }
                Err(Failed::Error(e)) => print_error(&e),
                Err(Failed::Closed(closed)) => Err(closed),
            },
            Err(e) => print_error(&e),
        };
        if let Err(closed) = printed {
            return closed.into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_command() {
        let req = parse(r#"{"intent":"echo","params":{"city":"Seoul"}}"#).unwrap();
        assert_eq!(
            req,
            Line::Request(JsonRequest {
                intent: "echo".into(),
                params: Some(json!({"city": "Seoul"})),
                stream: false
            })
        );
        assert!(matches!(
            parse(r#"{"intent":"weather.forecast","stream":true}"#),
            Ok(Line::Request(JsonRequest { stream: true, .. }))
        ));
        assert_eq!(parse("  discover ").unwrap(), Line::Discover);
        assert_eq!(parse("ping").unwrap(), Line::Ping);
        assert_eq!(parse("").unwrap(), Line::Empty);
        assert_eq!(parse("exit").unwrap(), Line::Exit);
        assert_eq!(
            parse(r#"memory set city {"name": "Seoul", "n": 1} user.prefs 3600"#).unwrap(),
            Line::MemorySet {
                key: "city".into(),
                value: json!({"name": "Seoul", "n": 1}),
                namespace: Some("user.prefs".into()),
                ttl_s: Some(3600)
            }
        );
        assert_eq!(
            parse(r#"memory set city "Seoul""#).unwrap(),
            Line::MemorySet {
                key: "city".into(),
                value: json!("Seoul"),
                namespace: None,
                ttl_s: None
            }
        );
        assert_eq!(
            parse("memory get city user.prefs").unwrap(),
            Line::MemoryGet {
                key: "city".into(),
                namespace: Some("user.prefs".into())
            }
        );
        assert_eq!(
            parse("pay 0.001 RKTT forecast API call").unwrap(),
            Line::Pay {
                amount: 0.001,
                currency: "RKTT".into(),
                description: Some("forecast API call".into())
            }
        );
        assert_eq!(parse("auth k1").unwrap(), Line::Auth("k1".into()));
    }

    /// A TTL is a u64 of seconds: one past it is told the range, not called "not a number".
    #[test]
    fn a_ttl_past_its_range_is_told_the_range() {
        let max = u64::MAX;
        assert!(matches!(
            parse(&format!("memory set city 1 ns {max}")).unwrap(),
            Line::MemorySet { ttl_s: Some(t), .. } if t == max
        ));
        for ttl in ["18446744073709551616", "ttl", "-1"] {
            let e = parse(&format!("memory set city 1 ns {ttl}")).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Invalid, "{ttl}");
            assert_eq!(
                e.error.message,
                format!("TTL `{ttl}` is not a number of seconds from 0 to 18446744073709551615")
            );
        }
    }

    #[test]
    fn refuses_malformed_commands_with_invalid() {
        for bad in [
            "frobnicate",
            r#"{"params":{}}"#,
            r#"{"intent":"echo","strem":true}"#,
            "memory set city Seoul",
            "memory set city 1 ns ttl",
            "memory set city 1 ns 10 extra",
            "memory get",
            "memory drop x",
            "pay ten RKTT",
            "pay 1",
            "auth",
            "auth k1 extra",
            "discover now",
            "ping 3",
            "help me",
            "exit now",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Invalid, "{bad}");
        }
    }
}

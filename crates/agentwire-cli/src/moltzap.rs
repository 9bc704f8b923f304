//! `agentwire moltzap register|connect|send|list|watch|call`. Results and events are printed as
//! one JSON object per line on stdout; errors go to stderr with a failing exit code.

use crate::command::{block_on, fail, Threads};
use crate::out::{errln, outln, Closed, OneLine};
use agentwire_core::ErrorKind;
use agentwire_moltzap::register::Registration;
use agentwire_moltzap::session::SendMessage;
use agentwire_moltzap::{Credentials, Event, GenerationChoice, MoltZapError};
use agentwire_native::moltzap::{register, Events, MoltZapClient, MoltZapConfig};
use clap::{Args, Subcommand, ValueEnum};
use std::process::ExitCode;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The playground's MoltZap peer.
pub const DEFAULT_PORT: u16 = 7750;

#[derive(Subcommand)]
pub enum Command {
    /// Register an agent over HTTP; prints {"agentId","apiKey"}
    Register {
        /// Agent name: `^[a-z0-9][a-z0-9_-]{1,30}[a-z0-9]$`
        name: String,
        #[arg(long)]
        description: Option<String>,
        #[arg(long)]
        invite_code: Option<String>,
        /// The server's HTTP origin
        #[arg(long, default_value_t = format!("http://127.0.0.1:{DEFAULT_PORT}"))]
        server: String,
    },
    /// Interactive session: `send <agent> <text>`, `sendc <conversation> <text>`,
    /// `list [conversation]`, `call <method> [json]`, `quit`; events print as they arrive
    Connect(Conn),
    /// Send a text message to an agent (`--to`) or a conversation (`--conversation`)
    Send {
        #[command(flatten)]
        conn: Conn,
        /// The name of the agent to send to (`bob`)
        #[arg(long, conflicts_with = "conversation", required_unless_present = "conversation")]
        to: Option<String>,
        /// The conversation to send in (its id)
        #[arg(long)]
        conversation: Option<String>,
        /// The message text
        text: String,
    },
    /// List messages: of one conversation, or the recent window across all of them
    List {
        #[command(flatten)]
        conn: Conn,
        /// This conversation's messages (its id); without, the recent window across all
        #[arg(long)]
        conversation: Option<String>,
        /// At most this many messages
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
    /// Print events as they arrive, until `--count` events or `--for-ms` elapsed (or Ctrl-C or
    /// SIGTERM); the server ending the connection fails it
    Watch {
        #[command(flatten)]
        conn: Conn,
        /// Stop after this many events
        #[arg(long)]
        count: Option<u64>,
        /// Stop after this many milliseconds
        #[arg(long)]
        for_ms: Option<u64>,
    },
    /// Call any method with JSON params; prints the result
    Call {
        #[command(flatten)]
        conn: Conn,
        method: String,
        params: Option<String>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Gen {
    Current,
    Released,
    Auto,
}

#[derive(Args)]
pub struct Conn {
    /// The server's WebSocket URL (`ws://`, or `wss://` for TLS)
    #[arg(long, default_value_t = format!("ws://127.0.0.1:{DEFAULT_PORT}/ws"))]
    url: String,
    /// The agent key (`moltzap_agent_…`). In MOLTZAP_AGENT_KEY it stays out of the process list,
    /// which any local user can read
    #[arg(long, env = "MOLTZAP_AGENT_KEY", hide_env_values = true)]
    key: String,
    /// The generation to speak (default auto, where the library's is current: a command line
    /// meets servers of either generation)
    #[arg(long, value_enum, default_value = "auto")]
    generation: Gen,
    /// Request timeout, in milliseconds (at least 1)
    #[arg(long, default_value_t = agentwire_moltzap::session::DEFAULT_REQUEST_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
}

pub fn run(command: Command) -> ExitCode {
    block_on(Threads::One, async move {
        match main(command).await {
            Ok(code) => code,
            Err(Failed::Error(e)) => fail(e.error),
            Err(Failed::Closed(closed)) => closed.into(),
        }
    })
}

type Failed = crate::out::Failed<MoltZapError>;

impl From<MoltZapError> for Failed {
    fn from(e: MoltZapError) -> Failed {
        Failed::Error(e)
    }
}

/// Prints a raw JSON result compactly (text that is not JSON on one line, terminal-safe).
fn print_json(raw: &str) -> Result<(), Closed> {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v) => outln!("{v}"),
        Err(_) => outln!("{}", OneLine(raw)),
    }
}

/// Prints a request's result, then closes the client (whether the request or the print failed
/// or not).
async fn print_and_close(client: MoltZapClient, answer: Result<String, MoltZapError>) -> Result<(), Failed> {
    let printed = match answer {
        Ok(raw) => print_json(&raw).map_err(Failed::from),
        Err(e) => Err(Failed::from(e)),
    };
    client.close().await;
    printed
}

async fn main(command: Command) -> Result<ExitCode, Failed> {
    match command {
        Command::Register {
            name,
            description,
            invite_code,
            server,
        } => {
            let mut r = Registration::new(name);
            r.description = description;
            r.invite_code = invite_code;
            let ok = register(&server, &r, Duration::from_secs(10)).await?;
            outln!("{}", serde_json::json!({"agentId": ok.agent_id, "apiKey": ok.api_key}))?;
        }
        Command::Connect(conn) => {
            let mut client = connect(&conn).await?;
            let events = client.events().expect("first take");
            let mut stop = crate::signal::Stop::new();
            // A signal stops the REPL even in the middle of a request.
            let ended = tokio::select! {
                ended = repl(&client, events) => ended.map(|()| ExitCode::SUCCESS),
                signal = stop.recv() => Ok(signal.exit_code()),
            };
            client.close().await;
            return ended;
        }
        Command::Send {
            conn,
            to,
            conversation,
            text,
        } => {
            let mut client = connect(&conn).await?;
            drop(client.events());
            let msg = match (to, conversation) {
                (Some(to), _) => SendMessage::text_to_agent(&to, text),
                (None, Some(c)) => SendMessage::text_to_conversation(c, text),
                (None, None) => unreachable!("clap requires one"),
            };
            let answer = client.request(move |s, now| s.messages_send(now, &msg)).await;
            print_and_close(client, answer).await?;
        }
        Command::List {
            conn,
            conversation,
            limit,
        } => {
            let mut client = connect(&conn).await?;
            drop(client.events());
            let answer = list(&client, conversation, limit).await;
            print_and_close(client, answer).await?;
        }
        Command::Watch { conn, count, for_ms } => {
            let mut client = connect(&conn).await?;
            let events = client.events().expect("first take");
            let watched = watch(events, count, for_ms).await;
            client.close().await;
            watched?;
        }
        Command::Call { conn, method, params } => {
            let mut client = connect(&conn).await?;
            drop(client.events());
            let answer = client.call(&method, params.as_deref()).await;
            print_and_close(client, answer).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn connect(conn: &Conn) -> Result<MoltZapClient, MoltZapError> {
    let mut cfg = MoltZapConfig::default();
    cfg.session.generation = match conn.generation {
        Gen::Current => GenerationChoice::Current,
        Gen::Released => GenerationChoice::Released,
        Gen::Auto => GenerationChoice::Auto,
    };
    cfg.session.request_timeout_ms = conn.timeout_ms;
    let client = MoltZapClient::connect(&conn.url, Credentials::AgentKey(conn.key.clone()), cfg).await?;
    let info = client.info();
    errln!(
        "connected to {} ({} generation{})",
        info.url,
        info.generation.as_str(),
        info.hello
            .agent_id
            .as_deref()
            .map(|a| format!(", agent {}", OneLine(a)))
            .unwrap_or_default()
    );
    Ok(client)
}

/// One conversation's messages, or the window across all (`Session::recent_messages`).
async fn list(client: &MoltZapClient, conversation: Option<String>, limit: u32) -> Result<String, MoltZapError> {
    client
        .request(move |s, now| s.recent_messages(now, conversation.as_deref(), limit))
        .await
}

/// Prints `event`. The last one, `Disconnected`, fails the command: the server (or the network)
/// ended the connection, which the command never does before it is done.
fn print_event(event: Event) -> Result<(), Failed> {
    outln!("{}", event.to_json())?;
    match event {
        Event::Disconnected { code, reason } => Err(Failed::Error(MoltZapError::local(
            ErrorKind::Closed,
            format!("the connection ended: {code} {reason}"),
        ))),
        _ => Ok(()),
    }
}

async fn watch(mut events: Events, count: Option<u64>, for_ms: Option<u64>) -> Result<(), Failed> {
    let deadline = crate::watch::deadline(for_ms);
    let mut stop = crate::signal::Stop::new();
    let mut seen = 0;
    while count.is_none_or(|c| seen < c) {
        let Some(event) = crate::watch::next_or_stop(deadline, &mut stop, events.recv()).await else {
            break;
        };
        seen += 1;
        print_event(event)?;
    }
    Ok(())
}

/// Until `quit`, the end of input, the end of the connection (which fails the command) or a
/// closed stdout. The caller closes the client.
async fn repl(client: &MoltZapClient, mut events: Events) -> Result<(), Failed> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut ended = Ok(());
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(event) => {
                    if let Err(e) = print_event(event) {
                        ended = Err(e);
                        break;
                    }
                }
                None => return Ok(()),
            },
            line = lines.next_line() => {
                let line = match line {
                    Ok(Some(line)) => line,
                    Ok(None) => break,
                    // The rest of the input did not run: the command fails.
                    Err(e) => {
                        ended = Err(Failed::Error(MoltZapError::local(
                            ErrorKind::Invalid,
                            format!("cannot read input: {e}"),
                        )));
                        break;
                    }
                };
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                if matches!(line, "quit" | "exit") {
                    break;
                }
                let printed = match command_line(client, line).await {
                    Ok(Some(raw)) => print_json(&raw),
                    Ok(None) => Ok(()),
                    Err(e) => {
                        errln!("error: {}", OneLine(&e.error.to_string()));
                        Ok(())
                    }
                };
                if let Err(closed) = printed {
                    ended = Err(Failed::from(closed));
                    break;
                }
            }
        }
    }
    ended
}

const HELP: &str =
    "send <agent> <text> | sendc <conversation> <text> | list [conversation] | call <method> [json] | quit";

async fn command_line(client: &MoltZapClient, line: &str) -> Result<Option<String>, MoltZapError> {
    let (verb, rest) = line.split_once(' ').unwrap_or((line, ""));
    let rest = rest.trim();
    let two = |rest: &str| rest.split_once(' ').map(|(a, b)| (a.to_string(), b.trim().to_string()));
    let answer = match verb {
        "send" | "sendc" => {
            let Some((target, text)) = two(rest) else {
                errln!("usage: {verb} <target> <text>");
                return Ok(None);
            };
            let msg = if verb == "send" {
                SendMessage::text_to_agent(&target, text)
            } else {
                SendMessage::text_to_conversation(target, text)
            };
            client.request(move |s, now| s.messages_send(now, &msg)).await?
        }
        "list" => {
            let conversation = (!rest.is_empty()).then(|| rest.to_string());
            list(client, conversation, 20).await?
        }
        "call" => {
            let (method, params) = rest.split_once(' ').map_or((rest, None), |(m, p)| (m, Some(p.trim())));
            client.call(method, params).await?
        }
        _ => {
            errln!("{HELP}");
            return Ok(None);
        }
    };
    Ok(Some(answer))
}

//! `agentwire switch watch|post|ops|op`: a Switch Rooms agent over the WebSocket or the
//! released generation's SSE stream. Results and events are printed as one JSON object per line
//! on stdout; errors go to stderr with a failing exit code.

use crate::command::{block_on, fail, Threads};
use crate::out::{errln, outln, OneLine};
use agentwire_core::Entropy;
use agentwire_native::switch::{self, SwitchClient, SwitchOptions};
use agentwire_native::OsEntropy;
use agentwire_switch::open::{Filter, OpenParams, Scope, StartFrom};
use agentwire_switch::ops::{ConnectToRoom, PostMessage};
use agentwire_switch::{ConnectionConfig, Event, SwitchError, Transport};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};
use std::process::ExitCode;
use std::time::Duration;

/// The playground's Switch peer.
pub const DEFAULT_PORT: u16 = 7751;

#[derive(Subcommand)]
pub enum Command {
    /// Print events as they arrive, one JSON object per line, until `--count` domain events,
    /// `--for-ms` elapsed, the connection stops, or Ctrl-C or SIGTERM
    Watch {
        #[command(flatten)]
        conn: Conn,
        /// A room to claim at open (repeatable)
        #[arg(long = "room")]
        rooms: Vec<String>,
        /// `single`: one room at a time; `all`: every room the agent belongs to
        #[arg(long, value_enum, default_value = "single")]
        scope: ScopeArg,
        /// `all`: everything in the covered rooms; `addressed`: only what is notifiable
        #[arg(long, value_enum, default_value = "all")]
        filter: FilterArg,
        /// Resume after this sequence (default: the head)
        #[arg(long)]
        start_from: Option<u64>,
        /// Stop after this many domain events (message, command, room_join, task_*)
        #[arg(long)]
        count: Option<u64>,
        /// Stop after this many milliseconds
        #[arg(long)]
        for_ms: Option<u64>,
    },
    /// Post a message to a room (connect, connect_to_room, post_message); prints the result
    Post {
        #[command(flatten)]
        conn: Conn,
        /// The room to post in (its id): claimed first with connect_to_room
        #[arg(long)]
        room: String,
        /// Reply in this thread
        #[arg(long)]
        thread: Option<String>,
        text: String,
    },
    /// The operations the server offers: names one per line, or the catalog with `--json`
    Ops {
        #[command(flatten)]
        conn: Conn,
        /// Print the whole catalog (each operation's description and schema) as JSON
        #[arg(long)]
        json: bool,
    },
    /// Run any operation with JSON arguments; prints the result. With `--room`, on a connection
    /// that has claimed the room (connect_to_room first); without, for `--connection-id` if given
    Op {
        #[command(flatten)]
        conn: Conn,
        name: String,
        /// The arguments, a JSON object (default `{}`)
        args: Option<String>,
        /// Claim this room (its id) with connect_to_room first, and run the operation there
        #[arg(long)]
        room: Option<String>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum TransportArg {
    /// The WebSocket (`websocket`, as npm and the WIT name it, is taken too)
    #[value(alias = "websocket")]
    Ws,
    Sse,
    Auto,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ScopeArg {
    Single,
    All,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum FilterArg {
    All,
    Addressed,
}

#[derive(Args)]
pub struct Conn {
    /// The server's origin (`http://host:port`, `ws://host:port`, or `https://`/`wss://` for TLS;
    /// optionally with a path prefix)
    #[arg(long, default_value_t = format!("http://127.0.0.1:{DEFAULT_PORT}"))]
    url: String,
    /// The agent's API key. In SWITCH_AGENT_KEY it stays out of the process list, which any
    /// local user can read
    #[arg(long, env = "SWITCH_AGENT_KEY", hide_env_values = true)]
    key: String,
    /// The agent id
    #[arg(long, env = "SWITCH_AGENT_ID")]
    agent: String,
    /// `auto`: the WebSocket, then SSE when the server has no WebSocket route (switch-core 0.19)
    #[arg(long, value_enum, default_value = "auto")]
    transport: TransportArg,
    /// The connection id, a UUID (default: a fresh one)
    #[arg(long)]
    connection_id: Option<String>,
    /// Bound of the connect and of each operation, in milliseconds (at least 1)
    #[arg(long, default_value_t = agentwire_switch::ops::DEFAULT_OP_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
}

impl Conn {
    /// `--timeout-ms`: the connect's bound and each operation's.
    fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

pub fn run(command: Command) -> ExitCode {
    block_on(Threads::One, async move {
        match main(command).await {
            Ok(code) => code,
            Err(Failed::Error(e)) => fail(e),
            Err(Failed::Closed(closed)) => closed.into(),
        }
    })
}

type Failed = crate::out::Failed<SwitchError>;

impl From<SwitchError> for Failed {
    fn from(e: SwitchError) -> Failed {
        Failed::Error(e)
    }
}

async fn main(command: Command) -> Result<ExitCode, Failed> {
    match command {
        Command::Watch {
            conn,
            rooms,
            scope,
            filter,
            start_from,
            count,
            for_ms,
        } => {
            let mut cfg = config(&conn, rooms);
            cfg.open.scope = match scope {
                ScopeArg::Single => Scope::Single,
                ScopeArg::All => Scope::All,
            };
            cfg.open.filter = match filter {
                FilterArg::All => Filter::All,
                FilterArg::Addressed => Filter::Addressed,
            };
            cfg.open.start_from = start_from.map_or(StartFrom::Head, StartFrom::After);
            let client = connect(&conn, cfg).await?;
            return Ok(watch(client, count, for_ms).await);
        }
        Command::Post {
            conn,
            room,
            thread,
            text,
        } => {
            let client = connect(&conn, config(&conn, vec![room.clone()])).await?;
            let answer = async {
                claim(&client, &room).await?;
                let args = PostMessage {
                    body: text,
                    thread_id: thread,
                };
                let args = serde_json::to_string(&args).unwrap_or_default();
                client.op("post_message", &args).await
            }
            .await;
            client.close().await;
            outln!("{}", as_json(answer?.get()))?;
        }
        Command::Ops { conn, json } => {
            let catalog = switch::list_ops(&conn.url, &conn.key, &conn.agent, conn.timeout()).await?;
            if json {
                let ops: serde_json::Map<String, Value> = catalog
                    .operations
                    .iter()
                    .map(|(name, spec)| {
                        let schema = as_json(spec.input_schema.get());
                        (
                            name.clone(),
                            json!({"description": spec.description, "input_schema": schema}),
                        )
                    })
                    .collect();
                outln!("{}", json!({ "operations": ops }))?;
            } else {
                for name in catalog.operations.keys() {
                    outln!("{}", OneLine(name))?;
                }
            }
        }
        Command::Op { conn, name, args, room } => {
            let args = args.unwrap_or_else(|| "{}".to_owned());
            let answer = match room {
                Some(room) => {
                    let client = connect(&conn, config(&conn, vec![room.clone()])).await?;
                    let answer = async {
                        claim(&client, &room).await?;
                        client.op(&name, &args).await
                    }
                    .await;
                    client.close().await;
                    answer?
                }
                None => {
                    let cid = conn.connection_id.as_deref();
                    switch::op(&conn.url, &conn.key, &conn.agent, cid, &name, &args, conn.timeout()).await?
                }
            };
            outln!("{}", as_json(answer.get()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The connection's configuration from the common flags, claiming `rooms` at open.
fn config(conn: &Conn, rooms: Vec<String>) -> ConnectionConfig {
    let cid = conn.connection_id.clone().unwrap_or_else(|| OsEntropy.uuid_v4());
    let mut open = OpenParams::new(conn.agent.clone(), cid);
    open.rooms = rooms;
    open.client = Some("agentwire".to_owned());
    open.client_version = Some(env!("CARGO_PKG_VERSION").to_owned());
    let mut cfg = ConnectionConfig::new(open);
    cfg.transport = match conn.transport {
        TransportArg::Ws => Transport::WebSocket,
        TransportArg::Sse => Transport::Sse,
        TransportArg::Auto => Transport::Auto,
    };
    // A failed first open is tried again with the backoff until `--timeout-ms` (the connect's
    // bound below), where a library's connect fails at once.
    cfg.connect_attempts = None;
    cfg
}

async fn connect(conn: &Conn, cfg: ConnectionConfig) -> Result<SwitchClient, SwitchError> {
    let opts = SwitchOptions {
        op_timeout: conn.timeout(),
        connect_timeout: Some(conn.timeout()),
        ..SwitchOptions::default()
    };
    // A server that is down is retried until the bound, silently: say so first.
    errln!(
        "connecting to {} (failed opens are retried for up to {} ms)",
        conn.url,
        conn.timeout_ms
    );
    let client = SwitchClient::connect_with(&conn.url, &conn.key, cfg, opts).await?;
    let wire = client.status().wire.as_str();
    // The agent the server attached (its `connection_state`), not the flag's.
    let agent = &client.attached().agent_id;
    errln!(
        "connected to {} over {wire} (agent {}, connection {})",
        conn.url,
        OneLine(agent),
        client.connection_id()
    );
    if agent != client.agent_id() {
        errln!(
            "warning: the server attached agent {}, not --agent {}",
            OneLine(agent),
            client.agent_id()
        );
    }
    Ok(client)
}

/// `connect_to_room`, surfacing the warning when it took the room off another connection.
async fn claim(client: &SwitchClient, room: &str) -> Result<(), SwitchError> {
    let context = client.call(&ConnectToRoom::new(room)).await?;
    if let Some(w) = context.warning.filter(|w| !w.is_empty()) {
        errln!("warning: {}", OneLine(&w));
    }
    Ok(())
}

/// Raw JSON printed compactly (text that is not JSON as a string).
fn as_json(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| json!(raw))
}

/// Prints events until the count, the time limit, the end of the connection, a closed stdout,
/// Ctrl-C or SIGTERM. A connection that stopped with an error fails the command.
async fn watch(mut client: SwitchClient, count: Option<u64>, for_ms: Option<u64>) -> ExitCode {
    let deadline = crate::watch::deadline(for_ms);
    let mut stop = crate::signal::Stop::new();
    let mut seen = 0;
    let mut code = ExitCode::SUCCESS;
    while count.is_none_or(|c| seen < c) {
        let Some(event) = crate::watch::next_or_stop(deadline, &mut stop, client.next_event()).await else {
            break;
        };
        if let Err(closed) = outln!("{}", event.to_json()) {
            code = closed.into();
            break;
        }
        match &event {
            Event::Event { .. } => seen += 1,
            Event::Stopped { error } => {
                if let Some(e) = error {
                    errln!("error: {}", OneLine(&e.to_string()));
                    code = ExitCode::FAILURE;
                }
                break;
            }
            _ => {}
        }
    }
    client.close().await;
    code
}

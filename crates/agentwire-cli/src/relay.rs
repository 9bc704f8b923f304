//! `agentwire relay token`: mints a relay token (`docs/relay-token.md`) for a browser, as an app
//! backend would. The secret comes from the environment (`AGENTWIRE_RELAY_SECRET`, else
//! `RELAY_TOKEN_SECRET`, the relay's own name for it; its UTF-8 bytes), never from a flag, so it
//! stays out of shell history and process listings.

use crate::out::errln;
use agentwire_relay::config::{DEFAULT_MAX_TOKEN_LIFETIME_S, TOKEN_SECRET};
use agentwire_relay::token::{mint, Claims};
use clap::Subcommand;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

/// The variable that holds the relay secret. When it is not set, the relay's own setting
/// (`agentwire_relay::config::TOKEN_SECRET`) is read.
pub const SECRET_ENV: &str = "AGENTWIRE_RELAY_SECRET";

#[derive(Subcommand)]
pub enum Command {
    /// Print a relay token for an agent (secret from $AGENTWIRE_RELAY_SECRET, else
    /// $RELAY_TOKEN_SECRET; at least 32 bytes)
    Token {
        /// The agent the browser acts as
        #[arg(long = "agent", value_name = "ID")]
        agent: String,
        /// Seconds from now until the token expires
        #[arg(long = "exp-in", value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
        exp_in: u64,
        /// The one browser origin allowed (`scheme://host[:port]`); default: any the relay allows
        #[arg(long)]
        origin: Option<String>,
        /// A room the browser may use (repeatable); default: all of the agent's
        #[arg(long = "room", value_name = "ROOM")]
        rooms: Vec<String>,
    },
}

pub fn run(command: Command) -> ExitCode {
    match command {
        Command::Token {
            agent,
            exp_in,
            origin,
            rooms,
        } => match token(agent, exp_in, origin, rooms) {
            Ok(token) => crate::out::exit(crate::out::outln!("{token}")),
            Err(e) => crate::command::fail(e),
        },
    }
}

fn token(agent: String, exp_in: u64, origin: Option<String>, rooms: Vec<String>) -> Result<String, String> {
    let name = match std::env::var_os(SECRET_ENV) {
        None => TOKEN_SECRET,
        Some(_) => SECRET_ENV,
    };
    let secret = match std::env::var(name) {
        Ok(s) if !s.is_empty() => s,
        Ok(_) | Err(std::env::VarError::NotPresent) => {
            return Err(format!("set {SECRET_ENV} (or {TOKEN_SECRET}) to the relay secret"))
        }
        Err(std::env::VarError::NotUnicode(_)) => return Err(format!("{name} is not valid UTF-8")),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| format!("the clock is before 1970: {e}"))?
        .as_secs();
    if exp_in > DEFAULT_MAX_TOKEN_LIFETIME_S {
        errln!(
            "warning: --exp-in {exp_in} is over {DEFAULT_MAX_TOKEN_LIFETIME_S} s: a relay with the default \
             MAX_TOKEN_LIFETIME_S refuses this token"
        );
    }
    let exp = now
        .checked_add(exp_in)
        .ok_or_else(|| format!("--exp-in {exp_in} is too far away"))?;
    let claims = Claims {
        agent_id: agent,
        exp,
        origin,
        rooms: (!rooms.is_empty()).then_some(rooms),
    };
    mint(secret.as_bytes(), &claims).map_err(|e| e.to_string())
}

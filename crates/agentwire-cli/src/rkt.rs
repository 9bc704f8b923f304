//! `agentwire rkt serve|connect|discover|ping|resolve`.

use crate::command::{block_on, fail, Threads};
use crate::out::{errln, outln, OneLine};
use agentwire_core::ErrorKind;
use agentwire_native::rkt::{self as native, RktClient};
use agentwire_rkt::reference::{self, ReferenceConfig};
use agentwire_rkt::{ClientConfig, RktError};
use clap::{Args, Subcommand};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Subcommand)]
pub enum Command {
    /// Run the reference agent (echo, weather.current, weather.forecast; memory, PAY, AUTH)
    Serve(ServeArgs),
    /// Interactive session: JSON requests and commands, one per line (`help` lists them)
    Connect { url: String },
    /// Print the agent's capability manifest
    Discover { url: String },
    /// Measure PING/PONG round trips, until `--count`, a closed connection or Ctrl-C (or
    /// SIGTERM), then print their summary
    Ping {
        url: String,
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
        count: u32,
        /// Pause between pings
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
    },
    /// Print the WebSocket URL of an rkt:// address
    Resolve { address: String },
}

#[derive(Args)]
pub struct ServeArgs {
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// 0 picks a free port (the one bound is printed)
    #[arg(long, default_value_t = agentwire_rkt::resolve::DEFAULT_PORT)]
    port: u16,
    /// Capabilities to advertise; `weather` and `forecast` enable their intents
    #[arg(long, value_delimiter = ',', default_value = "weather,forecast")]
    caps: Vec<String>,
    /// Require AUTH with one of these API keys (repeatable). Keys in RKT_API_KEYS
    /// (comma-separated, spaces around each ignored) are added: that keeps them out of the
    /// process list
    #[arg(long = "api-key", value_name = "KEY")]
    api_keys: Vec<String>,
    /// The only DIDs DID AUTH accepts (repeatable; without any, DID AUTH works only when no API key is set)
    #[arg(long = "allow-did", value_name = "DID")]
    allowed_dids: Vec<String>,
    /// Price of an intent in RKTT (repeatable)
    #[arg(long = "price", value_name = "INTENT=AMOUNT", value_parser = parse_price)]
    prices: Vec<(String, f64)>,
    /// Messages per second allowed per connection, above 0 [default: 1000]
    #[arg(long, value_parser = parse_rate)]
    rate: Option<f64>,
    /// Messages allowed in a burst per connection, at least 1 [default: 2000]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    burst: Option<u32>,
    /// Let pages on this origin (`http(s)://host[:port]`, as browsers send it) connect too
    /// (repeatable). Without it, only pages on 127.0.0.1, localhost and ::1 (any port) may: a
    /// WebSocket upgrade with any other `Origin` gets HTTP 403, so that a website you visit
    /// cannot use this agent. Clients that send no `Origin` (the CLI, native programs) are not
    /// affected. On a loopback --host, a `Host` other than 127.0.0.1, localhost or ::1 is
    /// refused as well (DNS rebinding)
    #[arg(long = "allow-origin", value_name = "ORIGIN", value_parser = parse_origin)]
    allowed_origins: Vec<String>,
}

/// `--allow-origin`: an origin as browsers send it ([`agentwire_core::http::local::is_origin`]).
fn parse_origin(s: &str) -> Result<String, String> {
    if agentwire_core::http::local::is_origin(s) {
        Ok(s.to_owned())
    } else {
        Err("expected http(s)://host[:port], with no path (not even /)".into())
    }
}

fn parse_price(s: &str) -> Result<(String, f64), String> {
    let (intent, amount) = s.split_once('=').ok_or("expected INTENT=AMOUNT")?;
    let amount: f64 = amount
        .trim()
        .parse()
        .map_err(|_| format!("`{amount}` is not a number"))?;
    if intent.trim().is_empty() || !(amount.is_finite() && amount >= 0.0) {
        return Err("expected an intent and a non-negative amount".into());
    }
    Ok((intent.trim().to_string(), amount))
}

/// `--rate`: a number the reference agent accepts ([`reference::check_rate`]).
fn parse_rate(s: &str) -> Result<f64, String> {
    let rate: f64 = s.trim().parse().map_err(|_| format!("`{s}` is not a number"))?;
    reference::check_rate(rate).map_err(|e| e.error.message)
}

pub fn run(command: Command) -> ExitCode {
    let threads = match &command {
        Command::Serve(_) => Threads::Many,
        _ => Threads::One,
    };
    block_on(threads, async move {
        match command {
            Command::Serve(args) => serve(args).await,
            Command::Connect { url } => match connect(&url).await {
                Ok(client) => crate::repl::run(client).await,
                Err(e) => fail(e),
            },
            Command::Discover { url } => discover(&url).await,
            Command::Ping {
                url,
                count,
                interval_ms,
            } => ping(&url, count, interval_ms).await,
            Command::Resolve { address } => match agentwire_rkt::resolve(&address) {
                Ok(url) => crate::out::exit(outln!("{url}")),
                Err(e) => fail(e),
            },
        }
    })
}

async fn connect(url: &str) -> Result<RktClient, RktError> {
    let cfg = ClientConfig {
        user_agent: format!("agentwire-cli/{}", env!("CARGO_PKG_VERSION")),
        ..ClientConfig::default()
    };
    RktClient::connect(url, cfg).await
}

async fn serve(args: ServeArgs) -> ExitCode {
    let defaults = ReferenceConfig::default();
    let host = url_host(&args.host);
    let cfg = ReferenceConfig {
        agent: format!("rkt://{host}"),
        capabilities: args
            .caps
            .into_iter()
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect(),
        api_keys: api_keys(args.api_keys),
        allowed_dids: args.allowed_dids,
        prices: args.prices.into_iter().collect(),
        rate_per_s: args.rate.unwrap_or(defaults.rate_per_s),
        burst: args.burst.unwrap_or(defaults.burst),
        allowed_origins: args.allowed_origins,
        ..defaults
    };
    let listener = match tokio::net::TcpListener::bind((args.host.as_str(), args.port)).await {
        Ok(l) => l,
        Err(e) => return fail(format!("cannot listen on {host}:{}: {e}", args.port)),
    };
    let port = match listener.local_addr() {
        Ok(addr) => addr.port(),
        Err(e) => return fail(e),
    };
    if let Err(closed) = outln!("listening on ws://{host}:{port}{}", native::server::PATH) {
        return closed.into();
    }
    match native::serve_until(listener, cfg, shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}

/// `--host` as it goes into a URL or an `rkt://` address: an IPv6 address in brackets.
fn url_host(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    crate::signal::Stop::new().recv().await;
}

async fn discover(url: &str) -> ExitCode {
    let client = match connect(url).await {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let result = client.discover().await;
    client.close().await;
    match result {
        Ok(manifest) => crate::out::exit(outln!(
            "{}",
            serde_json::to_string_pretty(&manifest).unwrap_or_default()
        )),
        Err(e) => fail(e),
    }
}

/// The nearest-rank percentile `p` (0..=100) of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

async fn ping(url: &str, count: u32, interval_ms: u64) -> ExitCode {
    let client = match connect(url).await {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    /// Round-trip times reserved up front: `--count` may be up to `u32::MAX` (32 GiB of them),
    /// so past this the vector grows with the pongs actually received.
    const RESERVED_RTTS: u32 = 4096;
    let mut rtts = Vec::with_capacity(count.min(RESERVED_RTTS) as usize);
    // Ctrl-C or SIGTERM ends the pings as --count does (ping(1)'s way): GOODBYE, the summary of
    // the pings answered or failed so far.
    let mut stop = crate::signal::Stop::new();
    let mut sent: u32 = 0;
    for n in 0..count {
        let next = async {
            if n > 0 && interval_ms > 0 {
                tokio::time::sleep(Duration::from_millis(interval_ms)).await;
            }
            client.ping().await
        };
        let answer = tokio::select! {
            answer = next => answer,
            _ = stop.recv() => break,
        };
        sent += 1;
        match answer {
            Ok(rtt) => {
                let ms = rtt.as_secs_f64() * 1000.0;
                if let Err(closed) = outln!("pong: {ms:.3} ms") {
                    client.close().await;
                    return closed.into();
                }
                rtts.push(ms);
            }
            Err(e) => {
                errln!("error: {}", OneLine(&e.to_string()));
                // Every ping after it would fail at once: the summary now.
                if e.kind() == ErrorKind::Closed {
                    break;
                }
            }
        }
    }
    client.close().await;
    if rtts.is_empty() {
        return fail("no PONG received");
    }
    rtts.sort_by(f64::total_cmp);
    let (min, max) = (rtts[0], rtts[rtts.len() - 1]);
    let (median, p99) = (percentile(&rtts, 50.0), percentile(&rtts, 99.0));
    crate::out::exit(outln!(
        "{} of {sent} pongs, rtt min/median/p99/max = {min:.3}/{median:.3}/{p99:.3}/{max:.3} ms",
        rtts.len()
    ))
}

/// The keys of `--api-key` and of `RKT_API_KEYS` (comma-separated, each trimmed). An empty key
/// is dropped: it would let an empty token in.
fn api_keys(mut keys: Vec<String>) -> Vec<String> {
    if let Ok(listed) = std::env::var("RKT_API_KEYS") {
        keys.extend(listed.split(',').map(|k| k.trim().to_owned()));
    }
    keys.retain(|k| !k.is_empty());
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0], 50.0), 2.0);
    }

    #[test]
    fn an_ipv6_host_is_bracketed_in_the_agent_address_and_the_url() {
        assert_eq!(url_host("::1"), "[::1]");
        assert_eq!(url_host("[::1]"), "[::1]");
        assert_eq!(url_host("127.0.0.1"), "127.0.0.1");
        assert_eq!(url_host("localhost"), "localhost");
        // What the agent advertises resolves back to it.
        let agent = format!("rkt://{}", url_host("::1"));
        assert_eq!(agentwire_rkt::resolve(&agent).unwrap(), "ws://[::1]:7749/rkt");
    }

    #[test]
    fn prices_parse() {
        assert_eq!(
            parse_price("weather.forecast=0.001"),
            Ok(("weather.forecast".into(), 0.001))
        );
        assert!(parse_price("weather.forecast").is_err());
        assert!(parse_price("=1").is_err());
        assert!(parse_price("x=-1").is_err());
    }
}

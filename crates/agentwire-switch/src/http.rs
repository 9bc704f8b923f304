//! The HTTP request type is the core's ([`agentwire_core::HttpRequest`]); Switch adds its header.

pub use agentwire_core::{HttpRequest, Method};

/// The header naming the connection an operation acts for.
pub const CONNECTION_ID_HEADER: &str = "X-Switch-Connection-Id";

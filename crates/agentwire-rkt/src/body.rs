//! The JSON bodies of the message types, and the header values with a closed set of values.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `Priority` header values. Requests queued before the session is ready are sent in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Priority {
    Low,
    #[default]
    Normal,
    High,
    Urgent,
}

impl Priority {
    pub fn parse(s: &str) -> Option<Self> {
        [Priority::Low, Priority::Normal, Priority::High, Priority::Urgent]
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "LOW",
            Priority::Normal => "NORMAL",
            Priority::High => "HIGH",
            Priority::Urgent => "URGENT",
        }
    }
}

/// HELLO: the version range the client speaks. A HELLO without a body means `1..=1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloBody {
    pub min_version: u32,
    pub max_version: u32,
}

/// HELLO_ACK: the version both speak and the idle timeout of the session, in seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloAckBody {
    pub agreed_version: u32,
    pub session_timeout: u64,
}

/// REQUEST.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestBody {
    pub intent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
}

/// MEMORY_SET. `ttl` in seconds; no `ttl` keeps the value until it is overwritten.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorySetBody {
    pub key: String,
    pub value: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// MEMORY_GET.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryGetBody {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// The namespace used when a MEMORY message names none.
pub const DEFAULT_NAMESPACE: &str = "default";

/// PAY.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PayBody {
    pub amount: f64,
    pub currency: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
}

/// AUTH: a bearer token (API key), or a DID asking for scopes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scheme", rename_all = "lowercase")]
pub enum AuthBody {
    Bearer {
        token: String,
        #[serde(default)]
        scopes: Vec<String>,
    },
    Did {
        did: String,
        #[serde(default)]
        scopes: Vec<String>,
    },
}

/// AUTH_OK.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthOkBody {
    pub session_token: String,
    #[serde(default)]
    pub scopes: Vec<String>,
    pub expires_in: u64,
}

/// ERROR, as the guide shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: i64,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// STREAM_END: how many STREAM_DATA came before it, so a lost tail is detected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamEndBody {
    pub count: u64,
}

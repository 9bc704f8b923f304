//! An HTTP request as an engine describes it (Switch operations and beats, MoltZap
//! registration): the driver (native, the browser's `fetch`, the relay) sends it to the server's
//! origin, adding `Authorization` when a key is needed, and hands the status and body of the
//! answer back to the engine.

/// The methods the agent protocol uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// One request. `path` is absolute and already percent-encoded; `headers` are the protocol's own
/// (`Content-Type`, `Accept`, `X-Switch-Connection-Id`, `Last-Event-ID`), never
/// `Authorization`, which only the key holder adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: Method,
    pub path: String,
    pub headers: Vec<(&'static str, String)>,
    /// A JSON body (`POST`).
    pub body: Option<String>,
}

impl HttpRequest {
    pub fn get(path: String) -> Self {
        HttpRequest {
            method: Method::Get,
            path,
            headers: vec![("Accept", "application/json".to_owned())],
            body: None,
        }
    }

    pub fn post_json(path: String, body: String) -> Self {
        HttpRequest {
            method: Method::Post,
            path,
            headers: vec![
                ("Content-Type", "application/json".to_owned()),
                ("Accept", "application/json".to_owned()),
            ],
            body: Some(body),
        }
    }

    #[must_use]
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The value of a header (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A frame the driver must put on the wire, in the order the engine produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// A WebSocket text message.
    Text(String),
    /// A WebSocket binary message.
    Binary(Vec<u8>),
    /// Close the connection with this code and reason (the engine sends nothing after it).
    Close { code: u16, reason: String },
}

impl Outgoing {
    /// The text of a text frame, if it is one.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Outgoing::Text(t) => Some(t),
            _ => None,
        }
    }
}

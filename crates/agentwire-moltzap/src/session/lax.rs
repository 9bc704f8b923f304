//! What a derived `Deserialize` did, on core's reader: texts parsed leniently ([`read()`]), and
//! what serde refused where it decoded (`Object::known`, `Object::decoded`, `Value::lossy`)
//! refused here too.

pub(crate) use agentwire_core::json::fields::named_array as named;
use agentwire_core::json::fields::FieldError;
use agentwire_core::json::read::{parse_lenient, ReadError, Value};
use std::fmt;

pub(crate) use agentwire_core::json::SERDE_DEPTH;

/// Why a text does not decode as a type: what is wrong, naming the field.
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

impl From<FieldError> for Refused {
    fn from(e: FieldError) -> Self {
        Refused(e.to_string())
    }
}

impl From<ReadError> for Refused {
    fn from(e: ReadError) -> Self {
        Refused(e.to_string())
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(crate) fn missing(field: &str) -> Refused {
    Refused(format!("`{field}` is missing or null"))
}

/// Parses `text` leniently, at any depth (serde only checked for syntax what it skipped, and
/// the decoders apply its depth limit where it decoded), and reads its top value with `f`.
pub(crate) fn read<T>(text: &str, f: impl FnOnce(Value<'_, '_>) -> T) -> Result<T, ReadError> {
    Ok(f(parse_lenient(text, usize::MAX)?.root()))
}

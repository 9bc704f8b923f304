//! What a derived `Deserialize` does with an object, on core's reader: the texts come through
//! [`agentwire_core::json::lax`], which reads what serde only skipped ([`read()`], [`Taint`]).

pub(crate) use agentwire_core::json::fields::named_array as named;
use agentwire_core::json::fields::{FieldError, Object};
pub(crate) use agentwire_core::json::lax::{read, Taint};
use agentwire_core::json::read::{ReadError, Value};
use std::fmt;

/// serde_json's recursion limit: the arrays and objects serde decodes (rather than skips) nest at
/// most this deep, counted from the top of the text.
pub(crate) const SERDE_DEPTH: usize = 127;

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

/// What serde says of a text it decoded with a lone surrogate escape or a number beyond `f64`.
pub(crate) fn unreadable(what: &str) -> Refused {
    Refused(format!("{what} has a lone surrogate escape or a number beyond f64"))
}

/// `v` as an object the way a derived `Deserialize` without `deny_unknown_fields` reads it: its
/// keys decoded, unknown ones ignored (their values skipped: any depth, anything patched), a
/// known key given twice refused.
pub(crate) fn object<'t, 'a>(v: Value<'t, 'a>, known: &[&str], taint: &Taint) -> Result<Object<'t, 'a>, Refused> {
    let o = Object::known(v, known)?;
    if taint.keys(v) {
        return Err(unreadable("a key"));
    }
    Ok(o)
}

/// Refuses the `fields` of `o` that serde decodes and that hold a patched place.
pub(crate) fn decoded(o: &Object<'_, '_>, fields: &[&str], taint: &Taint) -> Result<(), Refused> {
    match fields.iter().find(|f| o.value().get(f).is_some_and(|v| taint.value(v))) {
        Some(f) => Err(unreadable(&format!("`{f}`"))),
        None => Ok(()),
    }
}

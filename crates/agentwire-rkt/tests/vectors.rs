//! Checks the codec against every golden vector in `tests/vectors/rkt/` (see its README.md).

use agentwire_rkt::codec::DEFAULT_MAX_MESSAGE_SIZE;
use agentwire_rkt::{decode, DecodeError, DecodeErrorKind, Message};
use serde_json::Value;
use std::path::PathBuf;

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/rkt")
}

fn kind_name(k: &DecodeErrorKind) -> &'static str {
    k.name()
}

fn check_ok(m: &Message, expect: &Value) -> Result<(), String> {
    let ty = expect["type"].as_str().ok_or("expect.type is not a string")?;
    if m.kind.as_str() != ty {
        return Err(format!("type {} != {ty}", m.kind));
    }
    let headers = expect["headers"].as_object().ok_or("expect.headers is not an object")?;
    if m.headers.len() != headers.len() {
        return Err(format!(
            "{} headers decoded, {} expected: {:?}",
            m.headers.len(),
            headers.len(),
            m.headers
        ));
    }
    for (n, v) in headers {
        let got = m.headers.iter().find(|(name, _)| name == n).map(|(_, v)| v);
        if got != Some(v.as_str().ok_or("header value is not a string")?) {
            return Err(format!("header {n}: {got:?} != {v}"));
        }
    }
    let body: Option<Value> = match &m.body {
        Some(b) => Some(serde_json::from_str(b).map_err(|e| format!("body is not JSON ({e}): {b:?}"))?),
        None => None,
    };
    let want = &expect["body"];
    if body.as_ref().unwrap_or(&Value::Null) != want || (want.is_null() && m.body.is_some()) {
        return Err(format!("body {:?} != {want}", m.body));
    }
    if let Some(text) = expect.get("body_text") {
        if m.body.as_deref() != text.as_str() {
            return Err(format!("body text {:?} != {text}", m.body));
        }
    }
    Ok(())
}

fn check_err(e: &DecodeError, want: &Value) -> Result<(), String> {
    let kind = want["kind"].as_str().ok_or("error.kind is not a string")?;
    if kind_name(&e.kind) != kind {
        return Err(format!("kind {:?} != {kind}", e.kind));
    }
    let field = want["field"].as_str().ok_or("error.field is not a string")?;
    if e.field() != field {
        return Err(format!("field {} != {field}", e.field()));
    }
    let num = |k: &str| {
        want.get(k).map(|v| {
            v.as_u64()
                .map(|n| n as usize)
                .ok_or(format!("error.{k} is not a number"))
        })
    };
    if let Some(line) = num("line").transpose()? {
        if !matches!(e.kind, DecodeErrorKind::BadHeaderLine { line: l, .. } if l == line) {
            return Err(format!("{:?} is not at line {line}", e.kind));
        }
    }
    if let Some(v) = want.get("value") {
        let got = match &e.kind {
            DecodeErrorKind::UnsupportedVersion(s)
            | DecodeErrorKind::UnknownType(s)
            | DecodeErrorKind::DuplicateHeader(s) => s.as_str(),
            other => return Err(format!("error.value given for {other:?}")),
        };
        if Some(got) != v.as_str() {
            return Err(format!("value {got:?} != {v}"));
        }
    }
    if let DecodeErrorKind::ContentLength { declared, actual } = e.kind {
        for (k, got) in [("declared", declared), ("actual", actual)] {
            if let Some(n) = num(k).transpose()? {
                if n != got {
                    return Err(format!("{k} {got} != {n}"));
                }
            }
        }
    }
    if let DecodeErrorKind::TooLarge { size, limit } = e.kind {
        for (k, got) in [("size", size), ("limit", limit)] {
            if let Some(n) = num(k).transpose()? {
                if n != got {
                    return Err(format!("{k} {got} != {n}"));
                }
            }
        }
    }
    if let Some(id) = want.get("message_id") {
        if e.message_id.as_deref() != id.as_str() {
            return Err(format!("message_id {:?} != {id}", e.message_id));
        }
    }
    Ok(())
}

fn check(v: &Value) -> Result<(), String> {
    let wire = v["wire"].as_str().ok_or("wire is not a string")?;
    let max = v
        .get("max_size")
        .map_or(Some(DEFAULT_MAX_MESSAGE_SIZE as u64), Value::as_u64)
        .ok_or("max_size")? as usize;
    let got = decode(wire, max);
    match (v.get("expect"), v.get("error"), got) {
        (Some(expect), None, Ok(m)) => check_ok(&m, expect),
        (None, Some(want), Err(e)) => check_err(&e, want),
        (Some(_), None, Err(e)) => Err(format!("expected to decode, got {e} ({e:?})")),
        (None, Some(_), Ok(m)) => Err(format!("expected an error, decoded {m:?}")),
        _ => Err("needs exactly one of `expect` and `error`".into()),
    }
}

#[test]
fn golden_vectors() {
    let dir = vectors_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no vectors in {}", dir.display());
    let mut failures = Vec::new();
    let (mut valid, mut invalid) = (0, 0);
    for path in &files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let v: Value = match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{file}: unreadable: {e}"));
                continue;
            }
        };
        if v["name"].as_str() != file.strip_suffix(".json") {
            failures.push(format!("{file}: name {} does not match the file name", v["name"]));
        }
        if v.get("expect").is_some() {
            valid += 1
        } else {
            invalid += 1
        }
        if let Err(e) = check(&v) {
            failures.push(format!("{file}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    assert!(valid > 0 && invalid > 0, "{valid} valid and {invalid} invalid vectors");
    // Every error kind has a vector.
    let mut kinds: Vec<String> = files
        .iter()
        .filter_map(|p| serde_json::from_str::<Value>(&std::fs::read_to_string(p).ok()?).ok())
        .filter_map(|v| v.pointer("/error/kind").and_then(Value::as_str).map(str::to_string))
        .collect();
    kinds.sort();
    kinds.dedup();
    assert_eq!(kinds.len(), 11, "error kinds covered: {kinds:?}");
}

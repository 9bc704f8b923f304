#!/usr/bin/env python3
"""Writes the RKT golden vectors (*.json beside this script). See README.md.

The wire texts are built the way the guide's clients build them (TypeScript send(), Python
make_msg, Go makeMsg), with fixed ids and timestamps. Re-running overwrites the files it
writes and leaves any other *.json alone.
"""
import json, os
OUT = os.path.dirname(os.path.abspath(__file__))
MID = "01960000-0000-7000-ab12-000000000001"
SID = "e3ad1f12-4e3a-4b1e-9c2d-000000000042"
vectors = []

def valid(name, desc, wire, typ, headers, body, body_text=None, max_size=None):
    v = {"name": name, "description": desc, "wire": wire, "expect": {"type": typ, "headers": dict(headers), "body": body}}
    assert len(dict(headers)) == len(headers)
    if body_text is not None: v["expect"]["body_text"] = body_text
    if max_size is not None: v["max_size"] = max_size
    vectors.append(v)

def invalid(name, desc, wire, kind, field, max_size=None, **extra):
    v = {"name": name, "description": desc, "wire": wire, "error": {"kind": kind, "field": field, **extra}}
    if max_size is not None: v["max_size"] = max_size
    vectors.append(v)

GUIDE_HELLO = f"""RKT/1.0 HELLO
Version: 1
Message-ID: {MID}
Session-ID: {SID}
Timestamp: 2026-06-28T12:00:00Z
TTL: 30
From: did:rkt:my-agent
User-Agent: MyAgent/1.0
Capabilities: language,vision,code

{{"min_version":1,"max_version":1}}"""
HELLO_H = [("Version","1"),("Message-ID",MID),("Session-ID",SID),("Timestamp","2026-06-28T12:00:00Z"),("TTL","30"),("From","did:rkt:my-agent"),("User-Agent","MyAgent/1.0"),("Capabilities","language,vision,code")]
valid("guide-hello", "The guide's HELLO example (Step 2), verbatim.", GUIDE_HELLO, "HELLO", HELLO_H, {"min_version":1,"max_version":1})

ACK = f"""RKT/1.0 HELLO_ACK
Version: 1
Message-ID: 01960000-0000-7000-ab12-000000000002
Reply-To: {MID}
Session-ID: {SID}
Timestamp: 2026-06-28T12:00:00Z
From: rkt://weather.ai
User-Agent: WeatherAgent/1.0
Capabilities: weather,forecast,alerts

{{"agreed_version":1,"session_timeout":300}}"""
valid("guide-hello-ack", "The guide's HELLO_ACK example (Step 3): a reply, with Reply-To and no TTL.", ACK, "HELLO_ACK",
      [("Version","1"),("Message-ID","01960000-0000-7000-ab12-000000000002"),("Reply-To",MID),("Session-ID",SID),("Timestamp","2026-06-28T12:00:00Z"),("From","rkt://weather.ai"),("User-Agent","WeatherAgent/1.0"),("Capabilities","weather,forecast,alerts")],
      {"agreed_version":1,"session_timeout":300})

WSCAT = """RKT/1.0 HELLO
Version: 1
Message-ID: aaaaaaaa-0000-0000-0000-000000000001
Session-ID: bbbbbbbb-0000-0000-0000-000000000001
Timestamp: 2026-06-28T00:00:00Z
TTL: 30
User-Agent: wscat/test

{"min_version":1,"max_version":1}"""
WSCAT_H = [("Version","1"),("Message-ID","aaaaaaaa-0000-0000-0000-000000000001"),("Session-ID","bbbbbbbb-0000-0000-0000-000000000001"),("Timestamp","2026-06-28T00:00:00Z"),("TTL","30"),("User-Agent","wscat/test")]
valid("guide-wscat-hello", "The guide's 'paste into wscat' HELLO: a body but no Content-Type.", WSCAT, "HELLO", WSCAT_H, {"min_version":1,"max_version":1})
valid("guide-wscat-hello-trailing-newline", "The wscat HELLO with the newline a paste leaves at the end.", WSCAT + "\n", "HELLO", WSCAT_H, {"min_version":1,"max_version":1})

# TypeScript raw client send(): [start, 5 required, extra, ct-or-"", "", body-or-""].join("\n")
def ts_send(typ, mid, extra="", body=None):
    body_str = json.dumps(body, separators=(",", ":"), ensure_ascii=False) if body is not None else None
    return "\n".join([f"RKT/1.0 {typ}", "Version: 1", f"Message-ID: {mid}", f"Session-ID: {SID}", "Timestamp: 2026-06-28T12:00:00.123Z", "TTL: 30",
                      extra, "Content-Type: application/json" if body_str else "", "", body_str or ""])
def req(mid, ts): return [("Version","1"),("Message-ID",mid),("Session-ID",SID),("Timestamp",ts),("TTL","30")]
TS_TS = "2026-06-28T12:00:00.123Z"
b = {"min_version":1,"max_version":1}
valid("ts-hello", "TypeScript raw client: send('HELLO', 'User-Agent: ...\\nCapabilities: ...', body).", ts_send("HELLO","11111111-1111-4111-8111-111111111111","User-Agent: MyAgent/1.0\nCapabilities: language",b),
      "HELLO", req("11111111-1111-4111-8111-111111111111",TS_TS)+[("User-Agent","MyAgent/1.0"),("Capabilities","language"),("Content-Type","application/json")], b)
b = {"intent":"weather.current","params":{"city":"Seoul"}}
valid("ts-request", "TypeScript raw client: send('REQUEST', 'To: rkt://weather.ai', body).", ts_send("REQUEST","22222222-2222-4222-8222-222222222222","To: rkt://weather.ai",b),
      "REQUEST", req("22222222-2222-4222-8222-222222222222",TS_TS)+[("To","rkt://weather.ai"),("Content-Type","application/json")], b)
b = {"key":"preferred_city","value":"Seoul","namespace":"user.prefs","ttl":3600}
w = ts_send("MEMORY_SET","33333333-3333-4333-8333-333333333333","",b)
assert "TTL: 30\n\nContent-Type: application/json\n\n{" in w
valid("ts-memory-set-empty-extra", "TypeScript raw client with extra='' and a body: a blank line between TTL and Content-Type, which is still a header.", w,
      "MEMORY_SET", req("33333333-3333-4333-8333-333333333333",TS_TS)+[("Content-Type","application/json")], b)
w = ts_send("GOODBYE","44444444-4444-4444-8444-444444444444")
assert w.endswith("TTL: 30\n\n\n\n")
valid("ts-goodbye-empty-extra", "TypeScript raw client send('GOODBYE'): extra='' and no body end the message with TTL: 30 and four newlines.", w,
      "GOODBYE", req("44444444-4444-4444-8444-444444444444",TS_TS), None)

# Python make_msg: json.dumps default separators, Content-Length, isoformat(), no trailing newline.
def py_make(typ, mid, ts, extra="", body=None):
    lines = [f"RKT/1.0 {typ}", "Version: 1", f"Message-ID: {mid}", f"Session-ID: {SID}", f"Timestamp: {ts}", "TTL: 30"]
    if extra: lines.append(extra)
    if body is not None:
        s = json.dumps(body)
        lines += ["Content-Type: application/json", f"Content-Length: {len(s.encode())}", "", s]
    else:
        lines.append("")
    return "\n".join(lines)
PY_TS = "2026-06-28T12:00:00.123456+00:00"
b = {"min_version":1,"max_version":1}
valid("py-hello", "Python make_msg HELLO: Content-Length, isoformat() timestamp with microseconds and +00:00, no trailing newline.",
      py_make("HELLO","66666666-6666-4666-8666-666666666666",PY_TS,"User-Agent: PythonAgent/1.0\nCapabilities: language,vision",b),
      "HELLO", req("66666666-6666-4666-8666-666666666666",PY_TS)+[("User-Agent","PythonAgent/1.0"),("Capabilities","language,vision"),("Content-Type","application/json"),("Content-Length","36")], b,
      body_text='{"min_version": 1, "max_version": 1}')
b = {"key":"city","value":"Seoul","namespace":"prefs","ttl":3600}
valid("py-memory-set", "Python make_msg MEMORY_SET with no extra headers.", py_make("MEMORY_SET","88888888-8888-4888-8888-888888888888",PY_TS,"",b),
      "MEMORY_SET", req("88888888-8888-4888-8888-888888888888",PY_TS)+[("Content-Type","application/json"),("Content-Length",str(len(json.dumps(b))))], b)
w = py_make("GOODBYE","99999999-9999-4999-8999-999999999999","2026-06-28T12:00:00+00:00")
assert w.endswith("TTL: 30\n")
valid("py-goodbye", "Python make_msg GOODBYE: no body, one trailing newline; isoformat() without a fraction when microseconds are 0.", w,
      "GOODBYE", req("99999999-9999-4999-8999-999999999999","2026-06-28T12:00:00+00:00"), None)

# Go makeMsg: RFC 3339, json.Marshal (sorted keys, compact), no Content-Length.
def go_make(typ, mid, extra="", body=None):
    lines = [f"RKT/1.0 {typ}", "Version: 1", f"Message-ID: {mid}", f"Session-ID: {SID}", "Timestamp: 2026-06-28T12:00:00Z", "TTL: 30"]
    if extra: lines.append(extra)
    if body is not None:
        lines += ["Content-Type: application/json", "", json.dumps(body, separators=(",", ":"), sort_keys=True)]
    else:
        lines.append("")
    return "\n".join(lines)
GO_TS = "2026-06-28T12:00:00Z"
b = {"min_version":1,"max_version":1}
valid("go-hello", "Go makeMsg HELLO: RFC 3339 timestamp, json.Marshal's sorted keys.", go_make("HELLO","aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa","User-Agent: GoAgent/1.0\nCapabilities: language",b),
      "HELLO", req("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",GO_TS)+[("User-Agent","GoAgent/1.0"),("Capabilities","language"),("Content-Type","application/json")], b,
      body_text='{"max_version":1,"min_version":1}')
valid("go-goodbye", "Go makeMsg GOODBYE: no body, one trailing newline.", go_make("GOODBYE","cccccccc-cccc-4ccc-8ccc-cccccccccccc"),
      "GOODBYE", req("cccccccc-cccc-4ccc-8ccc-cccccccccccc",GO_TS), None)

# Line endings, case, lengths.
valid("crlf-hello", "The guide's HELLO with CRLF line endings.", GUIDE_HELLO.replace("\n","\r\n"), "HELLO", HELLO_H, {"min_version":1,"max_version":1})
def base(typ, extra=(), reply=False):
    lines = [f"RKT/1.0 {typ}", "Version: 1", f"Message-ID: {MID}", f"Session-ID: {SID}", "Timestamp: 2026-06-28T12:00:00Z"]
    lines.append(f"Reply-To: {MID}" if reply else "TTL: 30")
    lines += list(extra)
    return "\n".join(lines) + "\n"
BASE_H = [("Version","1"),("Message-ID",MID),("Session-ID",SID),("Timestamp","2026-06-28T12:00:00Z"),("TTL","30")]
body = '{\r\n  "intent": "echo"\r\n}'
w = base("REQUEST", ["Content-Type: application/json", f"Content-Length: {len(body.encode())}"]).replace("\n","\r\n") + "\r\n" + body
valid("crlf-content-length-multiline-body", "CRLF message with a pretty-printed CRLF body: Content-Length counts the bytes as sent and the body is kept byte for byte.", w,
      "REQUEST", BASE_H+[("Content-Type","application/json"),("Content-Length",str(len(body.encode())))], {"intent":"echo"}, body_text=body)
w = f"RKT/1.0 STREAM_DATA\nversion: 1\nMESSAGE-ID: {MID}\nsession-id: {SID}\ntimeSTAMP: 2026-06-28T12:00:00Z\nreply-to: {MID}\nSEQ: 7\nconTent-tyPe: application/json\n\n[1,2]"
valid("header-names-any-case", "Header names match in any case and are kept as written; STREAM_DATA is a reply with Seq.", w, "STREAM_DATA",
      [("version","1"),("MESSAGE-ID",MID),("session-id",SID),("timeSTAMP","2026-06-28T12:00:00Z"),("reply-to",MID),("SEQ","7"),("conTent-tyPe","application/json")], [1,2])
body = '{"city":"서울"}'
w = base("REQUEST", ["Content-Type: application/json", f"Content-Length: {len(body.encode())}"]) + "\n" + body
valid("content-length-utf8-bytes", "Content-Length counts UTF-8 bytes, not characters.", w, "REQUEST",
      BASE_H+[("Content-Type","application/json"),("Content-Length",str(len(body.encode())))], {"city":"서울"}, body_text=body)
body = '{\n  "code":    602,\n  "name":    "CAPABILITY_MISSING",\n  "message": "Intent \'maps.navigate\' not found",\n  "details": { "available_intents": ["weather.current", "weather.forecast"] },\n  "request_id": "01960000-0000-7000-ab12-000000000003"\n}'
w = base("ERROR", ["Content-Type: application/json"]) + "\n" + body + "\n"
valid("error-pretty-body", "The guide's ERROR body, pretty-printed over several lines; the trailing newline is not part of the body.", w, "ERROR",
      BASE_H+[("Content-Type","application/json")], json.loads(body), body_text=body)
w = base("ERROR", ["Content-Type: application/json"]).replace("TTL: 30\n", "") + "\n" + '{"code":602,"name":"CAPABILITY_MISSING","message":"Intent \'maps.navigate\' not found","request_id":"01960000-0000-7000-ab12-000000000003"}'
valid("error-request-id-only-no-ttl", "The guide's ERROR: no TTL and no Reply-To, the request named by the body's request_id only. An ERROR never needs TTL.", w, "ERROR",
      [h for h in BASE_H if h[0] != "TTL"]+[("Content-Type","application/json")], json.loads(w.split("\n\n", 1)[1]))
w = base("ERROR", ["Content-Type: application/json"], reply=True) + "\n" + '{"code":429,"name":"RATE_LIMITED","message":"slow down"}'
valid("error-reply-to-no-ttl", "An ERROR answering a message by Reply-To, without TTL, as replies are written.", w, "ERROR",
      [("Version","1"),("Message-ID",MID),("Session-ID",SID),("Timestamp","2026-06-28T12:00:00Z"),("Reply-To",MID),("Content-Type","application/json")],
      {"code":429,"name":"RATE_LIMITED","message":"slow down"})
for minor in ["1", "10"]:
    valid(f"minor-version-1-{minor}", f"RKT/1.{minor}: any minor version of major 1 is read.", base("PING").replace("RKT/1.0", f"RKT/1.{minor}", 1), "PING", BASE_H, None)
valid("leading-bom-and-blank-lines", "A BOM and blank lines (LF and CRLF) before the start line are skipped.", "\ufeff\n\r\n" + base("PING"), "PING", BASE_H, None)
for ts in ["2026-06-28T21:00:00+09:00", "2026-06-28T06:30:00.5-05:30"]:
    valid("timestamp-offset-" + ("plus" if "+" in ts else "minus"), f"A Timestamp with a non-zero offset ({ts[-6:]}) is read.", base("PING").replace("2026-06-28T12:00:00Z", ts), "PING",
          [(n, ts if n == "Timestamp" else v) for n, v in BASE_H], None)
ID128 = "a" * 128
valid("id-128-bytes", "An id of 128 bytes, the longest taken.", base("PING").replace(MID, ID128), "PING", [(n, ID128 if n == "Message-ID" else v) for n, v in BASE_H], None)
valid("no-body-no-trailing-newline", "A no-body message may end right after the last header.", base("PING").rstrip("\n"), "PING", BASE_H, None)
valid("stream-and-priority-values", "Stream, Priority and Retry-After are checked case-insensitively.", base("REQUEST", ["Stream: TRUE", "Priority: high", "Retry-After: 5"]), "REQUEST",
      BASE_H+[("Stream","TRUE"),("Priority","high"),("Retry-After","5")], None)

# Errors, one or more per kind.
invalid("too-large", "Larger than the receiver's limit (max_size) is rejected before anything else.", GUIDE_HELLO, "too_large", "message", max_size=64, size=len(GUIDE_HELLO.encode()), limit=64)
invalid("empty", "Blank lines only.", "\r\n\n  \n", "empty", "message")
invalid("bad-start-line", "No RKT/x.y protocol token.", "HELLO\nVersion: 1\n", "bad_start_line", "start-line")
invalid("bad-start-line-http", "Not RKT at all.", "HTTP/1.1 200 OK\n", "bad_start_line", "start-line")
invalid("bad-start-line-version", "RKT/1 without a minor version: not digits.digits, so a bad start line (not 603, which is for a major other than 1).", GUIDE_HELLO.replace("RKT/1.0","RKT/1",1), "bad_start_line", "start-line", message_id=MID)
invalid("unsupported-version", "RKT/2.0.", GUIDE_HELLO.replace("RKT/1.0","RKT/2.0",1), "unsupported_version", "start-line", value="2.0", message_id=MID)
invalid("unknown-type", "A type the protocol does not define; the Message-ID is still recovered.", GUIDE_HELLO.replace("HELLO","TELEPORT",1), "unknown_type", "type", value="TELEPORT", message_id=MID)
invalid("bad-header-line", "A line that is not Name: value, line 7 (the start line is line 1).", base("REQUEST", ["this is not a header"]), "bad_header_line", "headers", line=7, message_id=MID)
invalid("bad-header-line-after-blank", "Line numbers count the TypeScript client's blank line (line 7) before Content-Type.",
        base("MEMORY_SET") + "\nContent-Type: application/json\nnot a header\n\n{}", "bad_header_line", "headers", line=9)
invalid("bad-header-line-control-char", "A control character in a header value.", base("REQUEST", ["To: a\u0001b"]), "bad_header_line", "headers", line=7)
invalid("duplicate-header", "The same header twice, in any case.", base("REQUEST", ["ttl: 31"]), "duplicate_header", "headers", value="ttl")
invalid("too-many-headers", "More than 64 headers (MAX_HEADERS) are refused before duplicates are looked for.", base("REQUEST", [f"X-{i}: {i}" for i in range(60)]), "too_many_headers", "headers")
req_lines = {"Version": "Version: 1", "Message-ID": f"Message-ID: {MID}", "Session-ID": f"Session-ID: {SID}", "Timestamp": "Timestamp: 2026-06-28T12:00:00Z", "TTL": "TTL: 30"}
for name in req_lines:
    lines = [l for n, l in req_lines.items() if n != name]
    invalid(f"missing-{name.lower()}", f"A REQUEST without {name}.", "RKT/1.0 REQUEST\n" + "\n".join(lines) + "\n", "missing_header", name,
            message_id=None if name == "Message-ID" else MID)
invalid("missing-reply-to", "A reply (RESPONSE) without Reply-To.", "RKT/1.0 RESPONSE\nVersion: 1\nMessage-ID: %s\nSession-ID: %s\nTimestamp: 2026-06-28T12:00:00Z\n" % (MID, SID), "missing_header", "Reply-To")
invalid("missing-seq", "STREAM_DATA without Seq.", base("STREAM_DATA", reply=True) + "\n[1]", "missing_header", "Seq")
invalid("bad-priority", "Priority outside LOW/NORMAL/HIGH/URGENT.", base("REQUEST", ["Priority: MEDIUM"]), "bad_header_value", "Priority")
invalid("bad-stream", "Stream other than true/false.", base("REQUEST", ["Stream: yes"]), "bad_header_value", "Stream")
invalid("bad-retry-after", "Retry-After that is not a number of seconds.", base("ERROR", ["Retry-After: soon"]), "bad_header_value", "Retry-After")
invalid("bad-timestamp", "Timestamp that is not ISO 8601 with Z or an offset.", base("REQUEST").replace("2026-06-28T12:00:00Z", "2026-06-28 noon"), "bad_header_value", "Timestamp")
invalid("signed-ttl", "Numbers are digits only: TTL: +30 is refused (Rust's and JavaScript's parsers would take it).", base("REQUEST").replace("TTL: 30", "TTL: +30"), "bad_header_value", "TTL", message_id=MID)
invalid("id-over-128-bytes", "A Message-ID of 129 bytes: ids are at most 128.", base("REQUEST").replace(MID, "a" * 129), "bad_header_value", "Message-ID", message_id=None)
invalid("bad-ttl", "TTL that is not a number of seconds.", base("REQUEST").replace("TTL: 30", "TTL: thirty"), "bad_header_value", "TTL")
invalid("content-length-not-a-number", "Content-Length that is not a byte count.", base("REQUEST", ["Content-Length: abc"]) + "\n{}", "bad_header_value", "Content-Length")
body = '{"intent":"echo"}'
invalid("content-length-too-long", "Content-Length larger than the body.", base("REQUEST", ["Content-Length: 100"]) + "\n" + body, "content_length", "Content-Length", declared=100, actual=len(body))
invalid("content-length-too-short", "Content-Length smaller than the body.", base("REQUEST", ["Content-Length: 5"]) + "\n" + body, "content_length", "Content-Length", declared=5, actual=len(body))
invalid("content-length-data-after", "A second message after the declared body.", base("REQUEST", [f"Content-Length: {len(body)}"]) + "\n" + body + "\n\nRKT/1.0 GOODBYE\n", "content_length", "Content-Length", declared=len(body))

names = set()
for v in vectors:
    assert v["name"] not in names; names.add(v["name"])
    with open(os.path.join(OUT, v["name"] + ".json"), "w") as fh:
        json.dump(v, fh, indent=2, ensure_ascii=False); fh.write("\n")
print(len(vectors), "vectors")

import asyncio
import json
import os  # compat harness: change 1 of 2 from the guide (needed for RKT_URL)
import uuid
from datetime import datetime, timezone
import websockets

SERVER_URL = os.environ.get("RKT_URL", "ws://localhost:7749/rkt")  # compat harness: change 2 of 2 from the guide (URL from RKT_URL)

def make_msg(msg_type, session_id, extra_headers="", body=None):
    msg_id    = str(uuid.uuid4())
    timestamp = datetime.now(timezone.utc).isoformat()

    lines = [
        f"RKT/1.0 {msg_type}",
        "Version: 1",
        f"Message-ID: {msg_id}",
        f"Session-ID: {session_id}",
        f"Timestamp: {timestamp}",
        "TTL: 30",
    ]
    if extra_headers:
        lines.append(extra_headers)
    if body is not None:
        body_str = json.dumps(body)
        lines.append(f"Content-Type: application/json")
        lines.append(f"Content-Length: {len(body_str.encode())}")
        lines.append("")           # blank line
        lines.append(body_str)
    else:
        lines.append("")           # blank line (no body)

    return "\n".join(lines), msg_id

def parse_msg(raw):
    if "\n\n" in raw:
        header_part, body_part = raw.split("\n\n", 1)
    else:
        header_part, body_part = raw, ""

    lines      = header_part.split("\n")
    msg_type   = lines[0].split(" ")[1] if lines else ""
    headers    = {}

    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip()] = v.strip()

    body = json.loads(body_part) if body_part.strip() else None
    return msg_type, headers, body

async def main():
    session_id = str(uuid.uuid4())

    async with websockets.connect(
        SERVER_URL,
        subprotocols=["rkt.1.0"],
    ) as ws:

        # 1. Send HELLO
        hello, hello_id = make_msg(
            "HELLO", session_id,
            extra_headers="User-Agent: PythonAgent/1.0\nCapabilities: language,vision",
            body={"min_version": 1, "max_version": 1},
        )
        await ws.send(hello)

        # 2. Wait for HELLO_ACK
        ack_raw             = await ws.recv()
        ack_type, ack_hdrs, ack_body = parse_msg(ack_raw)
        assert ack_type == "HELLO_ACK", f"Expected HELLO_ACK, got {ack_type}"
        print(f"Connected! Server: {ack_hdrs.get('User-Agent')}")
        print(f"Server caps: {ack_hdrs.get('Capabilities')}")

        # 3. Send REQUEST
        req, req_id = make_msg(
            "REQUEST", session_id,
            extra_headers="To: rkt://weather.ai",
            body={
                "intent":  "weather.current",
                "params":  {"city": "Seoul"},
                "context": {"language": "ko", "timezone": "Asia/Seoul"},
            },
        )
        await ws.send(req)

        # 4. Receive RESPONSE
        resp_raw              = await ws.recv()
        resp_type, _, resp_body = parse_msg(resp_raw)
        assert resp_type == "RESPONSE"

        print("Weather data:", resp_body["data"])
        # → {'city': 'Seoul', 'temperature': 24, 'condition': 'Sunny', ...}

        # 5. Memory: store a preference
        mem_set, _ = make_msg(
            "MEMORY_SET", session_id,
            body={"key": "city", "value": "Seoul", "namespace": "prefs", "ttl": 3600},
        )
        await ws.send(mem_set)
        await ws.recv()  # ACK

        # 6. GOODBYE
        bye, _ = make_msg("GOODBYE", session_id)
        await ws.send(bye)

asyncio.run(main())

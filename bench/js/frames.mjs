// The frames the flood servers send: realistic messages of each protocol, built from the shapes
// in docs/protocols/*.md, the specs and tests/vectors (all ASCII, so a frame's byte length is its
// string length). Each builder takes the event's index (0-based) and returns one frame's text.

const SENTENCES = [
  "Deploy finished for the staging cluster; all 14 health checks are green and the canary is at 5 percent.",
  "Can you summarise the open incidents from last night and flag anything that still needs an owner?",
  "The nightly export produced 3 warnings about missing currency codes in the EU ledger, details attached.",
  "Reminder: the design review moved to Thursday 15:00 UTC, same room, agenda updated in the shared doc.",
  "Forecast model retrained on the new data; validation loss dropped from 0.412 to 0.397 after 12 epochs.",
  "Customer 88213 asked for a refund on order 55-0192; the policy allows it, waiting for your approval.",
  "Build 7731 failed on arm64 only: the linker ran out of memory while linking the integration tests.",
  "I parsed the attached invoice: total 1,284.50 EUR, due 2027-01-15, vendor Nordlicht Systems GmbH.",
];
const CONDITIONS = ["Sunny", "Partly cloudy", "Showers", "Overcast", "Light rain", "Clear", "Windy", "Fog"];
const CITIES = ["Seoul", "Paris", "Lima", "Nairobi", "Oslo", "Osaka", "Denver", "Porto"];

/** A UUID-shaped id that differs per index. */
function uuidOf(prefix, i) {
  return `${prefix}-${(i % 0xffff).toString(16).padStart(4, "0")}-4${(i % 0xfff).toString(16).padStart(3, "0")}-8a1c-${i.toString(16).padStart(12, "0")}`;
}

function isoAt(ms) {
  return new Date(ms).toISOString();
}

const T0 = Date.UTC(2026, 11, 3, 9, 0, 0);

// ---- RKT ------------------------------------------------------------------------------------

/** One RKT message as the reference server writes it (docs/protocols/rkt.md: headers in order,
 * Content-Type last, blank line, compact JSON, no trailing newline). */
export function rktMessage(type, headers, body) {
  const lines = [`RKT/1.0 ${type}`];
  for (const [k, v] of headers) lines.push(`${k}: ${v}`);
  if (body === undefined) return lines.join("\n") + "\n";
  lines.push("Content-Type: application/json", "", body);
  return lines.join("\n");
}

/** The STREAM_DATA chunks of one stream (Seq 0, 1, 2, ...: the engine's numbering, as the
 * reference server sends it), each with a ~200-byte JSON body. */
export function rktStreamData(replyTo, sessionId) {
  const ts = isoAt(T0);
  const days = Array.from({ length: 365 }, (_, k) => isoAt(T0 + k * 86_400_000).slice(0, 10));
  return (i) => {
    const day = days[i % 365];
    const body = `{"seq":${i},"date":"${day}","city":"${CITIES[i & 7]}","high":${10 + (i % 17)},"low":${i % 9},"condition":"${CONDITIONS[(i >> 3) & 7]}","humidity":${40 + (i % 50)},"wind_kph":${5 + (i % 30)},"precip_mm":${(i % 13) / 10},"uv_index":${i % 11},"sunrise":"07:${String(10 + (i % 40)).padStart(2, "0")}","sunset":"17:${String(i % 60).padStart(2, "0")}"}`;
    // rktMessage("STREAM_DATA", [Version, Message-ID, Reply-To, Session-ID, Timestamp, From,
    // Seq], body), written out as one template (the frame builder must stay far ahead of the
    // clients).
    return `RKT/1.0 STREAM_DATA\nVersion: 1\nMessage-ID: ${uuidOf("5d1e0c2a", i)}\nReply-To: ${replyTo}\nSession-ID: ${sessionId}\nTimestamp: ${ts}\nFrom: rkt://127.0.0.1\nSeq: ${i}\nContent-Type: application/json\n\n${body}`;
  };
}

// ---- MoltZap (current generation, JSON-RPC 2.0) ---------------------------------------------

/** `messages/received` notifications (`{"message": {...}}` as the peer fans them out), about
 * 500 bytes each. */
export function moltzapReceived() {
  const conversations = [0, 1, 2, 3].map((k) => uuidOf("0c5a7640", 9000 + k));
  const senders = [0, 1, 2].map((k) => uuidOf("f5d5da7e", 7000 + k));
  return (i) => {
    const text = `${SENTENCES[i & 7]} (#${i}) ${SENTENCES[(i + 3) & 7].slice(0, 110)}`;
    return `{"jsonrpc":"2.0","method":"messages/received","params":{"message":{"id":"${uuidOf("55908100", i)}","conversationId":"${conversations[i & 3]}","senderId":"${senders[i % 3]}","parts":[{"type":"text","text":"${text}"}],"createdAt":"${isoAt(T0 + i * 37)}"}}}`;
  };
}

// ---- Switch (current generation, the WebSocket) ---------------------------------------------

/** `connection_state` as a control frame `{"event", "data"}` (the fields of
 * tests/vectors/switch-0.19/connection_state.sse plus the current generation's `generation`). */
export function switchConnectionState({ connectionId, agentId, rooms, heartbeatS }) {
  return JSON.stringify({
    event: "connection_state",
    data: {
      connection_id: connectionId,
      agent_id: agentId,
      generation: 1,
      scope: "single",
      filter: "all",
      spawn_capable: false,
      rooms,
      cursor: 0,
      protocol: 1,
      heartbeat_interval_seconds: heartbeatS,
      server: { version: "0.20.0", contracts: { "agent-protocol": { speaks: 1, accepts: 1 } } },
      client: { speaks: null, accepts: null, artifact: null, version: null },
    },
  });
}

export const SWITCH_PING = `{"event":"ping","data":{}}`;

/** Domain `message` events `{"event","data":{...,"sequence":N},"id":N}` with the payload of
 * tests/vectors/switch-0.19/message_*.sse; sequence N = index + 1. */
export function switchMessages(room) {
  return (i) => {
    const n = i + 1;
    const addressed = i % 5 === 0;
    const body = `${addressed ? "@bench-agent " : ""}${SENTENCES[i & 7]}`;
    return `{"event":"message","data":{"type":"message","room_id":"${room}","bridge_id":null,"channel_type":"channel_public","payload":{"addressed":${addressed},"sender":"@switch-agent-236ac4ff:localhost","sender_name":"peer-beta","message_id":"$O9U7xaWgLzTx4WiHeM6xTZmLfzTL${String(n).padStart(15, "0")}","body":"${body}","timestamp":${T0 + i * 41},"thread_id":null,"attachments":[]},"sequence":${n}},"id":${n}}`;
  };
}

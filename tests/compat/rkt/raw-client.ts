// npm install ws uuid @types/ws @types/uuid
import WebSocket from "ws";
import { v4 as uuidv4 } from "uuid";

const SESSION_ID = uuidv4();
const ws         = new WebSocket(process.env.RKT_URL ?? "ws://localhost:7749/rkt", "rkt.1.0"); // compat harness: the ONLY change from the guide (URL from RKT_URL)

function send(type: string, extra: string = "", body?: object) {
  const msgId     = uuidv4();
  const timestamp = new Date().toISOString();
  const bodyStr   = body ? JSON.stringify(body) : null;
  const msg = [
    `RKT/1.0 ${type}`,
    `Version: 1`,
    `Message-ID: ${msgId}`,
    `Session-ID: ${SESSION_ID}`,
    `Timestamp: ${timestamp}`,
    `TTL: 30`,
    extra,
    bodyStr ? `Content-Type: application/json` : "",
    "",
    bodyStr ?? "",
  ].join("\n");
  ws.send(msg);
  return msgId;
}

ws.on("open", () => {
  send("HELLO", "User-Agent: MyAgent/1.0\nCapabilities: language",
    { min_version: 1, max_version: 1 });
});

ws.on("message", (data) => {
  const raw = data.toString();
  const [headerPart, bodyPart] = raw.split("\n\n");
  const type = headerPart.split("\n")[0].split(" ")[1];

  if (type === "HELLO_ACK") {
    // Session is ready — send a request
    send("REQUEST", "To: rkt://weather.ai",
      { intent: "weather.current", params: { city: "Seoul" } });
  }

  if (type === "RESPONSE") {
    const body = JSON.parse(bodyPart);
    console.log("Got data:", body.data);
    send("GOODBYE");
    ws.close();
  }
});

ws.on("error", console.error);

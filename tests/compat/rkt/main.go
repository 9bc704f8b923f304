package main

import (
    "encoding/json"
    "fmt"
    "log"
    "net/http"
    "os" // agentwire change 1 of 2: needed for the URL below
    "strings"
    "time"

    "github.com/google/uuid"
    "github.com/gorilla/websocket"
)

var ServerURL = os.Getenv("RKT_URL") // agentwire change 2 of 2: the URL comes from the harness

func makeMsg(msgType, sessionID, extraHeaders string, body any) (string, string) {
    msgID     := uuid.New().String()
    timestamp := time.Now().UTC().Format(time.RFC3339)

    lines := []string{
        fmt.Sprintf("RKT/1.0 %s", msgType),
        "Version: 1",
        fmt.Sprintf("Message-ID: %s", msgID),
        fmt.Sprintf("Session-ID: %s", sessionID),
        fmt.Sprintf("Timestamp: %s", timestamp),
        "TTL: 30",
    }
    if extraHeaders != "" {
        lines = append(lines, extraHeaders)
    }
    if body != nil {
        b, _ := json.Marshal(body)
        lines = append(lines, "Content-Type: application/json")
        lines = append(lines, "")
        lines = append(lines, string(b))
    } else {
        lines = append(lines, "")
    }
    return strings.Join(lines, "\n"), msgID
}

func parseType(raw string) string {
    firstLine := strings.SplitN(raw, "\n", 2)[0]
    parts     := strings.SplitN(firstLine, " ", 3)
    if len(parts) >= 2 { return parts[1] }
    return ""
}

func parseBody(raw string) map[string]any {
    parts := strings.SplitN(raw, "\n\n", 2)
    if len(parts) < 2 || strings.TrimSpace(parts[1]) == "" { return nil }
    var result map[string]any
    json.Unmarshal([]byte(parts[1]), &result)
    return result
}

func main() {
    sessionID := uuid.New().String()
    dialer    := websocket.Dialer{Subprotocols: []string{"rkt.1.0"}}

    conn, _, err := dialer.Dial(ServerURL, http.Header{})
    if err != nil { log.Fatal(err) }
    defer conn.Close()

    // 1. HELLO
    hello, _ := makeMsg("HELLO", sessionID,
        "User-Agent: GoAgent/1.0\nCapabilities: language",
        map[string]any{"min_version": 1, "max_version": 1},
    )
    conn.WriteMessage(websocket.TextMessage, []byte(hello))

    // 2. HELLO_ACK
    _, ackRaw, _ := conn.ReadMessage()
    fmt.Println("Handshake:", parseType(string(ackRaw)))

    // 3. REQUEST
    req, _ := makeMsg("REQUEST", sessionID, "To: rkt://weather.ai",
        map[string]any{
            "intent": "weather.current",
            "params": map[string]any{"city": "Seoul"},
        },
    )
    conn.WriteMessage(websocket.TextMessage, []byte(req))

    // 4. RESPONSE
    _, respRaw, _ := conn.ReadMessage()
    body          := parseBody(string(respRaw))
    fmt.Printf("Response data: %+v\n", body["data"])

    // 5. GOODBYE
    bye, _ := makeMsg("GOODBYE", sessionID, "", nil)
    conn.WriteMessage(websocket.TextMessage, []byte(bye))
}

package serve

import (
	"encoding/json"
	"errors"
	"fmt"
)

// clientMessage is one WebSocket message from a client, decoded strictly.
type clientMessage struct {
	Type string `json:"type"`
	// auth
	Token string `json:"token,omitempty"`
	// user_message
	Content     string `json:"content,omitempty"`
	ClientMsgID string `json:"client_msg_id,omitempty"`
	// permission_response
	RequestID    string          `json:"request_id,omitempty"`
	Behavior     string          `json:"behavior,omitempty"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	Message      string          `json:"message,omitempty"`
	// subscribe, ack
	LastSeq int64 `json:"last_seq,omitempty"`
	// set_model, set_permission_mode
	Model string `json:"model,omitempty"`
	Mode  string `json:"mode,omitempty"`
}

// messageFields lists, per client message type, the fields it may carry.
var messageFields = map[string][]string{
	"auth":                {"token"},
	"user_message":        {"content", "client_msg_id"},
	"permission_response": {"request_id", "behavior", "updated_input", "message"},
	"interrupt":           {},
	"set_model":           {"model"},
	"set_permission_mode": {"mode"},
	"subscribe":           {"last_seq"},
	"ack":                 {"last_seq"},
	"ping":                {},
}

// decodeClientMessage decodes one client message: a known type with only
// its own fields, each of the right type, and the values it needs.
func decodeClientMessage(data []byte) (clientMessage, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return clientMessage{}, fmt.Errorf("not a JSON object: %s", jsonMessage(err))
	}
	var m clientMessage
	if err := json.Unmarshal(raw["type"], &m.Type); err != nil || m.Type == "" {
		return clientMessage{}, errors.New(`"type" must be a string naming the message`)
	}
	allowed, ok := messageFields[m.Type]
	if !ok {
		return clientMessage{}, fmt.Errorf("unknown message type %q", m.Type)
	}
	for k := range raw {
		if k != "type" && !contains(allowed, k) {
			return clientMessage{}, fmt.Errorf("unknown field %q in a %s message", k, m.Type)
		}
	}
	if err := strictUnmarshal(data, &m); err != nil {
		return clientMessage{}, fmt.Errorf("%s message: field %s: %s", m.Type, fieldPath("", err), jsonMessage(err))
	}
	switch {
	case m.Type == "user_message" && m.Content == "":
		return clientMessage{}, errors.New("user_message: content must not be empty")
	case m.Type == "permission_response" && m.RequestID == "":
		return clientMessage{}, errors.New("permission_response: request_id must not be empty")
	case m.Type == "permission_response" && m.Behavior != "allow" && m.Behavior != "deny":
		return clientMessage{}, errors.New(`permission_response: behavior must be "allow" or "deny"`)
	case m.Type == "set_permission_mode" && m.Mode == "":
		return clientMessage{}, errors.New("set_permission_mode: mode must not be empty")
	case (m.Type == "subscribe" || m.Type == "ack") && m.LastSeq < 0:
		return clientMessage{}, fmt.Errorf("%s: last_seq must not be negative", m.Type)
	}
	return m, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

package agent

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// protoVersion is the control protocol's version; both ends must agree.
const protoVersion = 1

// Message types.
const (
	msgHello     = "hello"
	msgChallenge = "challenge"
	msgAuth      = "auth"
	msgWelcome   = "welcome"
	msgRequest   = "request"
	msgAccept    = "accept"
	msgBusy      = "busy"
	msgError     = "error"
	msgReady     = "ready"
	msgStart     = "start"
	msgInterval  = "interval"
	msgStop      = "stop"
	msgEnd       = "end"
)

// PeerError is a refusal or failure the other end reported ("busy",
// "error" messages).
type PeerError struct {
	Busy   bool   // the agent is running another test
	Reason string // the peer's own words
}

func (e *PeerError) Error() string {
	if e.Busy {
		return "the agent is busy running another test (" + e.Reason + "); try again when it ends"
	}
	return "the peer refused: " + e.Reason
}

type helloMsg struct {
	Type    string `json:"type"`
	Version int    `json:"version"`
}

type challengeMsg struct {
	Type    string `json:"type"`
	Version int    `json:"version"`
	Nonce   []byte `json:"nonce"`
}

type authMsg struct {
	Type  string `json:"type"`
	Nonce []byte `json:"nonce"`
	MAC   []byte `json:"mac"`
}

type welcomeMsg struct {
	Type string          `json:"type"`
	MAC  []byte          `json:"mac"`
	Host result.HostInfo `json:"host"`
}

type errorMsg struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

type acceptMsg struct {
	Type      string `json:"type"`
	Port      int    `json:"port"`
	Cookie    []byte `json:"cookie"`
	Placement []int  `json:"placement"` // the agent's CPU for each connection, in stream order; -1 unpinned
}

// bareMsg is a message with nothing but its type ("start", "stop").
type bareMsg struct {
	Type string `json:"type"`
}

type readyMsg struct {
	Type   string          `json:"type"`
	Window result.SockBufs `json:"window"`
}

type intervalMsg struct {
	Type string `json:"type"`
	engine.Sample
}

type endMsg struct {
	Type       string               `json:"type"`
	Streams    []engine.StreamTotal `json:"streams"`
	CPUSeconds float64              `json:"cpu_seconds"`
	Errors     []string             `json:"errors,omitempty"`
	// MSG_ZEROCOPY counters of the agent's senders.
	ZCSends       uint64 `json:"zc_sends,omitempty"`
	ZCCompletions uint64 `json:"zc_completions,omitempty"`
	ZCCopied      uint64 `json:"zc_copied,omitempty"`
}

// messageType returns the "type" of a frame body.
func messageType(body []byte) (string, error) {
	var env struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return "", fmt.Errorf("%w: not a JSON object: %v", errBadMessage, err)
	}
	if env.Type == "" {
		return "", fmt.Errorf("%w: no \"type\"", errBadMessage)
	}
	return env.Type, nil
}

// errBadMessage is a frame that is not a message of the protocol.
var errBadMessage = errors.New("malformed message")

// decodeAs decodes body (of type typ) into v if typ is want. "error" and
// "busy" become a *PeerError; other types are protocol errors.
func decodeAs(typ string, body []byte, want string, v any) error {
	switch {
	case typ == want:
		if err := json.Unmarshal(body, v); err != nil {
			return fmt.Errorf("%w: %s: %v", errBadMessage, typ, err)
		}
		return nil
	case typ == msgError || typ == msgBusy:
		var m errorMsg
		_ = json.Unmarshal(body, &m) // a reason we cannot read is still a refusal
		return &PeerError{Busy: typ == msgBusy, Reason: m.Reason}
	}
	return fmt.Errorf("%w: got %q, want %q", errBadMessage, typ, want)
}

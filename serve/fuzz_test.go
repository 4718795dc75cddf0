package serve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/jobfile"
)

// FuzzDecodeClientMessage: any input is decoded or refused, never a panic,
// and what is accepted is a known type with sane values.
func FuzzDecodeClientMessage(f *testing.F) {
	for _, s := range []string{`{"type":"ping"}`, `{"type":"subscribe","last_seq":5}`, `{"type":"auth","token":"x"}`,
		`{"type":"user_message","content":"hi","client_msg_id":"a"}`, `{"type":"permission_response","request_id":"r","behavior":"allow","updated_input":{"a":1}}`,
		`{"type":"ack","last_seq":-1}`, `[]`, `{"type":7}`, `{"type":"ping","x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeClientMessage(data)
		if err != nil {
			return
		}
		if _, ok := messageFields[m.Type]; !ok || m.LastSeq < 0 || !json.Valid(data) {
			t.Fatalf("accepted %q as %+v", data, m)
		}
	})
}

// FuzzSessionProblems: the create-session decoder reports problems with
// field paths and never panics.
func FuzzSessionProblems(f *testing.F) {
	for _, s := range []string{`{}`, `{"repo":".","model":"opus","timeout":"5m"}`, `{"policy":{"allow":["Read"],"default":"deny"}}`,
		`{"env":{"A":"b"},"worktree":false}`, `{"max_turns":"x","modle":1}`, `null`, `{"permission_timeout":"-1s"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := jobfile.DecodeSession(data)
		if err != nil {
			de, ok := err.(*jobfile.DecodeError)
			if !ok || len(de.Problems) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			for _, p := range problemsOf(de) {
				if p.Field == "" || strings.TrimSpace(p.Message) == "" {
					t.Fatalf("problem without field or message: %+v", p)
				}
			}
			return
		}
		if spec.PermissionWait() <= 0 || spec.Job.MaxTurns < 0 {
			t.Fatalf("accepted invalid spec %+v", spec)
		}
	})
}

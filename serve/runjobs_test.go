package serve

import (
	"encoding/json"
	"testing"

	"github.com/pneuma-cli/pneuma/report"
)

// jobName reads a job's name as decoding the whole job would: from the
// leading member pneuma writes (escapes and all) and, failing that, from
// wherever the name stands.
func TestJobName(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{`{"name":"job-1","status":"failed"}`, "job-1"},
		{`{"name":"a \"quoted\" name\\","position":1}`, `a "quoted" name\`},
		{`{"name":"caf\u00e9 \u003cb\u003e","position":1}`, "café <b>"},
		{`{"status":"ok","usage":{"name":"inner"},"list":[{"name":"x"}],"name":"last"}`, "last"},
		{`{"status":"ok"}`, ""},
		{`{}`, ""},
	} {
		got, err := jobName([]byte(c.data))
		if err != nil || got != c.want {
			t.Errorf("jobName(%s) = %q, %v; want %q", c.data, got, err, c.want)
		}
	}
	for _, bad := range []string{``, `[]`, `"name"`, `{"name":1}`, `{"name":"unterminated`, `{"status":`} {
		if got, err := jobName([]byte(bad)); err == nil {
			t.Errorf("jobName(%s) = %q, want an error", bad, got)
		}
	}
}

// FuzzJobName: for a job as pneuma encodes it, with its name first or
// after other members, jobName reads the name json.Unmarshal reads; no
// input makes it panic.
func FuzzJobName(f *testing.F) {
	f.Add("job-1", []byte(`{"name":"x"}`))
	f.Add(`a "b" \ c`, []byte(`{"name":"a\"`))
	f.Add("\xff\u2028<>&", []byte(`{"a":[{"name":"b"}],"name":"c"}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		_, _ = jobName(data)
		first, _ := json.Marshal(report.Job{Name: name, Status: "failed"})
		later, _ := json.Marshal(map[string]any{"a": map[string]string{"name": "inner"}, "name": name})
		for _, enc := range [][]byte{first, later} {
			var want struct{ Name string }
			if err := json.Unmarshal(enc, &want); err != nil {
				t.Fatal(err)
			}
			if got, err := jobName(enc); err != nil || got != want.Name {
				t.Fatalf("jobName(%s) = %q, %v; want %q", enc, got, err, want.Name)
			}
		}
	})
}

package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestWriteReadJSONRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	want := mixedReport()
	// JSON turns invalid UTF-8 into U+FFFD; keep everything else nasty.
	for i := range want.Jobs {
		want.Jobs[i].Result = strings.ToValidUTF8(want.Jobs[i].Result, "")
		want.Jobs[i].Error = strings.ToValidUTF8(want.Jobs[i].Error, "")
	}
	if err := WriteJSON(path, want); err != nil {
		t.Fatal(err)
	}
	// Overwriting is atomic too and leaves no temporary file behind.
	if err := WriteJSON(path, want); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only report.json: %v", len(entries), entries)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o644 {
		t.Errorf("report mode %v, want 0644", perm)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(data); err != nil {
		t.Fatalf("written report does not validate: %v", err)
	}
	if !strings.HasPrefix(string(data), "{\n  \"schema\": \"pneuma.report/v1\",") || !strings.HasSuffix(string(data), "}\n") {
		t.Errorf("report is not indented JSON ending in a newline:\n%.200s", data)
	}
	got, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	// Times come back equal but not with the same monotonic reading.
	if !got.StartedAt.Equal(want.StartedAt) || !got.FinishedAt.Equal(want.FinishedAt) {
		t.Errorf("times changed: %v-%v, want %v-%v", got.StartedAt, got.FinishedAt, want.StartedAt, want.FinishedAt)
	}
	got.StartedAt, got.FinishedAt = want.StartedAt, want.FinishedAt
	// A nil list is written as [] and read back empty.
	for i := range want.Jobs {
		if want.Jobs[i].PermissionDenials == nil {
			want.Jobs[i].PermissionDenials = []PermissionDenial{}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the report:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestWriteJSONEmptyListsAreArrays(t *testing.T) {
	r := &Report{Schema: Schema, RunID: "x"}
	r.Tally(false)
	data := validJSON(t, r)
	if !strings.Contains(string(data), `"jobs": []`) {
		t.Errorf("jobs not written as []:\n%s", data)
	}
	r.Jobs = []Job{{Name: "a", Status: StatusSucceeded}}
	r.Tally(false)
	data = validJSON(t, r)
	if !strings.Contains(string(data), `"permission_denials": []`) {
		t.Errorf("permission_denials not written as []:\n%s", data)
	}
}

func TestWriteJSONMissingDirectory(t *testing.T) {
	err := WriteJSON(filepath.Join(t.TempDir(), "no", "such", "report.json"), mixedReport())
	if err == nil || !strings.Contains(err.Error(), "write report") {
		t.Fatalf("got %v, want a write report error", err)
	}
}

func TestReadJSONIsStrictAboutVersion(t *testing.T) {
	good, err := Encode(mixedReport())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, data, want string
	}{
		{"other version", strings.Replace(string(good), `"pneuma.report/v1"`, `"pneuma.report/v2"`, 1), `unsupported report schema "pneuma.report/v2"`},
		{"no schema", `{"run_id":"x","jobs":[]}`, `no "schema" field`},
		{"not json", `report`, "not a pneuma report"},
		{"trailing data", string(good) + "{}", "not a pneuma report"},
		{"wrong type", `{"schema":"pneuma.report/v1","jobs":{}}`, "decode report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.json")
			if err := os.WriteFile(path, []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadJSON(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("got %v, want an error naming %s and containing %q", err, path, tt.want)
			}
		})
	}
	if _, err := ReadJSON(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("reading a missing file succeeded")
	}
}

func TestReadJSONToleratesAddedFields(t *testing.T) {
	var doc map[string]any
	data, _ := Encode(mixedReport())
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["added_later"] = true
	data, _ = json.Marshal(doc)
	if _, err := Decode(data); err != nil {
		t.Fatalf("a v1 report with a field added later was refused: %v", err)
	}
}

// The total cost does not depend on the order jobs finished in: a float
// sum would end in 0.015000000000000001 in one order and 0.015 in another.
func TestTotalCostIndependentOfOrder(t *testing.T) {
	costs := []float64{0.0075, 0.0001, 0.0074, 0.1, 0.2, 0.3}
	var want string
	for i := range costs {
		var tot Totals
		for k := range costs {
			tot.Add(&Job{CostUSD: costs[(i+k)%len(costs)]})
		}
		got := strconv.FormatFloat(tot.CostUSD, 'g', -1, 64)
		if i == 0 {
			want = got
		}
		if got != want {
			t.Fatalf("rotation %d: total %s, rotation 0: %s", i, got, want)
		}
	}
	if want != "0.615" {
		t.Fatalf("total %s, want 0.615", want)
	}
	// Totals decoded from a report go on from their cost.
	tot := Totals{CostUSD: 0.1}
	tot.Add(&Job{CostUSD: 0.2})
	if tot.CostUSD != 0.3 {
		t.Fatalf("0.1 + 0.2 = %v, want 0.3", tot.CostUSD)
	}
}

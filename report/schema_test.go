package report

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal(SchemaJSON, &s); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	return s
}

// TestSchemaMatchesTypes keeps the schema and the Go types in step: every
// JSON field of every type is a described property, required exactly when it
// is always written (no omitempty), and the schema has nothing the types lack.
func TestSchemaMatchesTypes(t *testing.T) {
	s := loadSchema(t)
	defs := s["$defs"].(map[string]any)
	for _, tt := range []struct {
		typ    reflect.Type
		schema map[string]any
	}{
		{reflect.TypeFor[Report](), s},
		{reflect.TypeFor[Shard](), defs["shard"].(map[string]any)},
		{reflect.TypeFor[Budget](), defs["budget"].(map[string]any)},
		{reflect.TypeFor[Totals](), defs["totals"].(map[string]any)},
		{reflect.TypeFor[Usage](), defs["usage"].(map[string]any)},
		{reflect.TypeFor[ModelUsage](), defs["modelUsage"].(map[string]any)},
		{reflect.TypeFor[PermissionDenial](), defs["permissionDenial"].(map[string]any)},
		{reflect.TypeFor[Job](), defs["job"].(map[string]any)},
		{reflect.TypeFor[Attempt](), defs["attempt"].(map[string]any)},
		{reflect.TypeFor[MergedReport](), defs["mergedReport"].(map[string]any)},
	} {
		t.Run(tt.typ.Name(), func(t *testing.T) {
			if tt.schema["additionalProperties"] != false {
				t.Errorf("schema of %s allows additional properties: a renamed field would pass", tt.typ.Name())
			}
			props := tt.schema["properties"].(map[string]any)
			var required []string
			for _, r := range tt.schema["required"].([]any) {
				required = append(required, r.(string))
			}
			fields := map[string]bool{}
			for i := range tt.typ.NumField() {
				f := tt.typ.Field(i)
				if !f.IsExported() {
					continue // not encoded (Report.source)
				}
				name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "" || name == "-" {
					t.Errorf("field %s has no JSON name", f.Name)
					continue
				}
				fields[name] = true
				p, ok := props[name].(map[string]any)
				if !ok {
					t.Errorf("field %s (%q) is not in the schema", f.Name, name)
					continue
				}
				if d, _ := p["description"].(string); len(d) < 10 {
					t.Errorf("property %q has no real description", name)
				}
				omitempty := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
				if req := slices.Contains(required, name); req == omitempty {
					t.Errorf("property %q: required=%v but omitempty=%v", name, req, omitempty)
				}
			}
			for name := range props {
				if !fields[name] {
					t.Errorf("schema property %q has no field in %s", name, tt.typ.Name())
				}
			}
		})
	}
}

// TestSchemaEnumsMatchConstants checks the schema's status and reason enums
// against the constants declared in report.go, so a reason added there
// cannot produce reports the schema rejects.
func TestSchemaEnumsMatchConstants(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "report.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string][]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				for _, prefix := range []string{"Reason", "Status", "Run"} {
					if strings.HasPrefix(n.Name, prefix) {
						consts[prefix] = append(consts[prefix], v)
					}
				}
			}
		}
	}
	defs := loadSchema(t)["$defs"].(map[string]any)
	for prefix, def := range map[string]string{"Reason": "reason", "Status": "jobStatus", "Run": "runStatus"} {
		var enum []string
		for _, v := range defs[def].(map[string]any)["enum"].([]any) {
			enum = append(enum, v.(string))
		}
		slices.Sort(enum)
		got := slices.Sorted(slices.Values(consts[prefix]))
		if !slices.Equal(got, enum) {
			t.Errorf("%s* constants %v, schema $defs/%s enum %v", prefix, got, def, enum)
		}
	}
}

func TestValidateAcceptsFullReport(t *testing.T) {
	validJSON(t, mixedReport())
	r := mixedReport()
	r.Shard = &Shard{Index: 2, Total: 3}
	validJSON(t, r)
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(doc map[string]any)
		want string
	}{
		{"renamed field", func(d map[string]any) { d["runid"] = d["run_id"]; delete(d, "run_id") }, "run_id"},
		{"renamed job field", func(d map[string]any) {
			j := job(d, 0)
			j["title"] = j["name"]
			delete(j, "name")
		}, "name"},
		{"renamed optional job field", func(d map[string]any) {
			j := job(d, 1)
			j["why"] = j["reason"]
			delete(j, "reason")
		}, "why"},
		{"removed totals field", func(d map[string]any) { delete(d["totals"].(map[string]any), "cost_usd") }, "cost_usd"},
		{"other version", func(d map[string]any) { d["schema"] = "pneuma.report/v2" }, "schema"},
		{"unknown status", func(d map[string]any) { job(d, 0)["status"] = "ok" }, "status"},
		{"unknown reason", func(d map[string]any) { job(d, 1)["reason"] = "bad_luck" }, "reason"},
		{"negative cost", func(d map[string]any) { job(d, 0)["cost_usd"] = -1 }, "cost_usd"},
		{"fractional tokens", func(d map[string]any) { job(d, 0)["usage"].(map[string]any)["input_tokens"] = 1.5 }, "input_tokens"},
		{"bad time", func(d map[string]any) { d["started_at"] = "yesterday" }, "started_at"},
		{"null jobs", func(d map[string]any) { d["jobs"] = nil }, "jobs"},
		{"shard 0", func(d map[string]any) { d["shard"] = map[string]any{"index": 0, "total": 2} }, "index"},
		{"shard past total", func(d map[string]any) { d["shard"] = map[string]any{"index": 3, "total": 2} }, "shard.index 3"},
		{"duplicate job", func(d map[string]any) {
			jobs := d["jobs"].([]any)
			d["jobs"] = append(jobs, jobs[0])
		}, `job "lint" appears more than once`},
		{"totals off", func(d map[string]any) { d["totals"].(map[string]any)["failed"] = 0 }, "totals.failed"},
		{"cost off", func(d map[string]any) { d["totals"].(map[string]any)["cost_usd"] = 9.5 }, "totals.cost_usd"},
		{"status hides failure", func(d map[string]any) {
			job(d, 3)["status"] = "skipped"
			tot := d["totals"].(map[string]any)
			tot["interrupted"], tot["skipped"] = 0, 2
			d["status"] = "succeeded"
		}, "status is succeeded but 3 of its jobs did not succeed"},
	}
	base, err := Encode(mixedReport())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(base, &doc); err != nil {
				t.Fatal(err)
			}
			tt.edit(doc)
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			err = Validate(data)
			if err == nil {
				t.Fatalf("Validate accepted it")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
	if err := Validate([]byte("{")); err == nil {
		t.Error("Validate accepted broken JSON")
	}
}

func job(doc map[string]any, i int) map[string]any {
	return doc["jobs"].([]any)[i].(map[string]any)
}

func TestValidateZeroTimes(t *testing.T) {
	// A report of a run that never started still validates.
	r := &Report{Schema: Schema, RunID: "x", StartedAt: time.Time{}}
	r.Tally(false)
	validJSON(t, r)
}

// FuzzValidate feeds arbitrary documents to Validate: it must not panic, and
// whatever it accepts must decode and encode back into a valid report.
func FuzzValidate(f *testing.F) {
	full, _ := Encode(mixedReport())
	f.Add(full)
	f.Add([]byte(`{"schema":"pneuma.report/v1"}`))
	f.Add([]byte(`{"schema":"pneuma.report/v1","run_id":"","started_at":"2026-01-01T00:00:00Z","finished_at":"2026-01-01T00:00:00Z","status":"succeeded","totals":{"jobs":0,"succeeded":0,"failed":0,"skipped":0,"interrupted":0,"cost_usd":0,"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"num_turns":0,"duration_ms":0},"jobs":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if Validate(data) != nil {
			return
		}
		r, err := Decode(data)
		if err != nil {
			t.Fatalf("Validate accepted what Decode refuses: %v", err)
		}
		again, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := Validate(again); err != nil {
			t.Fatalf("a valid report re-encoded is invalid: %v\n%s", err, again)
		}
	})
}

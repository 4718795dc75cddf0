package schema_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/sandbox"
	"github.com/pneuma-cli/pneuma/schema"
)

const schemaURL = "https://github.com/pneuma-cli/pneuma/schema/jobs.schema.json"

// compiled compiles the embedded jobs schema.
func compiled(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema.Jobs))
	if err != nil {
		t.Fatalf("jobs.schema.json is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		t.Fatalf("compile jobs.schema.json: %v", err)
	}
	return s
}

// yamlToJSON turns a YAML document into the value the validator reads.
func yamlToJSON(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

func TestEmbeddedIsTheCommittedFile(t *testing.T) {
	onDisk, err := os.ReadFile("jobs.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, schema.Jobs) {
		t.Fatal("schema.Jobs differs from jobs.schema.json; rebuild")
	}
}

// jobsFile is one jobs file found in the repository: a file, or a YAML
// string literal in a test.
type jobsFile struct {
	where string
	data  []byte
}

// repoJobsFiles finds jobs.example.yaml, every YAML file under examples/ that
// is a jobs file (it has version and jobs), and every string literal in the
// runner and cmd tests that the strict decoder accepts.
func repoJobsFiles(t *testing.T) []jobsFile {
	t.Helper()
	var out []jobsFile
	paths := []string{"../jobs.example.yaml"}
	_ = filepath.WalkDir("../examples", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			paths = append(paths, p)
		}
		return nil
	})
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]any
		if yaml.Unmarshal(data, &top) != nil || top["version"] == nil || top["jobs"] == nil {
			continue // a CI workflow or a Kubernetes manifest
		}
		if _, err := jobfile.Decode(p, data); err != nil {
			t.Errorf("%s does not decode: %v", p, err)
			continue
		}
		out = append(out, jobsFile{p, data})
	}
	for _, dir := range []string{"../jobfile", "../runner", "../cmd"} {
		out = append(out, testLiterals(t, dir)...)
	}
	return out
}

// testLiterals returns the string literals of dir's tests that decode as
// jobs files without error (whole literals only: a literal concatenated with
// values known at run time is not the file the test writes).
func testLiterals(t *testing.T, dir string) []jobsFile {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []jobsFile
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if b, ok := n.(*ast.BinaryExpr); ok && b.Op == token.ADD {
				return false // a piece of a file built at run time, not a file
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || !strings.Contains(lit.Value, "jobs:") {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if _, err := jobfile.Decode("x.yaml", []byte(s)); err == nil {
				out = append(out, jobsFile{fset.Position(lit.Pos()).String(), []byte(s)})
			}
			return true
		})
	}
	return out
}

// TestRepositoryJobsFilesValidate: every jobs file the decoder accepts, the
// schema accepts too, so an editor never marks a working file as wrong.
func TestRepositoryJobsFilesValidate(t *testing.T) {
	s := compiled(t)
	files := repoJobsFiles(t)
	if len(files) < 10 {
		t.Fatalf("found only %d jobs files in the repository; the search is broken", len(files))
	}
	for _, f := range files {
		v, err := yamlToJSON(f.data)
		if err != nil {
			t.Errorf("%s: %v", f.where, err)
			continue
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s: the decoder accepts it but the schema does not:\n%v\n--- file ---\n%s", f.where, err, f.data)
		}
	}
	t.Logf("validated %d jobs files", len(files))
}

func TestExampleHasModeline(t *testing.T) {
	data, err := os.ReadFile("../jobs.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const want = "# yaml-language-server: $schema=./schema/jobs.schema.json\n"
	if !bytes.HasPrefix(data, []byte(want)) {
		t.Fatalf("jobs.example.yaml must start with %q", want)
	}
}

// TestSchemaRejectsWhatTheDecoderRejects: the mistakes an editor should mark
// as you type, each also an error of the strict decoder.
func TestSchemaRejectsWhatTheDecoderRejects(t *testing.T) {
	s := compiled(t)
	for name, doc := range map[string]string{
		"unknown top field": "version: 1\nconcurency: 2\njobs: [{name: a, prompt: p}]\n",
		"unknown job field": "version: 1\njobs: [{name: a, prompt: p, modle: x}]\n",
		"wrong type":        "version: 1\njobs: [{name: a, prompt: p, max_turns: many}]\n",
		"duration number":   "version: 1\njobs: [{name: a, prompt: p, timeout: 90}]\n",
		"bad duration":      "version: 1\njobs: [{name: a, prompt: p, timeout: soon}]\n",
		"name in defaults":  "version: 1\ndefaults: {name: x}\njobs: [{name: a, prompt: p}]\n",
		"no name":           "version: 1\njobs: [{prompt: p}]\n",
		"no version":        "jobs: [{name: a, prompt: p}]\n",
		"version 2":         "version: 2\njobs: [{name: a, prompt: p}]\n",
		"empty jobs":        "version: 1\njobs: []\n",
		"permission mode":   "version: 1\njobs: [{name: a, prompt: p, permission_mode: yolo}]\n",
		"verify no command": "version: 1\njobs: [{name: a, prompt: p, verify: {attempts: 2}}]\n",
		"policy unknown":    "version: 1\njobs: [{name: a, prompt: p, policy: {alow: [Read]}}]\n",
		"env not strings":   "version: 1\njobs: [{name: a, prompt: p, env: {A: [1]}}]\n",
		"negative":          "version: 1\njobs: [{name: a, prompt: p, retries: -1}]\n",
		"effort":            "version: 1\njobs: [{name: a, prompt: p, effort: extreme}]\n",
		"agent no prompt":   "version: 1\njobs: [{name: a, prompt: p, agents: {r: {description: d}}}]\n",
		"agent unknown key": "version: 1\njobs: [{name: a, prompt: p, agents: {r: {description: d, prompt: p, tool: [Read]}}}]\n",
		"sandbox string":    "version: 1\njobs: [{name: a, prompt: p, sandbox: yes please}]\n",
		"sandbox unknown":   "version: 1\njobs: [{name: a, prompt: p, sandbox: {net: [x]}}]\n",
		"sandbox url":       "version: 1\njobs: [{name: a, prompt: p, sandbox: {network: [\"https://x.org/\"]}}]\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := jobfile.Decode("x.yaml", []byte(doc)); err == nil {
				t.Fatalf("the decoder accepts %q; the case is wrong", doc)
			}
			v, err := yamlToJSON([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(v); err == nil {
				t.Errorf("the schema accepts %q", doc)
			}
		})
	}
}

// TestSchemaAndDecoderKnowTheSameFields walks jobfile.File (and Job,
// Verify, policy.Spec through it) by reflection against the schema's
// properties: a field added to one and not the other fails here, naming the
// entry to add.
func TestSchemaAndDecoderKnowTheSameFields(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(schema.Jobs, &root); err != nil {
		t.Fatal(err)
	}
	w := &walker{root: root}
	w.compare("(top level)", reflect.TypeFor[jobfile.File](), root)
	for _, p := range w.problems {
		t.Error(p)
	}
}

type walker struct {
	root     map[string]any
	problems []string
}

// resolve follows $ref and merges allOf into one node.
func (w *walker) resolve(n map[string]any) map[string]any {
	out := map[string]any{}
	if ref, ok := n["$ref"].(string); ok {
		def := w.root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			def, _ = def[part].(map[string]any)
		}
		for k, v := range w.resolve(def) {
			out[k] = v
		}
	}
	if all, ok := n["allOf"].([]any); ok {
		for _, a := range all {
			if m, ok := a.(map[string]any); ok {
				for k, v := range w.resolve(m) {
					out[k] = v
				}
			}
		}
	}
	for k, v := range n {
		if k != "$ref" && k != "allOf" {
			out[k] = v
		}
	}
	return out
}

// jsonType is the JSON type a schema node allows, from type, const or enum.
func jsonType(n map[string]any) string {
	if s, ok := n["type"].(string); ok {
		return s
	}
	if list, ok := n["type"].([]any); ok { // several types: "object|string"
		var names []string
		for _, x := range list {
			names = append(names, fmt.Sprint(x))
		}
		slices.Sort(names)
		return strings.Join(names, "|")
	}
	val, ok := n["const"]
	if !ok {
		if e, ok := n["enum"].([]any); ok && len(e) > 0 {
			val = e[0]
		}
	}
	switch v := val.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	}
	return "(none)"
}

func (w *walker) errorf(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

// compare checks that schema node n describes Go type t, as the decoder reads it.
func (w *walker) compare(path string, t reflect.Type, n map[string]any) {
	n = w.resolve(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	want := ""
	switch {
	case t == reflect.TypeFor[jobfile.Duration]():
		want = "string"
	case t == reflect.TypeFor[jobfile.Schema]():
		want = "object|string" // a mapping is an inline schema, a string a path or JSON text
	case t == reflect.TypeFor[sandbox.Spec]():
		want = "boolean|object" // true, false, or a mapping that opens more
	case t.Kind() == reflect.String:
		want = "string"
	case t.Kind() == reflect.Bool:
		want = "boolean"
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		want = "integer"
	case t.Kind() == reflect.Float64:
		want = "number"
	case t.Kind() == reflect.Slice:
		want = "array"
	case t.Kind() == reflect.Map, t.Kind() == reflect.Struct:
		want = "object"
	default:
		w.errorf("%s: Go type %s has no JSON Schema mapping in this test; teach it", path, t)
		return
	}
	if got := jsonType(n); got != want {
		w.errorf("%s: schema says %s, the decoder reads Go %s (JSON %s)", path, got, t, want)
		return
	}
	switch {
	case t == reflect.TypeFor[jobfile.Duration]():
		if _, ok := n["pattern"]; !ok {
			w.errorf("%s: a duration needs $ref: #/definitions/duration", path)
		}
	case t.Kind() == reflect.Slice:
		items, _ := n["items"].(map[string]any)
		w.compare(path+"[]", t.Elem(), items)
	case t.Kind() == reflect.Map:
		vals, _ := n["additionalProperties"].(map[string]any)
		w.compare(path+".*", t.Elem(), vals)
	case t.Kind() == reflect.Struct:
		w.compareStruct(path, t, n)
	}
}

func (w *walker) compareStruct(path string, t reflect.Type, n map[string]any) {
	props, _ := n["properties"].(map[string]any)
	if n["additionalProperties"] != false {
		w.errorf("%s: the decoder rejects unknown fields; the schema needs additionalProperties: false", path)
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag != "" && tag != "-" && t.Field(i).IsExported() {
			fields[tag] = t.Field(i).Type
		}
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p, ok := props[name].(map[string]any)
		if !ok {
			w.errorf("%s: the decoder reads field %q (%s.%s, Go %s) but schema/jobs.schema.json has no property for it: add one", path, name, t.PkgPath(), t.Name(), fields[name])
			continue
		}
		w.compare(path+"."+name, fields[name], p)
	}
	for name := range props {
		if _, ok := fields[name]; !ok {
			w.errorf("%s: schema/jobs.schema.json has property %q that %s.%s does not decode: remove it or add the field", path, name, t.PkgPath(), t.Name())
		}
	}
}

package jobfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Read reads and decodes the jobs file at path.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read jobs file: %w", err)
	}
	return Decode(path, data)
}

// Decode decodes a jobs file strictly: unknown keys, wrong types, duplicate
// keys, missing or duplicate names and jobs without a prompt are all reported
// at once, each with file:line:col, in a *DecodeError.
func Decode(path string, data []byte) (*File, error) {
	d := &decoder{file: path}
	f := &File{Path: path}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &DecodeError{Problems: []Problem{yamlSyntaxProblem(path, err)}}
	}
	if len(bytes.TrimSpace(data)) == 0 || root.Kind == 0 || len(root.Content) == 0 {
		return nil, &DecodeError{Problems: []Problem{{Pos: Pos{File: path, Line: 1, Col: 1}, Msg: "jobs file is empty"}}}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		d.errorf(doc, "jobs file must be a mapping with version and jobs, not %s", kindName(doc))
		return nil, d.err()
	}
	var versionSet, versionOK, jobsSet bool
	d.mapping(doc, func(key string, k, v *yaml.Node) {
		switch key {
		case "version":
			versionSet = true
			versionOK = d.scalar(v, &f.Version)
		case "concurrency":
			d.scalar(v, &f.Concurrency)
			if f.Concurrency < 0 {
				d.errorf(v, "concurrency must be 0 (number of CPUs) or more, not %d", f.Concurrency)
			}
		case "budget_usd":
			d.scalar(v, &f.BudgetUSD)
			if f.BudgetUSD < 0 {
				d.errorf(v, "budget_usd must not be negative")
			}
		case "stagger":
			d.scalar(v, &f.Stagger)
		case "limits":
			if d.scalar(v, &f.Limits) {
				d.validateLimits(v, f.Limits)
			}
		case "notify":
			f.Notify = d.notifyTargets(v)
		case "defaults":
			f.Defaults = d.job(v, true)
			f.defaultsSet = f.Defaults.set
		case "jobs":
			jobsSet = true
			if v.Kind != yaml.SequenceNode {
				d.errorf(v, "jobs must be a list, not %s", kindName(v))
				return
			}
			// Each job is decoded in place and its nodes let go at once:
			// the tree of a 10,000-job file is the largest heap a run has,
			// and it need not live beside the jobs decoded from it (issue 27).
			f.Jobs = make([]Job, len(v.Content))
			for i, item := range v.Content {
				d.jobInto(&f.Jobs[i], item, false)
				v.Content[i] = nil
			}
		default:
			d.errorf(k, "unknown field %q%s", key, Suggest(key, []string{"version", "concurrency", "budget_usd", "stagger", "limits", "notify", "defaults", "jobs"}))
		}
	})
	if !versionSet {
		d.errorf(doc, "missing version (write \"version: %d\" at the top)", Version)
	} else if versionOK && f.Version != Version {
		d.errorf(valueNode(doc, "version"), "unsupported version %d (this pneuma reads version %d)", f.Version, Version)
	}
	if !jobsSet {
		d.errorf(doc, "missing jobs (a list of jobs to run)")
	} else if jobs := valueNode(doc, "jobs"); jobs.Kind == yaml.SequenceNode && len(f.Jobs) == 0 {
		d.errorf(jobs, "jobs is empty")
	}
	d.validate(f)
	if err := d.err(); err != nil {
		return nil, err
	}
	if len(f.Defaults.set) > 0 {
		for i := range f.Jobs {
			f.Jobs[i].applyDefaults(&f.Defaults)
		}
	}
	return f, nil
}

type decoder struct {
	file     string
	problems []Problem
	// paths names the field of each node, for a request whose problems are
	// reported by field path rather than by line (nil for jobs files).
	paths map[*yaml.Node]string
}

func (d *decoder) pos(n *yaml.Node) Pos {
	return Pos{File: d.file, Line: n.Line, Col: n.Column, Path: d.paths[n]}
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	d.problems = append(d.problems, Problem{Pos: d.pos(n), Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) errorAt(p Pos, format string, args ...any) {
	d.problems = append(d.problems, Problem{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) err() error {
	if len(d.problems) == 0 {
		return nil
	}
	sort.SliceStable(d.problems, func(i, j int) bool {
		a, b := d.problems[i].Pos, d.problems[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return &DecodeError{Problems: d.problems}
}

// mapping calls f for each key of a mapping node, reporting duplicate keys and
// non-string keys itself.
func (d *decoder) mapping(n *yaml.Node, f func(key string, k, v *yaml.Node)) {
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "keys must be plain names")
			continue
		}
		if k.Tag == "!!merge" {
			d.errorf(k, "YAML merge keys (<<) are not supported; use defaults")
			continue
		}
		if prev, ok := seen[k.Value]; ok {
			d.errorf(k, "duplicate field %q (first at line %d)", k.Value, prev.Line)
			continue
		}
		seen[k.Value] = k
		f(k.Value, k, v)
	}
}

// scalar decodes v into dst, turning yaml's type errors into positioned
// problems. Mappings decoded into structs are checked for unknown keys first,
// since yaml.Node.Decode has no known-fields mode.
func (d *decoder) scalar(v *yaml.Node, dst any) bool {
	if !d.known(v, reflect.TypeOf(dst).Elem()) {
		return false
	}
	if err := v.Decode(dst); err != nil {
		d.errorf(v, "%s", typeErrorMessage(err, v, dst))
		return false
	}
	return true
}

// known reports unknown and duplicate keys of a mapping bound for a struct
// type (through pointers), recursively. It returns false when it found any.
func (d *decoder) known(n *yaml.Node, t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Map && n.Kind == yaml.MappingNode {
		// A map of structs (agents): each value is checked as its struct.
		ok := true
		for i := 1; i < len(n.Content); i += 2 {
			ok = d.known(n.Content[i], t.Elem()) && ok
		}
		return ok
	}
	if t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode || t == reflect.TypeFor[Duration]() {
		return true
	}
	fields := map[string]reflect.Type{}
	var names []string
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag != "" && tag != "-" {
			fields[tag] = t.Field(i).Type
			names = append(names, tag)
		}
	}
	ok := true
	d.mapping(n, func(key string, k, v *yaml.Node) {
		ft, found := fields[key]
		if !found {
			d.errorf(k, "unknown field %q%s", key, Suggest(key, names))
			ok = false
			return
		}
		if !d.known(v, ft) {
			ok = false
		}
	})
	return ok
}

// job decodes one job mapping (or the defaults mapping).
func (d *decoder) job(n *yaml.Node, isDefaults bool) Job {
	var j Job
	d.jobInto(&j, n, isDefaults)
	return j
}

// jobInto decodes the job (or the defaults) at n into j.
func (d *decoder) jobInto(j *Job, n *yaml.Node, isDefaults bool) {
	*j = Job{Pos: d.pos(n), set: map[string]bool{}, pos: map[string]Pos{}}
	if n.Kind != yaml.MappingNode {
		what := "a job"
		if isDefaults {
			what = "defaults"
		}
		d.errorf(n, "%s must be a mapping of fields, not %s", what, kindName(n))
		return
	}
	rv := reflect.ValueOf(j).Elem()
	d.mapping(n, func(key string, k, v *yaml.Node) {
		idx, ok := jobFields[key]
		if !ok {
			d.errorf(k, "unknown job field %q%s", key, Suggest(key, jobFieldNames()))
			return
		}
		if isDefaults && key == "name" {
			d.errorf(k, "defaults cannot set name")
			return
		}
		field := rv.Field(idx)
		if !d.scalar(v, field.Addr().Interface()) {
			return
		}
		j.set[key] = true
		j.pos[key] = d.pos(v)
	})
}

func typeErrorMessage(err error, v *yaml.Node, dst any) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg := te.Errors[0]
		// yaml's "line N: cannot unmarshal !!str `abc` into int" -> plain words.
		if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "line ") && i > 0 {
			msg = msg[i+2:]
		}
		want := typeName(reflect.TypeOf(dst).Elem())
		if strings.HasPrefix(msg, "cannot unmarshal") {
			return fmt.Sprintf("expected %s, got %s", want, describeNode(v))
		}
		return msg
	}
	return err.Error()
}

func typeName(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Duration]():
		return "a duration such as 90s"
	case reflect.TypeFor[*bool]():
		return "true or false"
	}
	switch t.Kind() {
	case reflect.Int:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(typeName(t.Elem()), "a ") + "s"
	case reflect.Map:
		return "a mapping of names to strings"
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return t.String()
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		return fmt.Sprintf("%q", v)
	default:
		return kindName(n)
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func valueNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return m
}

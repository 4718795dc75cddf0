package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// MarshalJSON writes r with empty lists as [] rather than null, as the schema
// requires, so consumers can iterate without checking for null.
func (r Report) MarshalJSON() ([]byte, error) {
	if r.source != nil {
		l, err := r.Load()
		if err != nil {
			return nil, err
		}
		r = *l
	}
	type plain Report
	p := plain(r)
	if p.Jobs == nil {
		p.Jobs = []Job{}
	}
	return json.Marshal(p)
}

// Denials are a job's permission denials. Empty, they are written as []
// rather than null, as the schema requires. (A MarshalJSON on Job did
// that before; encoding/json then re-scanned and compacted every job's
// whole encoding: 6% of the sampled CPU of a 1,000-job run, issue 27.)
type Denials []PermissionDenial

// MarshalJSON writes d, [] when empty.
func (d Denials) MarshalJSON() ([]byte, error) {
	if len(d) == 0 {
		return []byte("[]"), nil
	}
	return json.Marshal([]PermissionDenial(d))
}

// Encode returns r as indented JSON ending in a newline, the form WriteJSON
// stores.
func Encode(r *Report) ([]byte, error) {
	var b bytes.Buffer
	if err := EncodeTo(&b, r, true); err != nil {
		return nil, err
	}
	return append(b.Bytes(), '\n'), nil
}

// WriteJSON writes r to path as indented JSON. It writes a temporary file in
// the same directory, syncs it and renames it over path, so a reader never
// sees a partial report, even if pneuma is killed while writing.
func WriteJSON(path string, r *Report) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			// Clean-up after a failure; its own errors would hide the cause.
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	// One job at a time: a report of ten thousand jobs is never in memory whole.
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := EncodeTo(bw, r, true); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := bw.WriteByte('\n'); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	// CreateTemp makes the file 0600; a report is meant to be shared (CI
	// artifacts, other users of the checkout).
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write report %s: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename in dir durable. It is best effort: some file systems
// refuse to sync a directory, and the report itself is already on disk.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close() // read-only directory handle: nothing to flush
}

// ReadJSON reads the report at path. It refuses a file whose schema is not
// "pneuma.report/v1" rather than guess at another version's meaning. Fields it
// does not know are ignored (v1 may gain fields); use Validate for a strict
// check.
func ReadJSON(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	r, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	return r, nil
}

// Decode parses a report held in memory, with the same rules as ReadJSON.
func Decode(data []byte) (*Report, error) {
	var head struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not a pneuma report: %w", err)
	}
	switch {
	case head.Schema == nil:
		return nil, errors.New(`not a pneuma report: no "schema" field`)
	case *head.Schema != Schema:
		return nil, fmt.Errorf("unsupported report schema %q (this pneuma reads %q)", *head.Schema, Schema)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	return &r, nil
}

package history

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkScanUsage scans the projects tree of $HISTORY_BENCH_CONFIG (a
// config directory such as scripts/bench-history.sh generates) as `history
// usage --no-cache` does. Skipped without it.
func BenchmarkScanUsage(b *testing.B) {
	benchScan(b, false)
}

// BenchmarkScanList is BenchmarkScanUsage as `history list --no-cache` scans.
func BenchmarkScanList(b *testing.B) {
	benchScan(b, true)
}

func benchScan(b *testing.B, summary bool) {
	dir := os.Getenv("HISTORY_BENCH_CONFIG")
	if dir == "" {
		b.Skip("HISTORY_BENCH_CONFIG is not set")
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := Scan(context.Background(), dir, ScanOptions{Summary: summary})
		if err != nil {
			b.Fatal(err)
		}
		if c.FilesRead == 0 {
			b.Fatal("no file read")
		}
	}
}

// BenchmarkLineReaders reads the lines of the first files of
// $HISTORY_BENCH_CONFIG as a usage scan does: scanHead of every line, and
// scanLineFrom of the model's (those whose head has no type).
func BenchmarkLineReaders(b *testing.B) {
	dir := os.Getenv("HISTORY_BENCH_CONFIG")
	if dir == "" {
		b.Skip("HISTORY_BENCH_CONFIG is not set")
	}
	files, err := filepath.Glob(filepath.Join(dir, "projects", "*", "*.jsonl"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no transcripts under %s: %v", dir, err)
	}
	var lines, model [][]byte
	var size, modelSize int64
	for _, f := range files[:min(len(files), 300)] {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		for l := range bytes.Lines(data) {
			l = bytes.TrimSuffix(l, []byte("\n"))
			lines, size = append(lines, l), size+int64(len(l))
			var li lineInfo
			if _, typed := scanHead(l, &li); !typed {
				model, modelSize = append(model, l), modelSize+int64(len(l))
			}
		}
	}
	var li lineInfo
	b.Run("scanHead", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			for _, l := range lines {
				scanHead(l, &li)
			}
		}
	})
	b.Run("scanLineFrom", func(b *testing.B) {
		b.SetBytes(modelSize)
		for b.Loop() {
			for _, l := range model {
				from, _ := scanHead(l, &li)
				_ = scanLineFrom(l, &li, from, false)
			}
		}
	})
}

func BenchmarkParseUsage(b *testing.B) {
	raw := []byte(`{"input_tokens":822,"cache_creation_input_tokens":1886,"cache_read_input_tokens":11172,"output_tokens":95,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":1886},"inference_geo":"","iterations":[],"speed":"standard"}`)
	b.ReportAllocs()
	var u Usage
	for b.Loop() {
		if err := parseUsage(raw, &u); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallKey(b *testing.B) {
	msg, req := []byte(`msg_01a2b638117b63a8a3abc0e4`), []byte(`req_01405f6d3924ebd9445b5197`)
	b.ReportAllocs()
	for b.Loop() {
		sumKey(msg, req)
	}
}

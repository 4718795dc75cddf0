package history

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
)

func microLines(b *testing.B) (asst, user [][]byte) {
	files, _ := filepath.Glob(os.Getenv("HISTORY_BENCH_CONFIG") + "/projects/*/*.jsonl")
	for _, f := range files[:300] {
		fh, _ := os.Open(f)
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 8<<20), 8<<20)
		for sc.Scan() {
			l := append([]byte(nil), sc.Bytes()...)
			var hl lineInfo
			if _, ok := scanHead(l, &hl); ok {
				typ := hl.typ
				if strIs(typ, "user") {
					user = append(user, l)
				}
			} else {
				asst = append(asst, l)
			}
		}
		fh.Close()
	}
	return
}

func BenchmarkMicro(b *testing.B) {
	asst, user := microLines(b)
	var na, nu int
	for _, l := range asst {
		na += len(l)
	}
	for _, l := range user {
		nu += len(l)
	}
	b.Logf("%d assistant lines %d MB, %d user lines %d MB", len(asst), na>>20, len(user), nu>>20)
	var li lineInfo
	b.Run("scanLine", func(b *testing.B) {
		b.SetBytes(int64(na))
		for b.Loop() {
			for _, l := range asst {
				scanLine(l, &li, false)
			}
		}
	})
	b.Run("leadingType", func(b *testing.B) {
		for b.Loop() {
			for _, l := range user {
				scanHead(l, &li)
			}
		}
	})
	b.Run("leadingTypeAsst", func(b *testing.B) {
		for b.Loop() {
			for _, l := range asst {
				scanHead(l, &li)
			}
		}
	})
	s := newScanner(false)
	fs := &fileScan{}
	b.Run("addCall", func(b *testing.B) {
		for b.Loop() {
			seen := map[[2]uint64]int{}
			models := map[string]string{}
			fs.calls = fs.calls[:0]
			for _, l := range asst {
				scanLine(l, &s.li, false)
				if s.li.usage != nil {
					s.addCall(fs, &s.li, parseTime(s.li.timestamp), seen, models)
				}
			}
		}
	})
}

func BenchmarkParseUsage(b *testing.B) {
	raw := []byte(`{"input_tokens":822,"cache_creation_input_tokens":1886,"cache_read_input_tokens":11172,"output_tokens":95,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":1886},"inference_geo":"","iterations":[],"speed":"standard"}`)
	var u Usage
	for b.Loop() {
		parseUsage(raw, &u)
	}
}

func BenchmarkRawCallKey(b *testing.B) {
	s := newScanner(false)
	for b.Loop() {
		s.rawCallKey([]byte(`"msg_01a2b638117b63a8a3abc0e4"`), []byte(`"req_01405f6d3924ebd9445b5197"`))
	}
}

package usage

import (
	"encoding/json"
	"testing"
)

func TestTokensAddAndTotal(t *testing.T) {
	a := Tokens{InputTokens: 1, OutputTokens: 2, CacheReadInputTokens: 3, CacheCreationInputTokens: 4}
	a.Add(Tokens{InputTokens: 10, OutputTokens: 20, CacheReadInputTokens: 30, CacheCreationInputTokens: 40})
	if want := (Tokens{11, 22, 33, 44}); a != want {
		t.Fatalf("Add = %+v, want %+v", a, want)
	}
	if a.Total() != 110 {
		t.Fatalf("Total = %d, want 110", a.Total())
	}
}

// The JSON shape is the API's: reports and the CLI's stream share it.
func TestTokensJSON(t *testing.T) {
	var u Tokens
	line := `{"input_tokens":5,"output_tokens":6,"cache_read_input_tokens":7,"cache_creation_input_tokens":8,"service_tier":"standard"}`
	if err := json.Unmarshal([]byte(line), &u); err != nil {
		t.Fatal(err)
	}
	if u != (Tokens{5, 6, 7, 8}) {
		t.Fatalf("decoded %+v", u)
	}
	b, _ := json.Marshal(u)
	if string(b) != `{"input_tokens":5,"output_tokens":6,"cache_read_input_tokens":7,"cache_creation_input_tokens":8}` {
		t.Fatalf("encoded %s", b)
	}
}

// Package usage holds the one token-usage type that the CLI's stream, the
// report and the transcript reader share: the API's four token counts, in its
// snake_case JSON shape.
package usage

// Tokens is the token usage of an API response, a turn, a job or a run, as
// the Messages API and the Claude Code CLI report it.
type Tokens struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// Add adds o to t.
func (t *Tokens) Add(o Tokens) {
	t.InputTokens += o.InputTokens
	t.OutputTokens += o.OutputTokens
	t.CacheReadInputTokens += o.CacheReadInputTokens
	t.CacheCreationInputTokens += o.CacheCreationInputTokens
}

// Total is the sum of every kind of token.
func (t Tokens) Total() int64 {
	return t.InputTokens + t.OutputTokens + t.CacheReadInputTokens + t.CacheCreationInputTokens
}

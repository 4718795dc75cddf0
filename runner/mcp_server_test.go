package runner_test

import (
	"bufio"
	"encoding/json"
	"os"
)

// mcpServerEnv makes the test binary a minimal MCP stdio server (one tool,
// "ping", answering "mcp-ok"), for jobs whose MCP server must work inside
// their sandbox.
const mcpServerEnv = "PNEUMA_TEST_MCP_SERVER"

// runMCPServerIfRequested serves MCP on stdin and stdout and exits, when
// the process was started as the test MCP server.
func runMCPServerIfRequested() {
	if os.Getenv(mcpServerEnv) != "1" {
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue // a notification
		}
		resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		switch req.Method {
		case "initialize":
			resp["result"] = map[string]any{"protocolVersion": req.Params.ProtocolVersion,
				"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "probe", "version": "1"}}
		case "tools/list":
			resp["result"] = map[string]any{"tools": []any{map[string]any{"name": "ping", "description": "Answers mcp-ok.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{}}}}}
		case "tools/call":
			resp["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "mcp-ok"}}}
		case "ping":
			resp["result"] = map[string]any{}
		default:
			resp["error"] = map[string]any{"code": -32601, "message": "method not found"}
		}
		if out.Encode(resp) != nil {
			os.Exit(1)
		}
	}
	os.Exit(0)
}

package runner

import (
	"context"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
)

// expect: {mcp: true} must stop a job before money is spent. The CLI writes
// its init line (with mcp_servers) only once the first prompt arrives, and
// sends that prompt to the API at once: stopped at the init line, the job
// has paid for an answer already (docs/claude-cli.md, section 7). So a job
// that expects its MCP servers asks the CLI for their state (mcp_status)
// before its first prompt, until none is still starting.

const (
	// mcpPoll is how often the check asks again while a server is pending.
	mcpPoll = 100 * time.Millisecond
	// mcpWait bounds the check: a server still pending then is left to the
	// init line (the CLI's own MCP start timeout is 30 s).
	mcpWait = 30 * time.Second
)

// mcpCheck asks a CLI for its MCP servers' state in the background, so that
// the driver's loop goes on draining events meanwhile; the answer arrives
// on c.
type mcpCheck struct {
	c      chan []claude.MCPServer // nil once the answer was taken
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startMCPCheck polls p's mcp_status until no server is pending, a server
// failed, or mcpWait passed. It answers the last state it got (nil when the
// CLI does not answer mcp_status: the init line decides then).
func startMCPCheck(ctx context.Context, p *claude.Process) *mcpCheck {
	ctx, cancel := context.WithTimeout(ctx, mcpWait)
	m := &mcpCheck{c: make(chan []claude.MCPServer, 1), cancel: cancel}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		var last []claude.MCPServer
		for {
			servers, err := p.MCPStatus(ctx)
			if err == nil {
				last = servers
			}
			if err != nil || len(failedMCP(servers)) > 0 || !mcpPending(servers) || !sleep(ctx, mcpPoll) {
				m.c <- last
				return
			}
		}
	}()
	return m
}

// close ends a running check and waits for it.
func (m *mcpCheck) close() {
	m.cancel()
	m.wg.Wait()
}

// mcpPending reports whether a server is still starting.
func mcpPending(servers []claude.MCPServer) bool {
	for _, s := range servers {
		if s.Status == "pending" {
			return true
		}
	}
	return false
}

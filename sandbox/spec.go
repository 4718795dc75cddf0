package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Spec is a job's sandbox field: `true` for the defaults, `false` to opt
// out, or a mapping that opens more than the defaults.
type Spec struct {
	// Enabled is false for `sandbox: false`.
	Enabled bool `yaml:"-" json:"enabled"`
	// Network lists the hosts ("example.com", ports 443 and 80) and
	// host:port pairs the proxy lets the job reach besides the API.
	Network []string `yaml:"network" json:"network,omitempty"`
	// Read and Write are paths bound in read-only and writable.
	Read  []string `yaml:"read" json:"read,omitempty"`
	Write []string `yaml:"write" json:"write,omitempty"`
}

// On reports whether s asks for a sandbox (nil does not).
func (s *Spec) On() bool { return s != nil && s.Enabled }

// specFields is the mapping form, decoded without the custom unmarshalers.
type specFields struct {
	Network []string `yaml:"network" json:"network"`
	Read    []string `yaml:"read" json:"read"`
	Write   []string `yaml:"write" json:"write"`
	Enabled *bool    `yaml:"-" json:"enabled"`
}

const specForm = "sandbox must be true, false or a mapping of network, read and write"

// UnmarshalYAML reads `true`, `false` or a mapping of network, read and
// write lists.
func (s *Spec) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var b bool
		if n.Tag != "!!bool" || n.Decode(&b) != nil {
			return fmt.Errorf("%s, not %q", specForm, n.Value)
		}
		*s = Spec{Enabled: b}
		return nil
	case yaml.MappingNode:
		var f specFields
		if err := n.Decode(&f); err != nil {
			return fmt.Errorf("%s: %v", specForm, err)
		}
		*s = Spec{Enabled: true, Network: f.Network, Read: f.Read, Write: f.Write}
		return s.Validate()
	}
	return errors.New(specForm + ", not a list")
}

// UnmarshalJSON reads `true`, `false` or an object of network, read and
// write lists (and enabled, as MarshalJSON writes it).
func (s *Spec) UnmarshalJSON(b []byte) error {
	var on bool
	if err := json.Unmarshal(b, &on); err == nil {
		*s = Spec{Enabled: on}
		return nil
	}
	var f specFields
	if err := json.Unmarshal(b, &f); err != nil {
		return errors.New(specForm)
	}
	*s = Spec{Enabled: f.Enabled == nil || *f.Enabled, Network: f.Network, Read: f.Read, Write: f.Write}
	return s.Validate()
}

// Validate checks the network entries and paths.
func (s *Spec) Validate() error {
	for _, h := range s.Network {
		if _, err := parseHost(h); err != nil {
			return fmt.Errorf("sandbox.network: %w", err)
		}
	}
	for _, list := range []struct {
		key   string
		paths []string
	}{{"read", s.Read}, {"write", s.Write}} {
		for _, p := range list.paths {
			if strings.TrimSpace(p) == "" || strings.ContainsRune(p, 0) {
				return fmt.Errorf("sandbox.%s: %q is not a path", list.key, p)
			}
		}
	}
	return nil
}

// hostPort is one allowed destination; port 0 stands for 443 and 80.
type hostPort struct {
	host string
	port int
}

// parseHost reads "host" or "host:port" ("[::1]:8080" for IPv6).
func parseHost(s string) (hostPort, error) {
	if s == "" || strings.ContainsAny(s, "/ \t@?#") {
		return hostPort{}, fmt.Errorf("%q is not a host or host:port (no scheme, no path)", s)
	}
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		host, portStr = s, ""
		if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); ip != nil {
			host = ip.String() // a bare IPv6 address, with or without brackets
		}
	}
	host = strings.ToLower(host)
	if !validHost(host) {
		return hostPort{}, fmt.Errorf("%q is not a host or host:port", s)
	}
	if portStr == "" {
		return hostPort{host: host}, nil
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return hostPort{}, fmt.Errorf("%q is not a host:port with a port from 1 to 65535", s)
	}
	return hostPort{host: host, port: port}, nil
}

// validHost accepts a DNS name or an IP address.
func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return false
		}
	}
	return true
}

// loopback reports whether host names the local machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/notify"
	"github.com/pneuma-cli/pneuma/serve"
)

// serve says at start-up whether permission notifications carry approval
// links: without --public-url they cannot.
func TestSayApprovalLinks(t *testing.T) {
	n, err := notify.New([]notify.Target{{URL: "http://127.0.0.1:1/h"}}, notify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	for _, tc := range []struct {
		public, want string
	}{
		{"", "carry no approval link: give --public-url"},
		{"https://pneuma.example", "carry approval links, each good for one decision within 10m0s"},
	} {
		srv, err := serve.New(serve.Config{Token: "t-0123456789abcdef", StateDir: t.TempDir(), Notifier: n, PublicURL: tc.public})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		sayApprovalLinks(&IO{ErrOut: &out}, n, srv)
		_ = srv.Shutdown(context.Background())
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("public url %q: %q, want %q", tc.public, out.String(), tc.want)
		}
	}
	var out bytes.Buffer
	sayApprovalLinks(&IO{ErrOut: &out}, nil, nil)
	if out.Len() != 0 {
		t.Errorf("without targets: %q", out.String())
	}
}

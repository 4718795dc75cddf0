package browser

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// TestBrowser starts Chromium, loads a page with one known accessibility
// defect (an image without alternative text) and checks that the
// screenshot is a PNG, the colour scheme is emulated and axe finds the defect.
func TestBrowser(t *testing.T) {
	b := New(t)
	axe := AxeSource(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><html lang="en"><title>t</title><main><h1>Hello</h1><img src="data:,"></main>`))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	tab := b.Tab(t, Viewport{Width: 375, Height: 600, Dark: true})
	if err := chromedp.Do(tab, chromedp.Navigate("http://"+ln.Addr().String()+"/")); err != nil {
		t.Fatal(err)
	}
	dark, err := chromedp.Run(tab, chromedp.Evaluate[bool](`matchMedia('(prefers-color-scheme: dark)').matches`))
	if err != nil || !dark {
		t.Errorf("prefers-color-scheme dark not emulated (%v, %v)", dark, err)
	}
	width, err := chromedp.Run(tab, chromedp.Evaluate[int](`innerWidth`))
	if err != nil || width != 375 {
		t.Errorf("innerWidth = %d (%v), want 375", width, err)
	}
	path := filepath.Join(t.TempDir(), "shot.png")
	Screenshot(t, tab, path)
	png, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("screenshot is not a PNG (%v)", err)
	}
	found := false
	for _, v := range Axe(t, tab, axe) {
		if v.ID == "image-alt" {
			found = true
		}
	}
	if !found {
		t.Error("axe did not report the image without alt text")
	}
}

// TestFrameStyle reads the computed style inside a scriptless sandboxed
// srcdoc frame: the frame's inline style applies on a page without a CSP and
// is blocked on a page whose CSP (which the frame inherits) forbids it.
func TestFrameStyle(t *testing.T) {
	b := New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/csp" {
			w.Header().Set("Content-Security-Policy", "style-src 'self'")
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><html lang="en"><title>t</title>` +
			`<iframe class="x" sandbox="" srcdoc="<style>body{max-width:123px}</style><p>hi"></iframe>`))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	for path, want := range map[string]string{"/": "123px", "/csp": "none"} {
		tab := b.Tab(t, Viewport{Width: 800, Height: 600})
		if err := chromedp.Do(tab, chromedp.Navigate("http://"+ln.Addr().String()+path)); err != nil {
			t.Fatal(err)
		}
		var got string
		poll.Until(10*time.Second, func() bool {
			got, err = FrameStyle(tab, "x", "max-width")
			return err == nil
		})
		if err != nil || got != want {
			t.Errorf("%s: max-width in the frame %q (%v), want %q", path, got, err, want)
		}
	}
}

package web

import (
	"io"
	"io/fs"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSize keeps the console under the 300 KB the issue allows in all.
func TestSize(t *testing.T) {
	const limit = 300 * 1024
	total := 0
	err := fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(FS(), p)
		total += len(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > limit {
		t.Errorf("embedded console is %d bytes, over the %d limit", total, limit)
	}
	if total < 10*1024 {
		t.Errorf("embedded console is only %d bytes: files missing from the embed?", total)
	}
}

func TestHandler(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
		ctype, body  string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", `<script type="module" src="js/app.js">`},
		{"GET", "/app.css", 200, "text/css; charset=utf-8", "prefers-color-scheme"},
		{"GET", "/js/app.js", 200, "text/javascript; charset=utf-8", "import"},
		{"HEAD", "/js/dom.js", 200, "text/javascript; charset=utf-8", ""},
		{"GET", "/index.html", 301, "", ""},
		{"GET", "/js/", 404, "", ""},
		{"GET", "/nope.js", 404, "", ""},
		{"GET", "/../web.go", 404, "", ""},
		{"POST", "/", 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Handler().ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if tt.ctype != "" && res.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", res.Header.Get("Content-Type"), tt.ctype)
			}
			if tt.status == 200 && res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no X-Content-Type-Options: nosniff")
			}
			if !strings.Contains(string(body), tt.body) {
				t.Errorf("body does not contain %q", tt.body)
			}
		})
	}
}

// TestNoInlineCode: the server's CSP allows no inline script or style, so
// none may be written into the HTML, and no module may turn strings into
// code or HTML.
func TestNoInlineCode(t *testing.T) {
	banned := map[string][]string{
		".html": {"<script>", "style=", " on", "javascript:"},
		".js":   {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute('style'", "setAttribute('on"},
	}
	err := fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		for ext, words := range banned {
			if !strings.HasSuffix(p, ext) {
				continue
			}
			for _, w := range words {
				if ext == ".html" && w == " on" {
					for _, attr := range []string{" onclick=", " onload=", " onerror=", " onsubmit="} {
						if strings.Contains(strings.ToLower(string(b)), attr) {
							t.Errorf("%s has an inline handler %q", p, attr)
						}
					}
					continue
				}
				if strings.Contains(string(b), w) {
					t.Errorf("%s contains %q", p, w)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

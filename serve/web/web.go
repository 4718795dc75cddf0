// Package web is the browser console of pneuma serve: static HTML, CSS and
// JavaScript modules embedded in the binary. No build step, no third-party
// request, and nothing in it parses server data as HTML, so it runs under a
// Content-Security-Policy without inline scripts or styles.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

//go:embed index.html app.css js
var files embed.FS

// FS returns the console's files (index.html at the root).
func FS() fs.FS { return files }

// Handler serves the console: index.html at /, the stylesheet and the
// modules by name, 404 for anything else. It sets the content type from the
// name, forbids sniffing, and asks for revalidation (the names carry no hash,
// so a long cache would keep an old console after an upgrade).
func Handler() http.Handler {
	fsrv := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := path.Clean("/" + r.URL.Path)
		if p != "/" {
			if fi, err := fs.Stat(files, p[1:]); err != nil || fi.IsDir() {
				http.NotFound(w, r)
				return
			}
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		if path.Ext(p) == ".js" {
			h.Set("Content-Type", "text/javascript; charset=utf-8")
		}
		fsrv.ServeHTTP(w, r)
	})
}

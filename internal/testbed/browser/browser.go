// Package browser runs headless Chromium for tests, driven through the
// DevTools protocol with chromedp: one browser per test with a bounded
// lifetime, a tab per page, screenshots to files, an axe-core
// accessibility check and computed styles inside sandboxed frames.
//
//	b := browser.New(t)                       // skips (fails in CI) without chromium
//	tab := b.Tab(t, browser.Viewport{Width: 375, Height: 800, Dark: true})
//	chromedp.Do(tab, chromedp.Navigate(url))
//	browser.Screenshot(t, tab, "page.png")
//	v := browser.Axe(t, tab, browser.AxeSource(t)) // serious and critical violations
//	mw, err := browser.FrameStyle(tab, "transcript", "max-width") // inside a scriptless frame
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
)

// EnvChromium names the environment variable that points tests at a
// Chromium binary; by default it is looked up on PATH.
const EnvChromium = "PNEUMA_TEST_CHROMIUM"

// EnvAxe names the environment variable that points tests at axe.min.js;
// by default it is the copy `make axe` installs under the module root.
const EnvAxe = "PNEUMA_TEST_AXE"

const cachedAxe = ".cache/axe/node_modules/axe-core/axe.min.js"

// Lifetime bounds a browser that New starts.
const Lifetime = 3 * time.Minute

// Browser is one headless Chromium process.
type Browser struct {
	ctx context.Context // the browser's own context: cancelling it ends the process
}

// Chromium returns the path of the Chromium binary: $PNEUMA_TEST_CHROMIUM,
// else chromium or chromium-browser on PATH. When there is none the test
// fails if CI=true and is skipped otherwise.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing(t, "chromium is not installed (looked at $"+EnvChromium+" and PATH): run `make test-deps` or apt-get install chromium")
	return ""
}

// missing fails the test in CI and skips it elsewhere.
func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// New starts headless Chromium for the test; it is killed when the test
// ends or after Lifetime, whichever comes first. Under -short the test is
// skipped: a browser takes seconds to start.
func New(t testing.TB) *Browser {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping a browser test in -short mode")
	}
	bin := Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Sandboxed frames in the page's own process: their DOM is then in
		// the tab's DOM tree, where FrameStyle reads it.
		chromedp.Flag("disable-features", "IsolateSandboxedIframes"),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to start as root with its sandbox on; tests in
		// containers run as root, and the pages they load are our own.
		opts = append(opts, chromedp.NoSandbox)
	}
	base, stop := context.WithTimeout(context.Background(), Lifetime)
	alloc, cancelAlloc := chromedp.NewExecAllocator(base, opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc() // waits for the process to exit and removes its profile
		stop()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", bin, err)
	}
	return &Browser{ctx: ctx}
}

// Viewport is a tab's window size and colour scheme.
type Viewport struct {
	Width, Height int64
	Dark          bool
}

// String names a viewport for file names and subtests: 375-light.
func (v Viewport) String() string {
	scheme := "light"
	if v.Dark {
		scheme = "dark"
	}
	return fmt.Sprintf("%d-%s", v.Width, scheme)
}

// Tab opens a new tab with the viewport; it is closed when the test ends.
func (b *Browser) Tab(t testing.TB, v Viewport) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, Emulate(v)); err != nil {
		t.Fatalf("open tab %s: %v", v, err)
	}
	return ctx
}

// Emulate sets a tab's viewport and prefers-color-scheme.
func Emulate(v Viewport) chromedp.Action[chromedp.Void] {
	scheme := "light"
	if v.Dark {
		scheme = "dark"
	}
	media := chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	})
	return chromedp.Steps(chromedp.EmulateViewport(v.Width, v.Height), media)
}

// Screenshot saves the whole page as a PNG at path (directories created).
func Screenshot(t testing.TB, ctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("write screenshot: %v", err)
	}
}

// Violation is one axe-core rule the page breaks.
type Violation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

func (v Violation) String() string {
	return fmt.Sprintf("%s (%s): %s at %s", v.ID, v.Impact, v.Help, strings.Join(v.Targets, ", "))
}

// AxeSource returns axe.min.js: $PNEUMA_TEST_AXE, else the copy `make axe`
// installs. When there is none the test fails if CI=true and is skipped
// otherwise.
func AxeSource(t testing.TB) string {
	t.Helper()
	path := os.Getenv(EnvAxe)
	if path == "" {
		if root, err := claudetest.ModuleRoot(); err == nil {
			path = filepath.Join(root, cachedAxe)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		missing(t, "axe-core is not installed (looked at $"+EnvAxe+" and "+cachedAxe+"): run `make axe`")
	}
	return string(b)
}

// axeRun runs every rule axe-core has for WCAG 2 A and AA plus its best
// practices, and returns the serious and critical violations.
const axeRun = `(async () => {
  const r = await axe.run(document, {resultTypes: ['violations']});
  return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => ({id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map(n => n.target.join(' '))}));
})()`

// Axe injects axe-core (source from AxeSource) into the page and returns
// its serious and critical violations.
func Axe(t testing.TB, ctx context.Context, source string) []Violation {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](source+";undefined")); err != nil {
		t.Fatalf("inject axe-core: %v", err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]Violation](axeRun, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("run axe-core: %v", err)
	}
	return out
}

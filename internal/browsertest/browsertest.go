// Package browsertest runs headless Chromium for the tests of invoiced's
// pages (the console, the receipt) and measures their layout there: what
// reaches past the page's right edge, and which numbers break across
// lines. A page is tested in a real browser, not by reading its HTML.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// Start starts headless Chromium (Debian's chromium, which scripts/chromium
// installs; make test runs it) with a fresh profile and returns its
// context, ended when t ends. It fails, never skips, when Chromium is
// missing.
func Start(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: run scripts/chromium (as root it apt-installs Debian's chromium; make test does this): %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// Timeout bounds each Do.
const Timeout = 30 * time.Second

// Do runs steps on the browser of ctx, within Timeout, and fails t naming
// what when they fail.
func Do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Text returns the text of the first element of the page of ctx that CSS
// selector sel matches, and fails t when there is none within Timeout.
func Text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// Media returns an action that lays pages out for media ("print" or
// "screen"), as a printer driver or a screen would.
func Media(media string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: media})
		return err
	})
}

// MMToPx returns mm millimetres in CSS pixels (96 to the inch), rounded
// down: a page laid out at that width fits the paper.
func MMToPx(mm float64) int64 { return int64(mm / 25.4 * 96) }

// layoutJS measures the current page: every rendered element of body that
// reaches past the viewport's right edge (or starts left of 0 and shows),
// whether the page scrolls sideways, every element matching the selector
// given whose text runs over more than one line, and every document
// number in the page's text (letters or digits, a slash, ending in a
// digit: CH1/26-27/00001) that does.
const layoutJS = `((oneLine) => {
	const W = document.documentElement.clientWidth;
	const name = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
		(el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") +
		' "' + (el.textContent || "").trim().replace(/\s+/g, " ").slice(0, 40) + '"';
	const out = {width: W, overflows: [], broken: []};
	if (document.documentElement.scrollWidth > W + 0.5) {
		out.overflows.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " px wide");
	}
	for (const el of document.body.querySelectorAll("*")) {
		const r = el.getBoundingClientRect();
		if (r.width === 0 && r.height === 0) continue;
		if (r.right > W + 0.5 || (r.left < -0.5 && r.right > 0)) {
			out.overflows.push(name(el) + " spans " + Math.round(r.left) + ".." + Math.round(r.right) + " px");
		}
	}
	const lines = range => {
		const bottoms = new Set();
		for (const rect of range.getClientRects()) {
			if (rect.width > 0) bottoms.add(Math.round(rect.bottom));
		}
		return bottoms.size;
	};
	if (oneLine) {
		for (const el of document.querySelectorAll(oneLine)) {
			const range = document.createRange();
			range.selectNodeContents(el);
			const n = lines(range);
			if (n > 1) out.broken.push(name(el) + " runs over " + n + " lines");
		}
	}
	// Document numbers wherever they stand in text: CH1/26-27/00001.
	const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let node = walker.nextNode(); node; node = walker.nextNode()) {
		for (const m of node.data.matchAll(/[A-Z0-9][A-Z0-9-]*\/[A-Z0-9/-]*[0-9]/g)) {
			const range = document.createRange();
			range.setStart(node, m.index);
			range.setEnd(node, m.index + m[0].length);
			const n = lines(range);
			if (n > 1) out.broken.push('the number "' + m[0] + '" runs over ' + n + " lines");
		}
	}
	return JSON.stringify(out);
})(%s)`

// Layout is what Measure found on a page.
type Layout struct {
	Width     int      `json:"width"`     // the viewport's width, CSS px
	Overflows []string `json:"overflows"` // elements past the right edge
	Broken    []string `json:"broken"`    // one-line elements and numbers that broke
}

// Measure lays out the current page of ctx and returns its Layout; the
// elements matching oneLine ("" for none) and every document number in
// the text must each fit on one line. It fails when the page cannot be
// evaluated.
func Measure(ctx context.Context, oneLine string) (Layout, error) {
	sel, err := json.Marshal(oneLine)
	if err != nil {
		return Layout{}, err
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(layoutJS, sel)))
	if err != nil {
		return Layout{}, err
	}
	var l Layout
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		return Layout{}, err
	}
	return l, nil
}

// ScreenshotDir is where the tests save a screenshot of each page:
// $CONSOLE_SCREENSHOTS when set (make console-screenshots sets docs/img),
// else a temporary directory of t.
func ScreenshotDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("CONSOLE_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// Shoot saves a full-page screenshot of the current page of ctx as
// dir/name.png.
func Shoot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

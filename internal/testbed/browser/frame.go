package browser

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/chromedp"
)

// FrameStyle returns the computed value of a CSS property of the <body> of
// the document inside the first iframe with class class. It reads through
// DevTools, so it works on frames that run no script (a sandbox without
// allow-scripts), where evaluating JavaScript cannot.
func FrameStyle(ctx context.Context, class, property string) (string, error) {
	depth, pierce := int64(-1), true
	doc, err := chromedp.Call(ctx, dom.GetDocument, dom.GetDocumentParams{Depth: &depth, Pierce: &pierce})
	if err != nil {
		return "", fmt.Errorf("get document: %w", err)
	}
	frame := find(doc.Root, func(n *cdp.Node) bool {
		return n.NodeName == "IFRAME" && slices.Contains(strings.Fields(attr(n, "class")), class)
	})
	if frame == nil || frame.ContentDocument == nil {
		return "", fmt.Errorf("no loaded iframe.%s", class)
	}
	body := find(frame.ContentDocument, func(n *cdp.Node) bool { return n.NodeName == "BODY" })
	if body == nil {
		return "", fmt.Errorf("iframe.%s has no body", class)
	}
	if _, err := chromedp.Call(ctx, css.Enable, cdp.Empty{}); err != nil {
		return "", fmt.Errorf("enable CSS: %w", err)
	}
	st, err := chromedp.Call(ctx, css.GetComputedStyleForNode, css.GetComputedStyleForNodeParams{NodeID: body.NodeID})
	if err != nil {
		return "", fmt.Errorf("computed style: %w", err)
	}
	for _, p := range st.ComputedStyle {
		if p.Name == property {
			return p.Value, nil
		}
	}
	return "", fmt.Errorf("no computed %s", property)
}

// find returns the first node of the tree under n (n included) for which ok holds.
func find(n *cdp.Node, ok func(*cdp.Node) bool) *cdp.Node {
	if n == nil {
		return nil
	}
	if ok(n) {
		return n
	}
	kids := append(append([]*cdp.Node{}, n.Children...), n.ContentDocument)
	for _, c := range kids {
		if f := find(c, ok); f != nil {
			return f
		}
	}
	return nil
}

// attr returns an attribute of n ("" when it has none).
func attr(n *cdp.Node, name string) string {
	for i := 0; i+1 < len(n.Attributes); i += 2 {
		if n.Attributes[i] == name {
			return n.Attributes[i+1]
		}
	}
	return ""
}

package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// A small Chrome DevTools Protocol client over --remote-debugging-pipe
// (file descriptors 3 and 4, NUL-delimited JSON), enough to load a page,
// collect its console messages, exceptions and log entries (which
// --enable-logging=stderr misses for failed resource loads), emulate
// dark mode and take a full-page screenshot. Test-only: no library of
// ours needs a browser.

// cdp is one browser process and its pipe.
type cdp struct {
	cmd    *exec.Cmd
	w      io.WriteCloser
	mu     sync.Mutex
	nextID int
	calls  map[int]chan cdpMsg
	events chan cdpMsg
	done   chan struct{}
	err    error
}

type cdpMsg struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startChromium runs headless Chromium with the DevTools pipe, isolated
// from the network and from any profile.
func startChromium(ctx context.Context, bin, profile string) (*cdp, error) {
	toChrome, ourW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ourR, fromChrome, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--user-data-dir="+profile, "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome} // fd 3: commands in, fd 4: replies out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	toChrome.Close()
	fromChrome.Close()
	c := &cdp{cmd: cmd, w: ourW, calls: map[int]chan cdpMsg{}, events: make(chan cdpMsg, 1024), done: make(chan struct{})}
	go c.read(ourR)
	return c, nil
}

// read dispatches replies to their callers and events to the channel.
func (c *cdp) read(r io.Reader) {
	defer close(c.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		b, err := br.ReadBytes(0)
		if err != nil {
			c.err = err
			return
		}
		var m cdpMsg
		if err := json.Unmarshal(b[:len(b)-1], &m); err != nil {
			continue
		}
		if m.ID != 0 {
			c.mu.Lock()
			ch := c.calls[m.ID]
			delete(c.calls, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		select {
		case c.events <- m:
		default: // a flood of events we do not read: drop rather than block
		}
	}
}

// call sends a command and waits for its reply.
func (c *cdp) call(ctx context.Context, session, method string, params any, out any) error {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan cdpMsg, 1)
	c.calls[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-c.done:
		return fmt.Errorf("%s: browser exited: %v", method, c.err)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// close ends the browser.
func (c *cdp) close() {
	_ = c.call(context.Background(), "", "Browser.close", nil, nil)
	c.w.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// pageShot is what loading a page produced.
type pageShot struct {
	PNG      []byte
	Height   int
	Problems []string // console messages, exceptions, error log entries
}

// shoot loads url in a new page width pixels wide, optionally in dark
// mode or as printed, waits for it to load, and screenshots it whole (or
// its first maxHeight pixels when maxHeight > 0).
func (c *cdp) shoot(ctx context.Context, url string, width, maxHeight int, dark, print bool) (*pageShot, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return nil, err
	}
	s := att.SessionID
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if err := c.call(ctx, s, m, nil, nil); err != nil {
			return nil, err
		}
	}
	if err := c.call(ctx, s, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		return nil, err
	}
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	media := ""
	if print {
		media = "print"
	}
	if err := c.call(ctx, s, "Emulation.setEmulatedMedia", map[string]any{"media": media, "features": []map[string]string{{"name": "prefers-color-scheme", "value": scheme}}}, nil); err != nil {
		return nil, err
	}
	if err := c.call(ctx, s, "Page.navigate", map[string]any{"url": url}, nil); err != nil {
		return nil, err
	}
	shot := &pageShot{}
	if err := c.waitLoad(ctx, s, shot); err != nil {
		return nil, err
	}
	var ev struct {
		Result struct {
			Value float64 `json:"value"`
		} `json:"result"`
	}
	if err := c.call(ctx, s, "Runtime.evaluate", map[string]any{"expression": "document.documentElement.scrollHeight", "returnByValue": true}, &ev); err != nil {
		return nil, err
	}
	shot.Height = int(ev.Result.Value)
	h := shot.Height
	if maxHeight > 0 && h > maxHeight {
		h = maxHeight
	}
	var img struct {
		Data string `json:"data"`
	}
	if err := c.call(ctx, s, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": width, "height": h, "scale": 1}}, &img); err != nil {
		return nil, err
	}
	png, err := base64.StdEncoding.DecodeString(img.Data)
	if err != nil {
		return nil, err
	}
	shot.PNG = png
	c.drain(shot)
	return shot, nil
}

// waitLoad waits for the page's load event, noting problems on the way.
func (c *cdp) waitLoad(ctx context.Context, session string, shot *pageShot) error {
	for {
		select {
		case m := <-c.events:
			if m.SessionID != session {
				continue
			}
			if m.Method == "Page.loadEventFired" {
				return nil
			}
			shot.note(m)
		case <-c.done:
			return errors.New("browser exited before the page loaded")
		case <-ctx.Done():
			return fmt.Errorf("waiting for the page to load: %w", ctx.Err())
		}
	}
}

// drain collects the events that arrived after the load.
func (c *cdp) drain(shot *pageShot) {
	for {
		select {
		case m := <-c.events:
			shot.note(m)
		default:
			return
		}
	}
}

// note records console output, exceptions and error log entries. The
// report has no scripts, so any console output at all is a problem.
func (s *pageShot) note(m cdpMsg) {
	switch m.Method {
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
			Args []struct {
				Value any `json:"value"`
			} `json:"args"`
		}
		_ = json.Unmarshal(m.Params, &p)
		var vals []string
		for _, a := range p.Args {
			vals = append(vals, fmt.Sprint(a.Value))
		}
		s.Problems = append(s.Problems, "console."+p.Type+": "+strings.Join(vals, " "))
	case "Runtime.exceptionThrown":
		s.Problems = append(s.Problems, "exception: "+string(m.Params))
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Level  string `json:"level"`
				Source string `json:"source"`
				Text   string `json:"text"`
				URL    string `json:"url"`
			} `json:"entry"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Entry.Level == "error" || p.Entry.Level == "warning" {
			s.Problems = append(s.Problems, fmt.Sprintf("log %s (%s): %s %s", p.Entry.Level, p.Entry.Source, p.Entry.Text, p.Entry.URL))
		}
	}
}

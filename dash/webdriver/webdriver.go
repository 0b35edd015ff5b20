package webdriver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Find returns the paths of chromedriver and chromium, or an error naming
// what is missing.
func Find() (driver, browser string, err error) {
	driver, err = exec.LookPath("chromedriver")
	if err != nil {
		return "", "", errors.New("chromedriver not found (Debian: apt-get install chromium chromium-driver)")
	}
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			return driver, p, nil
		}
	}
	return "", "", errors.New("chromium not found (Debian: apt-get install chromium chromium-driver)")
}

// Driver is a running chromedriver with one browser session.
type Driver struct {
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:port
	session string
	client  *http.Client
}

// Start launches chromedriver and a headless Chromium session with the
// given window size; profile is a scratch folder for the browser profile.
func Start(ctx context.Context, profile string, width, height int) (*Driver, error) {
	driverPath, browser, err := Find()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(driverPath, "--port="+strconv.Itoa(port), "--allowed-ips=127.0.0.1")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("webdriver: start chromedriver: %w", err)
	}
	d := &Driver{cmd: cmd, base: "http://127.0.0.1:" + strconv.Itoa(port), client: &http.Client{Timeout: 60 * time.Second}}
	// wait for the driver to listen
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := d.client.Get(d.base + "/status")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			d.kill()
			return nil, fmt.Errorf("webdriver: chromedriver did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	args := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-extensions", "--user-data-dir=" + profile, fmt.Sprintf("--window-size=%d,%d", width, height), "--hide-scrollbars"}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName":        "chrome",
		"goog:chromeOptions": map[string]any{"binary": browser, "args": args},
		"goog:loggingPrefs":  map[string]string{"browser": "ALL"},
	}}}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	if err := d.do(ctx, http.MethodPost, "/session", caps, &res); err != nil {
		d.kill()
		return nil, fmt.Errorf("webdriver: new session: %w", err)
	}
	d.session = res.SessionID
	return d, nil
}

func (d *Driver) kill() {
	if d.cmd.Process != nil {
		d.cmd.Process.Kill()
		d.cmd.Wait()
	}
}

// Close ends the session and chromedriver.
func (d *Driver) Close() {
	if d.session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		d.do(ctx, http.MethodDelete, "/session/"+d.session, nil, nil)
		cancel()
	}
	d.kill()
}

// do sends a WebDriver command and decodes its "value" into out.
func (d *Driver) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		json.Unmarshal(env.Value, &e)
		return fmt.Errorf("%s %s: %s: %s", method, path, e.Error, firstLine(e.Message))
	}
	if out != nil {
		return json.Unmarshal(env.Value, out)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func (d *Driver) sp(p string) string { return "/session/" + d.session + p }

// Navigate loads url.
func (d *Driver) Navigate(ctx context.Context, url string) error {
	return d.do(ctx, http.MethodPost, d.sp("/url"), map[string]string{"url": url}, nil)
}

// Eval runs a synchronous script (its body may use arguments[i]) and
// decodes its return value into out.
func (d *Driver) Eval(ctx context.Context, script string, out any, args ...any) error {
	if args == nil {
		args = []any{}
	}
	return d.do(ctx, http.MethodPost, d.sp("/execute/sync"), map[string]any{"script": script, "args": args}, out)
}

// WaitFor polls a script until it returns true (or ctx ends); the error
// names what was awaited.
func (d *Driver) WaitFor(ctx context.Context, what, script string) error {
	for {
		var ok bool
		err := d.Eval(ctx, script, &ok)
		if err == nil && ok {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), err)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Count returns the number of elements matching a CSS selector.
func (d *Driver) Count(ctx context.Context, css string) (int, error) {
	var n int
	err := d.Eval(ctx, "return document.querySelectorAll(arguments[0]).length", &n, css)
	return n, err
}

// Text returns the text of the first element matching css ("" if none).
func (d *Driver) Text(ctx context.Context, css string) (string, error) {
	var s string
	err := d.Eval(ctx, "const e = document.querySelector(arguments[0]); return e ? e.textContent : ''", &s, css)
	return s, err
}

// Click clicks the first element matching css through the DOM.
func (d *Driver) Click(ctx context.Context, css string) error {
	var ok bool
	if err := d.Eval(ctx, "const e = document.querySelector(arguments[0]); if (!e) return false; e.click(); return true", &ok, css); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("click: no element %s", css)
	}
	return nil
}

// Screenshot saves a PNG of the viewport.
func (d *Driver) Screenshot(ctx context.Context, path string) error {
	var b64 string
	if err := d.do(ctx, http.MethodGet, d.sp("/screenshot"), nil, &b64); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}

// SetWindowSize resizes the browser window.
func (d *Driver) SetWindowSize(ctx context.Context, w, h int) error {
	return d.do(ctx, http.MethodPost, d.sp("/window/rect"), map[string]int{"width": w, "height": h}, nil)
}

// LogEntry is one browser console message.
type LogEntry struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// ConsoleErrors returns the console entries at level SEVERE since the last
// call (uncaught exceptions, console.error, failed loads).
func (d *Driver) ConsoleErrors(ctx context.Context) ([]LogEntry, error) {
	var all []LogEntry
	if err := d.do(ctx, http.MethodPost, d.sp("/se/log"), map[string]string{"type": "browser"}, &all); err != nil {
		return nil, err
	}
	var out []LogEntry
	for _, e := range all {
		if e.Level == "SEVERE" {
			out = append(out, e)
		}
	}
	return out, nil
}

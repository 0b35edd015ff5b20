package dash

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"ragen/llm/tokenizer"
	"ragen/ragen"
)

// sseServer serves chat completions as an event stream written by body.
func sseServer(t *testing.T, body func(w http.ResponseWriter, f http.Flusher)) *OpenAIStream {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		body(w, w.(http.Flusher))
	}))
	t.Cleanup(srv.Close)
	return NewOpenAIStream(OpenAIStreamConfig{BaseURL: srv.URL, Model: "m", Timeout: 20 * time.Second})
}

func sseDelta(w http.ResponseWriter, text string) error {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]string{"content": text}}}})
	_, err := fmt.Fprintf(w, "data: %s\n\n", b)
	return err
}

func streamReq(maxTokens int) ragen.GenRequest {
	return ragen.GenRequest{Messages: []tokenizer.Message{{Role: "user", Content: "hi"}}, Sampling: ragen.SamplingParams{MaxNewTokens: maxTokens}}
}

// A server that streams without end (big deltas, or text past what
// max_tokens allows) is cut off with the cap named; what reached the page
// stays within the cap.
func TestOpenAIStreamCaps(t *testing.T) {
	endless := func(piece string) func(w http.ResponseWriter, f http.Flusher) {
		return func(w http.ResponseWriter, f http.Flusher) {
			for sseDelta(w, piece) == nil {
				f.Flush()
			}
		}
	}
	for _, tc := range []struct {
		name, piece string
		maxTokens   int
		want        string
		emitted     int // at most
	}{
		// 10 tokens × 64 bytes is under the 4 KiB floor
		{"text", "abc", 10, "over the 4096-byte cap", 4096},
		{"text from max_tokens", "abcd", 100, "over the 6400-byte cap", 6400},
		// 64 KiB deltas and no max_tokens: the text cap is the 8 MiB stream cap, and the stream's framing reaches it first
		{"stream", strings.Repeat("x", 64<<10), 0, "reply stream is over the 8388608-byte cap", 8 << 20},
	} {
		o := sseServer(t, endless(tc.piece))
		emitted := 0
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		text, err := o.Stream(ctx, streamReq(tc.maxTokens), func(d string) { emitted += len(d) })
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
		if emitted > tc.emitted || len(text) != emitted {
			t.Errorf("%s: %d bytes emitted, %d returned, want at most %d", tc.name, emitted, len(text), tc.emitted)
		}
	}
}

// A stream that ends without [DONE] was cut off: an error, not an answer.
func TestOpenAIStreamCutBeforeDone(t *testing.T) {
	o := sseServer(t, func(w http.ResponseWriter, f http.Flusher) {
		_ = sseDelta(w, "<answer>Bl")
	})
	text, err := o.Stream(context.Background(), streamReq(50), func(string) {})
	if err == nil || !strings.Contains(err.Error(), "ended before [DONE] after 10 bytes") {
		t.Fatalf("err %v", err)
	}
	if text != "<answer>Bl" {
		t.Fatalf("text %q", text)
	}
	o = sseServer(t, func(w http.ResponseWriter, f http.Flusher) {
		_ = sseDelta(w, "<answer>Blue</answer>")
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	if text, err := o.Stream(context.Background(), streamReq(50), func(string) {}); err != nil || text != "<answer>Blue</answer>" {
		t.Fatalf("complete stream: %q, %v", text, err)
	}
}

// One line longer than a stream line may be, without a newline, fails
// with the limit named, and a bad chunk's error quotes a bounded snippet.
func TestOpenAIStreamLongLine(t *testing.T) {
	o := sseServer(t, func(w http.ResponseWriter, f http.Flusher) {
		_, _ = w.Write([]byte("data: " + strings.Repeat("y", 2<<20)))
	})
	_, err := o.Stream(context.Background(), streamReq(50), func(string) {})
	if err == nil || !strings.Contains(err.Error(), "line is over 1048576 bytes") {
		t.Fatalf("err %v", err)
	}
	o = sseServer(t, func(w http.ResponseWriter, f http.Flusher) {
		_, _ = w.Write([]byte("data: {" + strings.Repeat("z", 100000) + "\n\n"))
	})
	_, err = o.Stream(context.Background(), streamReq(50), func(string) {})
	if err == nil || !strings.Contains(err.Error(), "bad stream chunk") || len(err.Error()) > 400 {
		t.Fatalf("err (%d bytes) %.300v", len(err.Error()), err)
	}
}

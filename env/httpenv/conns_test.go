package httpenv_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ragen/env"
	"ragen/env/httpenv"
)

// Connections that send one unauthenticated GET /v1/health and stay open
// as many as the connection cap, must not keep a client with the token
// out: replies to requests without the token close their connection. The
// keep-alive limit is a minute, so a lockout outlasts the client's 20 s.
func TestIdleUnauthenticatedConnsDoNotLockOut(t *testing.T) {
	const token = "s3cret"
	addr, _ := serve(t, httpenv.Options{Token: token, MaxConns: 8, ReadTimeout: time.Minute, ConnIdleTimeout: time.Minute})
	for i := range 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("health %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !resp.Close {
			t.Errorf("health without the token: %d, close=%v (want 200 and Connection: close)", resp.StatusCode, resp.Close)
		}
		// the connection stays open on this side, idle
	}
	c, err := httpenv.New(httpenv.Config{URL: "http://" + addr, EnvType: "bandit", Token: token, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("a client with the token was kept out: %v", err)
	}
	if _, err := c.Reset(context.Background(), 1, env.ModeTrain); err != nil {
		t.Error(err)
	}
	c.Close()
}

// countingListener counts Close calls of the listener it wraps and, like a
// busy scheduler, returns from a failed Accept only a while later.
type countingListener struct {
	net.Listener
	closes atomic.Int32
}

func (l *countingListener) Close() error {
	l.closes.Add(1)
	return l.Listener.Close()
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		time.Sleep(100 * time.Millisecond)
	}
	return c, err
}

// Cancelling Serve (SIGTERM in serve-envs) returns nil, closing the
// listener once: closing it twice failed with "use of closed network
// connection" and serve-envs exited 1.
func TestServeStopsCleanly(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Error(err)
				return
			}
			cl := &countingListener{Listener: ln}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- httpenv.Serve(ctx, cl, httpenv.Options{}) }()
			// one request served, so the server is up and running
			if resp, err := http.Get("http://" + ln.Addr().String() + "/v1/health"); err != nil {
				t.Error(err)
			} else {
				resp.Body.Close()
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run %d: Serve after cancel: %v", i, err)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("run %d: Serve did not return 20 s after cancel", i)
				return
			}
			if n := cl.closes.Load(); n != 1 {
				t.Errorf("run %d: the listener was closed %d times", i, n)
			}
		}()
	}
	wg.Wait()
}

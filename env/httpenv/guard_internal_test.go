package httpenv

import (
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// The connection cap: the n+1th Accept waits until a connection closes,
// and closing the listener ends a waiting Accept.
func TestLimitListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := newLimitListener(ln, 2)
	defer ll.Close()
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	a, err := ll.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ll.Accept(); err != nil {
		t.Fatal(err)
	}
	if ll.Open() != 2 {
		t.Fatalf("open = %d, want 2", ll.Open())
	}
	third := make(chan error, 1)
	go func() {
		c, err := ll.Accept()
		if err == nil {
			c.Close()
		}
		third <- err
	}()
	select {
	case err := <-third:
		t.Fatalf("a third connection was accepted over the cap of 2 (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	a.Close()
	a.Close() // a second close releases nothing more
	if err := <-third; err != nil {
		t.Fatalf("after a close: %v", err)
	}
	// Take the free slot again, then wait on a third: Close ends that wait.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := ll.Accept(); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := ll.Accept()
		waiting <- err
	}()
	ll.Close()
	select {
	case err := <-waiting:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a waiting Accept")
	}
}

func TestKeyClasses(t *testing.T) {
	for k, want := range map[string][3]bool{
		"level_file": {true, false, false}, "train_path": {true, false, false}, "cache_dir": {true, false, false},
		"url": {false, true, false}, "retrieval_server_url": {false, true, false},
		"python_path": {true, false, true}, "size": {}, "dim_room": {}, "profile": {}, "render_mode": {},
	} {
		got := [3]bool{isPathKey(k), isURLKey(k), isProgramKey(k)}
		if got != want {
			t.Errorf("%s: path/url/program = %v, want %v", k, got, want)
		}
	}
}

// accept1 dials the listener once and accepts that connection: it returns
// the client's end and the server's.
func accept1(t *testing.T, ll *limitListener) (client, server net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", ll.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := ll.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return c, s
}

// closedByServer reports whether the server closed the client's
// connection (a read sees EOF rather than its deadline).
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF)
}

// At the cap a new connection takes the slot of the one idle the longest
// (between requests first, then silent since it connected past the
// grace); busy ones are never shed, and with none idle Accept waits.
func TestLimitListenerShedsIdleFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := newLimitListener(ln, 3)
	ll.newGrace = time.Hour // silent connections are within their grace
	defer ll.Close()
	silentC, silent := accept1(t, ll)
	idleOldC, idleOld := accept1(t, ll)
	idleNewC, idleNew := accept1(t, ll)
	ll.connState(idleOld, http.StateIdle)
	ll.connState(idleNew, http.StateIdle)
	_, fourth := accept1(t, ll) // takes idleOld's slot
	if !closedByServer(idleOldC) || closedByServer(idleNewC) || closedByServer(silentC) || ll.Open() != 3 {
		t.Fatalf("the longest-idle connection was not the one shed (open %d)", ll.Open())
	}
	ll.connState(fourth, http.StateActive)
	_, fifth := accept1(t, ll) // takes idleNew's slot
	if !closedByServer(idleNewC) || closedByServer(silentC) {
		t.Fatal("the idle connection was not shed before the silent one")
	}
	ll.connState(fifth, http.StateActive)

	// Now one silent connection within its grace and two busy ones: a new
	// connection waits until one closes.
	c, err := net.Dial("tcp", ll.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make(chan net.Conn, 1)
	go func() {
		if s, err := ll.Accept(); err == nil {
			got <- s
		}
	}()
	select {
	case <-got:
		t.Fatal("accepted over the cap with no idle connection")
	case <-time.After(50 * time.Millisecond):
	}
	fourth.Close()
	(<-got).Close()
	if closedByServer(silentC) {
		t.Fatal("a silent connection within its grace was shed")
	}

	// Past its grace, a silent connection is shed.
	_, sixth := accept1(t, ll)
	ll.connState(sixth, http.StateActive)
	ll.mu.Lock()
	ll.newGrace = 0
	ll.mu.Unlock()
	accept1(t, ll)
	if !closedByServer(silentC) {
		t.Fatal("a connection silent past its grace was not shed")
	}
	_ = silent
}

// Closing the listener twice (Shutdown after a close) is not an error.
func TestLimitListenerCloseTwice(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := newLimitListener(ln, 1)
	if err := ll.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ll.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

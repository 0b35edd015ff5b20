package httpenv

import (
	"errors"
	"net"
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

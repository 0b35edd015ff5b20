package rubikscube

import (
	"fmt"
	"reflect"
	"testing"
)

// Small assertion helpers (testify's module graph is not in go.sum).

func eq(t testing.TB, want, got any, msg ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s\nwant: %#v\n got: %#v", text(msg), want, got)
	}
}

func ne(t testing.TB, a, b any, msg ...any) {
	t.Helper()
	if reflect.DeepEqual(a, b) {
		t.Errorf("%s: values are equal: %#v", text(msg), a)
	}
}

func must(t testing.TB, err error, msg ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", text(msg), err)
	}
}

func isErr(t testing.TB, err error, msg ...any) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: expected an error", text(msg))
	}
}

func truth(t testing.TB, ok bool, msg ...any) {
	t.Helper()
	if !ok {
		t.Errorf("%s: condition is false", text(msg))
	}
}

// text formats testify-style message arguments: a format string and its
// arguments.
func text(msg []any) string {
	if len(msg) == 0 {
		return ""
	}
	if f, ok := msg[0].(string); ok {
		return fmt.Sprintf(f, msg[1:]...)
	}
	return fmt.Sprint(msg...)
}

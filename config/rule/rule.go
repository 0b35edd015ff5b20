package rule

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Problem is one inconsistency of a config key.
type Problem struct {
	Key     string // the main key involved (dotted, e.g. agent_proxy.max_turn)
	Msg     string // what disagrees and what would fit
	Warning bool   // runs, but probably not what was meant (e.g. duplicated rows)
}

func (p Problem) Error() string {
	if p.Warning {
		return "config: warning: " + p.Key + ": " + p.Msg
	}
	return "config: " + p.Key + ": " + p.Msg
}

// Errorf returns the problem of key with a formatted message.
func Errorf(key, format string, args ...any) Problem {
	return Problem{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Unknown is the problem of a name that is not one of valid: the value, a
// suggestion when one is close, and the valid names sorted.
func Unknown(key, value string, valid []string) Problem {
	return UnknownLike(key, value, value, valid)
}

// UnknownLike is Unknown with the suggestion computed for like (e.g. the
// value lower-cased or without a suffix) instead of the value.
func UnknownLike(key, value, like string, valid []string) Problem {
	valid = slices.Sorted(slices.Values(valid))
	return Errorf(key, "unknown value %q%s; valid: %s", value, DidYouMean(like, valid), strings.Join(valid, ", "))
}

// AtLeast returns the problem of an integer key below lo, or nil.
func AtLeast(key string, got, lo int) error {
	if got >= lo {
		return nil
	}
	return Errorf(key, "%d is out of range: want >= %d", got, lo)
}

// NearestMultiples names the multiples of step closest below and above x
// (only the one above when none below is positive), for messages that
// suggest a fitting value.
func NearestMultiples(x, step int) string {
	if step <= 0 {
		return ""
	}
	lo := x / step * step
	hi := lo + step
	if lo <= 0 {
		return strconv.Itoa(hi)
	}
	return fmt.Sprintf("%d or %d", lo, hi)
}

// Problems flattens err (errors.Join trees) into its Problems and the
// errors that are not Problems (a wrapped Problem counts as not one: the
// wrapper's words would be lost).
func Problems(err error) (ps []Problem, other []error) {
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if p, ok := e.(Problem); ok {
			ps = append(ps, p)
			return
		}
		other = append(other, e)
	}
	walk(err)
	return ps, other
}

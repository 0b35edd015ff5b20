// Package pub leaks internal types in every way the checker knows, and
// keeps them private in the ways it must accept.
package pub

import "leaky/internal/secret"

func Open() *secret.Handle { return nil } // leak: result

func Use(hs []secret.Handle) {} // leak: parameter

var Default secret.Kind // leak: variable

type Alias = secret.Handle // leak: alias

type Box struct {
	H    map[string]*secret.Handle // leak: exported field
	priv secret.Handle             // fine: unexported
}

func (Box) Get() (secret.Kind, error) { return 0, nil } // leak: method

type Doer interface {
	Do(func(secret.Kind)) // leak: interface method
}

type Clean struct{ h *secret.Handle } // fine

func (c Clean) N() int { return 0 } // fine

func private(h secret.Handle) {} // fine: unexported

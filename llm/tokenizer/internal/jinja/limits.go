package jinja

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// This file is ragen's addition to the engine: limits on one render, so
// that a hostile chat template fails with an error instead of exhausting
// the stack, memory or time.

// Limits bound one render. Zero fields take the defaults of DefaultLimits.
type Limits struct {
	// MaxDepth bounds the nesting of statements, expressions and calls
	// being evaluated (a macro that calls itself), and of values printed,
	// compared or searched.
	MaxDepth int
	// MaxSteps bounds the statements, expressions, loop iterations and
	// value items visited in one render.
	MaxSteps int64
	// MaxString bounds the output and any one string or printed value, in
	// bytes.
	MaxString int64
	// MaxAlloc bounds the bytes of strings built and written in one render,
	// all together.
	MaxAlloc int64
}

// DefaultLimits are generous for chat templates: a Qwen2.5 or Llama 3.1
// conversation of a hundred turns with tools renders in under 20,000 steps,
// depth 20, and the output of a million-token context is about 4 MiB.
var DefaultLimits = Limits{MaxDepth: 500, MaxSteps: 5_000_000, MaxString: 16 << 20, MaxAlloc: 256 << 20}

// LimitError reports a render stopped by one of its Limits.
type LimitError struct {
	Limit string // "depth", "steps", "string" or "alloc"
	Msg   string
}

func (e *LimitError) Error() string { return e.Msg }

// budget is one render's Limits and its use so far, shared by the
// evaluators of the render (macro bodies, call blocks, set blocks).
type budget struct {
	Limits
	ctx          context.Context
	steps, alloc int64
	depth        int
}

func newBudget(ctx context.Context, l Limits) *budget {
	d := DefaultLimits
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.MaxString <= 0 {
		l.MaxString = d.MaxString
	}
	if l.MaxAlloc <= 0 {
		l.MaxAlloc = d.MaxAlloc
	}
	if ctx == nil {
		ctx = context.Background()
	}
	return &budget{Limits: l, ctx: ctx}
}

// charge counts n steps, and checks the context every 1024.
func (b *budget) charge(n int64) error {
	before := b.steps
	b.steps += n
	if b.steps > b.MaxSteps {
		return &LimitError{Limit: "steps", Msg: fmt.Sprintf("render took more than %d steps (loops nested too deep or too long)", b.MaxSteps)}
	}
	if before>>10 != b.steps>>10 {
		if err := b.ctx.Err(); err != nil {
			return fmt.Errorf("render stopped after %d steps: %w", b.steps, err)
		}
	}
	return nil
}

func (b *budget) step() error { return b.charge(1) }

// enter counts one level of nesting and one step; leave undoes the level.
func (b *budget) enter() error {
	b.depth++
	if b.depth > b.MaxDepth {
		return &LimitError{Limit: "depth", Msg: fmt.Sprintf("nested deeper than %d (a macro that calls itself without end?)", b.MaxDepth)}
	}
	return b.step()
}

func (b *budget) leave() { b.depth-- }

// grow accounts for a new string (or output) of n bytes, before it is built.
func (b *budget) grow(what string, n int64) error {
	if n > b.MaxString {
		return &LimitError{Limit: "string", Msg: fmt.Sprintf("%s of %d bytes is over the %d-byte limit", what, n, b.MaxString)}
	}
	b.alloc += max(n, 0)
	if b.alloc > b.MaxAlloc {
		return &LimitError{Limit: "alloc", Msg: fmt.Sprintf("render built more than %d bytes of strings", b.MaxAlloc)}
	}
	return nil
}

// write appends s to out, within the limits.
func (b *budget) write(out *strings.Builder, s string) error {
	if n := int64(out.Len()) + int64(len(s)); n > b.MaxString {
		return &LimitError{Limit: "string", Msg: fmt.Sprintf("output of %d bytes or more is over the %d-byte limit", n, b.MaxString)}
	}
	if b.alloc += int64(len(s)); b.alloc > b.MaxAlloc {
		return &LimitError{Limit: "alloc", Msg: fmt.Sprintf("render built more than %d bytes of strings", b.MaxAlloc)}
	}
	out.WriteString(s)
	return nil
}

// printSize returns an upper bound of the bytes printValue, String or tojson
// (without indent) give for v, stopping once it is over MaxString, and
// fails for values nested deeper than MaxDepth. Each item visited is a step.
func (b *budget) printSize(v Value) (int64, error) {
	var walk func(v Value, depth int) (int64, error)
	walk = func(v Value, depth int) (int64, error) {
		if depth > b.MaxDepth {
			return 0, &LimitError{Limit: "depth", Msg: fmt.Sprintf("value nested deeper than %d", b.MaxDepth)}
		}
		if err := b.step(); err != nil {
			return 0, err
		}
		switch v.kind {
		case KindString:
			return int64(len(v.AsString())) + 2, nil
		case KindList:
			n := int64(2)
			for _, it := range v.AsList().Items {
				m, err := walk(it, depth+1)
				if err != nil {
					return 0, err
				}
				if n += m + 2; n > b.MaxString {
					return n, nil
				}
			}
			return n, nil
		case KindDict:
			d := v.AsDict()
			n := int64(2)
			for _, k := range d.Keys {
				m, err := walk(d.Data[k], depth+1)
				if err != nil {
					return 0, err
				}
				if n += int64(len(k)) + 6 + m; n > b.MaxString {
					return n, nil
				}
			}
			return n, nil
		}
		return 32, nil
	}
	return walk(v, 0)
}

// checkPrint fails if v printed would be over MaxString or nested too deep.
func (b *budget) checkPrint(what string, v Value) error {
	if v.kind != KindList && v.kind != KindDict {
		return nil
	}
	n, err := b.printSize(v)
	if err != nil {
		return err
	}
	return b.grow(what, n)
}

// reaches reports whether target (a list or dict) is v or is inside v, so
// that no list or dict comes to hold itself (printing or comparing it would
// not end).
func (b *budget) reaches(v, target Value) (bool, error) {
	seen := map[any]bool{} // lists and dicts already searched: a value may share them many times
	var walk func(v Value, depth int) (bool, error)
	walk = func(v Value, depth int) (bool, error) {
		if (v.kind == KindList || v.kind == KindDict) && seen[v.v] {
			return false, nil
		}
		if v.kind == KindList || v.kind == KindDict {
			seen[v.v] = true
		}
		if depth > b.MaxDepth {
			return false, &LimitError{Limit: "depth", Msg: fmt.Sprintf("value nested deeper than %d", b.MaxDepth)}
		}
		if err := b.step(); err != nil {
			return false, err
		}
		switch v.kind {
		case KindList:
			if target.kind == KindList && v.AsList() == target.AsList() {
				return true, nil
			}
			for _, it := range v.AsList().Items {
				if ok, err := walk(it, depth+1); ok || err != nil {
					return ok, err
				}
			}
		case KindDict:
			if target.kind == KindDict && v.AsDict() == target.AsDict() {
				return true, nil
			}
			d := v.AsDict()
			for _, k := range d.Keys {
				if ok, err := walk(d.Data[k], depth+1); ok || err != nil {
					return ok, err
				}
			}
		}
		return false, nil
	}
	return walk(v, 0)
}

// noCycle fails if putting v into container would make container hold
// itself.
func (b *budget) noCycle(v, container Value) error {
	ok, err := b.reaches(v, container)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("a list or dict cannot hold itself")
	}
	return nil
}

// replaceSize is the length of strings.Replace(s, old, new, count).
func replaceSize(s, old, new string, count int) int64 {
	var n int
	if old == "" {
		n = utf8.RuneCountInString(s) + 1
	} else {
		n = strings.Count(s, old)
	}
	if count >= 0 && count < n {
		n = count
	}
	return int64(len(s)) + int64(n)*(int64(len(new))-int64(len(old)))
}

// replace is strings.Replace within the limits.
func (b *budget) replace(s, old, new string, count int) (string, error) {
	if err := b.grow("replace result", replaceSize(s, old, new, count)); err != nil {
		return "", err
	}
	return strings.Replace(s, old, new, count), nil
}

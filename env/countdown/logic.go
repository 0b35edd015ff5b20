package countdown

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Python's loosest levels, above the bitwise | of orExpr:
//
//	test       := orTest ['if' orTest 'else' test]
//	orTest     := andTest ('or' andTest)*
//	andTest    := notTest ('and' notTest)*
//	notTest    := 'not' notTest | comparison
//	comparison := orExpr (compOp orExpr)*
//
// Operands Python would not evaluate (the right side of a decided and/or,
// the branch a conditional does not take, the rest of a failed comparison
// chain) are still parsed — a syntax error anywhere fails the whole
// expression, as compile() does — but their runtime errors are dropped.

func (p *parser) test() (Value, error) {
	body, err := p.orTest()
	if err != nil {
		return body, err
	}
	if !p.keyword("if") {
		return body, nil
	}
	cond, err := p.orTest()
	if err != nil {
		return cond, err
	}
	if !p.keyword("else") {
		return Value{}, errors.New("countdown: expected 'else' after 'if' expression")
	}
	other, err := p.nested(p.test)
	if err != nil {
		return other, err
	}
	t, ok := truth(cond)
	switch {
	case !ok:
		return cond, nil
	case t:
		return body, nil
	}
	return other, nil
}

func (p *parser) orTest() (Value, error) {
	v, err := p.andTest()
	if err != nil {
		return v, err
	}
	for p.keyword("or") {
		w, err := p.andTest()
		if err != nil {
			return w, err
		}
		if t, ok := truth(v); ok && !t {
			v = w
		}
	}
	return v, nil
}

func (p *parser) andTest() (Value, error) {
	v, err := p.notTest()
	if err != nil {
		return v, err
	}
	for p.keyword("and") {
		w, err := p.notTest()
		if err != nil {
			return w, err
		}
		if t, ok := truth(v); ok && t {
			v = w
		}
	}
	return v, nil
}

func (p *parser) notTest() (Value, error) {
	if p.keyword("not") {
		v, err := p.nested(p.notTest)
		if err != nil {
			return v, err
		}
		if t, ok := truth(v); ok {
			return pyBool(!t), nil
		}
		return v, nil
	}
	return p.comparison()
}

func (p *parser) comparison() (Value, error) {
	left, err := p.orExpr()
	if err != nil {
		return left, err
	}
	result := Value{} // zero: no comparison yet
	decided := false  // a link was false (or raised): later links are not evaluated
	for {
		op, err := p.compOp()
		if err != nil {
			return Value{}, err
		}
		if op == "" {
			break
		}
		right, err := p.orExpr()
		if err != nil {
			return right, err
		}
		if !decided {
			switch r := compare(op, left, right); {
			case r.err != nil || !r.truthy():
				result, decided = r, true
			default:
				result = r
			}
		}
		left = right
	}
	if result.Int == nil && result.err == nil {
		return left, nil // no comparison operator
	}
	return result, nil
}

// compOp consumes a comparison operator: "<", ">", "==", ">=", "<=", "!=",
// "in", "not in", "is", "is not"; "" when none follows.
func (p *parser) compOp() (string, error) {
	p.skipSpace()
	s := p.src[p.pos:]
	for _, op := range []string{"==", "!=", "<=", ">=", "<>"} {
		if strings.HasPrefix(s, op) {
			if op == "<>" {
				return "", errors.New("countdown: invalid syntax '<>'")
			}
			p.pos += 2
			return op, nil
		}
	}
	if len(s) > 0 && (s[0] == '<' || s[0] == '>') && (len(s) == 1 || s[1] != s[0]) {
		p.pos++
		return s[:1], nil
	}
	if p.keyword("in") {
		return "in", nil
	}
	if p.keyword("is") {
		if p.keyword("not") {
			return "is not", nil
		}
		return "is", nil
	}
	save := p.pos
	if p.keyword("not") {
		if p.keyword("in") {
			return "not in", nil
		}
		p.pos = save
	}
	return "", nil
}

// compare is one link of a comparison chain, exact between ints and
// floats as in Python.
func compare(op string, a, b Value) Value {
	if (a.err == errNone || b.err == errNone) && (op == "==" || op == "!=") &&
		(a.err == nil || a.err == errNone) && (b.err == nil || b.err == errNone) {
		return pyBool((a.err == b.err) == (op == "=="))
	}
	if a.err != nil {
		return a
	}
	if b.err != nil {
		return b
	}
	switch op {
	case "in", "not in":
		return poison(errors.New("countdown: argument of type 'int' is not iterable"))
	case "is", "is not":
		return poison(errors.New("countdown: identity comparisons are not supported"))
	}
	var c int
	if a.IsInt && b.IsInt {
		c = a.Int.Cmp(b.Int)
	} else {
		if !a.IsInt && math.IsNaN(a.Float) || !b.IsInt && math.IsNaN(b.Float) {
			return pyBool(op == "!=")
		}
		c = exactFloat(a).Cmp(exactFloat(b))
	}
	switch op {
	case "<":
		return pyBool(c < 0)
	case ">":
		return pyBool(c > 0)
	case "==":
		return pyBool(c == 0)
	case "!=":
		return pyBool(c != 0)
	case "<=":
		return pyBool(c <= 0)
	}
	return pyBool(c >= 0) // ">="
}

// exactFloat is v as an exact big.Float (ints at their full precision).
func exactFloat(v Value) *big.Float {
	if v.IsInt {
		return new(big.Float).SetInt(v.Int)
	}
	return new(big.Float).SetFloat64(v.Float)
}

// keyword consumes the keyword kw (a whole word) if it comes next.
func (p *parser) keyword(kw string) bool {
	p.skipSpace()
	s := p.src[p.pos:]
	if !strings.HasPrefix(s, kw) || len(s) > len(kw) && isIdent(s[len(kw)]) {
		return false
	}
	p.pos += len(kw)
	return true
}

// keywordAfterNumber is CPython's verify_end_of_number: a numeric literal
// may be directly followed by the keywords that can follow a number in
// valid code ("1if x else 2", "0x1for"), with a warning; any other letter
// makes it an invalid literal.
func keywordAfterNumber(s string) bool {
	switch {
	case strings.HasPrefix(s, "and"), strings.HasPrefix(s, "else"), strings.HasPrefix(s, "for"),
		strings.HasPrefix(s, "or"), strings.HasPrefix(s, "not"):
		return true
	case len(s) >= 2 && s[0] == 'i' && (s[1] == 'f' || s[1] == 'n' || s[1] == 's'):
		return true
	}
	return false
}

// errNone marks the value None: falsy in and/or/not/if, equal only to
// itself, an error anywhere else (it is not a number).
var errNone = errors.New("countdown: None is not a number")

// name consumes a Python identifier (ASCII letters, digits and "_", or
// Unicode letters, marks and digits; not starting with a digit).
func (p *parser) name() (string, bool) {
	start := p.pos
	for p.pos < len(p.src) {
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		ok := r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r)
		if p.pos > start {
			ok = ok || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc)
		}
		if !ok {
			break
		}
		p.pos += size
	}
	return p.src[start:p.pos], p.pos > start
}

// reserved are the keywords that cannot be an operand.
var reserved = map[string]bool{
	"and": true, "as": true, "assert": true, "async": true, "await": true, "break": true,
	"class": true, "continue": true, "def": true, "del": true, "elif": true, "else": true,
	"except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true,
	"or": true, "pass": true, "raise": true, "return": true, "try": true, "while": true,
	"with": true, "yield": true,
}

// nameValue is the value of a name operand with no builtins in scope: True
// and False are the bools (ints 1 and 0); None and every other name raise
// when used (None is not a number, other names are a NameError), which an
// and/or/conditional that never evaluates them drops. Keywords are syntax
// errors.
func nameValue(name string) (Value, error) {
	switch {
	case name == "True":
		return pyBool(true), nil
	case name == "False":
		return pyBool(false), nil
	case reserved[name]:
		return Value{}, fmt.Errorf("countdown: invalid syntax at %q", name)
	case name == "None":
		return poison(errNone), nil
	}
	return poison(fmt.Errorf("countdown: name %q is not defined", name)), nil
}

// trailers parses the calls f(…), subscripts x[…] and attributes x.name
// that may follow an operand. With no builtins in scope none of them can
// produce a number here, so each makes the value raise (NameError for an
// undefined name, else TypeError/AttributeError) — an error that an
// unevaluated and/or/conditional branch drops, like any other. ("3 .real"
// is therefore not evaluated; see doc/divergences/env-extra.md.)
func (p *parser) trailers(v Value) (Value, error) {
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return v, nil
		}
		switch c := p.src[p.pos]; c {
		case '(', '[':
			close := byte(')')
			if c == '[' {
				close = ']'
			}
			if err := p.argList(close); err != nil {
				return Value{}, err
			}
		case '.':
			p.pos++
			p.skipSpace()
			if _, ok := p.name(); !ok {
				return Value{}, fmt.Errorf("countdown: invalid syntax at offset %d", p.pos)
			}
		default:
			return v, nil
		}
		if v.err == nil || v.err == errNone {
			v = poison(errors.New("countdown: calls, subscripts and attributes are not supported"))
		}
	}
}

// argList parses "(" [test ("," test)* [","]] ")" (or the same in
// brackets), for its syntax only.
func (p *parser) argList(close byte) error {
	p.pos++ // the opening bracket
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return errors.New("countdown: expression nested too deeply")
	}
	for {
		p.skipSpace()
		if p.pos < len(p.src) && p.src[p.pos] == close {
			p.pos++
			return nil
		}
		if _, err := p.test(); err != nil {
			return err
		}
		p.skipSpace()
		switch {
		case p.pos < len(p.src) && p.src[p.pos] == ',':
			p.pos++
		case p.pos < len(p.src) && p.src[p.pos] == close:
			p.pos++
			return nil
		default:
			return fmt.Errorf("countdown: invalid syntax at offset %d", p.pos)
		}
	}
}

// Tuples are no numbers, but and/or/not/if can still test them.
var (
	errTuple      = errors.New("countdown: a tuple is not a number")
	errEmptyTuple = errors.New("countdown: () is not a number")
)

// truth is Python's bool(v); ok is false when evaluating v raised.
func truth(v Value) (t, ok bool) {
	switch v.err {
	case nil:
		return v.truthy(), true
	case errNone, errEmptyTuple:
		return false, true
	case errTuple:
		return true, true
	}
	return false, false
}

// tupleRest continues after the first item of a possible tuple ("1, 2" at
// the top level or inside parentheses): if a comma follows, the remaining
// items (up to close, or the end for close 0; a trailing comma allowed)
// are parsed for their syntax and the value becomes a tuple, which is no
// number. The closing bracket itself is left to the caller.
func (p *parser) tupleRest(v Value, close byte) (Value, error) {
	p.skipSpace()
	if p.pos >= len(p.src) || p.src[p.pos] != ',' {
		return v, nil
	}
	for p.pos < len(p.src) && p.src[p.pos] == ',' {
		p.pos++
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] == close {
			break
		}
		if _, err := p.test(); err != nil {
			return Value{}, err
		}
		p.skipSpace()
	}
	return poison(errTuple), nil
}

package countdown

import (
	"errors"
	"math"
	"math/big"
	"strings"
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
	switch {
	case cond.err != nil:
		return cond, nil
	case cond.truthy():
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
		if v.err == nil && !v.truthy() {
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
		if v.err == nil && v.truthy() {
			v = w
		}
	}
	return v, nil
}

func (p *parser) notTest() (Value, error) {
	if p.keyword("not") {
		v, err := p.nested(p.notTest)
		if err != nil || v.err != nil {
			return v, err
		}
		return pyBool(!v.truthy()), nil
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

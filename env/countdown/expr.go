package countdown

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Value is the result of evaluating an arithmetic expression: a Python int
// (arbitrary precision) or a Python float.
type Value struct {
	IsInt bool
	Int   *big.Int // when IsInt
	Float float64  // when !IsInt
	// err is a runtime error (ZeroDivisionError, TypeError, …) raised while
	// computing the value. It travels with the value so that and/or and
	// conditional expressions can drop it when Python would never have
	// evaluated that operand; Evaluate reports it if it reaches the top.
	err error
}

// poison is a value whose computation raised err.
func poison(err error) Value { return Value{err: err} }

// pyBool is a Python bool as the int it subclasses (True == 1).
func pyBool(b bool) Value {
	if b {
		return Value{IsInt: true, Int: big.NewInt(1)}
	}
	return Value{IsInt: true, Int: big.NewInt(0)}
}

// truthy is Python's bool() of a number.
func (v Value) truthy() bool {
	if v.IsInt {
		return v.Int.Sign() != 0
	}
	return v.Float != 0 // NaN is truthy
}

func (v Value) String() string {
	if v.IsInt {
		return v.Int.String()
	}
	return fmt.Sprint(v.Float)
}

// maxIntBits caps the size of integer intermediates. Python has no cap (it
// would grind on 99**99**99 for ever); past this size we report an error,
// which scores like any other evaluation failure.
const maxIntBits = 1 << 16

var errTooLarge = errors.New("integer too large")

// Evaluate parses expr as a Python expression and evaluates it as Python 3
// would with no names in scope: int and float literals (decimal, 0x/0o/0b,
// underscores, exponents), parentheses, unary + - ~, the binary operators
// + - * / // % ** | ^ & << >>, comparisons (< > == != <= >=, chained),
// not/and/or and conditional expressions, with Python's precedence and
// semantics (true division, floor division and modulo toward −∞, **
// right associative and binding tighter than a unary minus on its left,
// short-circuit evaluation, True/False as the ints 1 and 0). Names, None,
// tuples, lists, calls, subscripts and attributes parse but never yield a
// number, so they are errors unless an and/or/conditional skips them; in/is,
// strings and complex numbers are errors, as are ZeroDivisionError and
// OverflowError cases. Nothing is ever executed.
func Evaluate(expr string) (Value, error) {
	line, err := logicalLine(expr)
	if err != nil {
		return Value{}, err
	}
	p := &parser{src: line}
	// eval() ignores leading spaces and tabs (logicalLine dropped them).
	p.skipSpace()
	if p.pos == len(p.src) {
		return Value{}, errors.New("countdown: empty expression")
	}
	v, err := p.test()
	if err != nil {
		return Value{}, err
	}
	if v, err = p.tupleRest(v, 0); err != nil {
		return Value{}, err
	}
	p.skipSpace()
	for p.pos < len(p.src) && (p.src[p.pos] == '\n' || p.src[p.pos] == '\r') {
		p.pos++
		p.skipSpace()
	}
	if p.pos != len(p.src) {
		return Value{}, fmt.Errorf("countdown: unexpected %q at offset %d", p.rest(), p.pos)
	}
	if v.err != nil {
		return Value{}, v.err
	}
	return v, nil
}

type parser struct {
	src   string
	pos   int
	depth int // parenthesis depth: newlines are whitespace inside parentheses
	calls int // unary/power nesting
}

func (p *parser) rest() string {
	r := p.src[p.pos:]
	if len(r) > 10 {
		r = r[:10] + "…"
	}
	return r
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == ' ' || c == '\t' || c == '\f' || (p.depth > 0 && (c == '\n' || c == '\r')) {
			p.pos++
			continue
		}
		if c == '\\' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '\n' { // explicit line joining
			p.pos += 2
			continue
		}
		break
	}
}

// peekOp returns the operator at the cursor ("**", "//", "+", ...) or "".
func (p *parser) peekOp() string {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return ""
	}
	s := p.src[p.pos:]
	for _, op := range []string{"**", "//", "<<", ">>", "+", "-", "*", "/", "%", "&", "|", "^", "~", "(", ")"} {
		if strings.HasPrefix(s, op) {
			// "*=", "<<=" etc. are statements: leave them (and "==", "<",
			// "<=", which are no operators here) for the caller to reject.
			if len(s) > len(op) && s[len(op)] == '=' {
				return ""
			}
			return op
		}
	}
	return ""
}

const maxDepth = 200 // Python's parser gives up on deeper nesting too

// binaryLevel parses next (op next)* for the operators ops.
func (p *parser) binaryLevel(next func() (Value, error), ops ...string) (Value, error) {
	v, err := next()
	if err != nil {
		return v, err
	}
	for {
		op := p.peekOp()
		found := false
		for _, o := range ops {
			found = found || op == o
		}
		if !found {
			return v, nil
		}
		p.pos += len(op)
		w, err := next()
		if err != nil {
			return w, err
		}
		v = apply(op, v, w)
	}
}

// apply is applyOp on values that may carry an error (the left one first,
// as Python evaluates it first); a new error poisons the result.
func apply(op string, a, b Value) Value {
	if a.err != nil {
		return a
	}
	if b.err != nil {
		return b
	}
	v, err := applyOp(op, a, b)
	if err != nil {
		return poison(err)
	}
	return v
}

// Python's precedence, loosest first: | ^ & (<< >>) (+ -) (* / // %)
// unary (+ - ~) **.
func (p *parser) orExpr() (Value, error)  { return p.binaryLevel(p.xorExpr, "|") }
func (p *parser) xorExpr() (Value, error) { return p.binaryLevel(p.andExpr, "^") }
func (p *parser) andExpr() (Value, error) { return p.binaryLevel(p.shiftExpr, "&") }
func (p *parser) shiftExpr() (Value, error) {
	return p.binaryLevel(p.expr, "<<", ">>")
}

// expr := term (('+'|'-') term)*
func (p *parser) expr() (Value, error) { return p.binaryLevel(p.term, "+", "-") }

// term := factor (('*'|'/'|'//'|'%') factor)*
func (p *parser) term() (Value, error) { return p.binaryLevel(p.factor, "*", "/", "//", "%") }

// factor := ('+'|'-'|'~') factor | power
func (p *parser) factor() (Value, error) {
	op := p.peekOp()
	if op == "~" {
		p.pos++
		v, err := p.nested(p.factor)
		if err != nil || v.err != nil {
			return v, err
		}
		if !v.IsInt {
			return poison(errors.New("countdown: bad operand type for unary ~: 'float'")), nil
		}
		return Value{IsInt: true, Int: new(big.Int).Not(v.Int)}, nil
	}
	if op == "+" || op == "-" {
		p.pos++
		v, err := p.nested(p.factor)
		if err != nil || v.err != nil {
			return v, err
		}
		if op == "-" {
			if v.IsInt {
				return Value{IsInt: true, Int: new(big.Int).Neg(v.Int)}, nil
			}
			return Value{Float: -v.Float}, nil
		}
		return v, nil
	}
	return p.power()
}

// nested calls f one level deeper, bounding the recursion of unary and
// power chains ("------1", "2**2**2**…").
func (p *parser) nested(f func() (Value, error)) (Value, error) {
	p.calls++
	defer func() { p.calls-- }()
	if p.calls > maxDepth {
		return Value{}, errors.New("countdown: expression nested too deeply")
	}
	return f()
}

// power := atom trailer* ['**' factor]
func (p *parser) power() (Value, error) {
	v, err := p.atom()
	if err != nil {
		return v, err
	}
	if v, err = p.trailers(v); err != nil {
		return v, err
	}
	if p.peekOp() == "**" {
		p.pos += 2
		w, err := p.nested(p.factor)
		if err != nil {
			return w, err
		}
		return apply("**", v, w), nil
	}
	return v, nil
}

// atom := number | name | '(' test ')'
func (p *parser) atom() (Value, error) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return Value{}, errors.New("countdown: unexpected end of expression")
	}
	c := p.src[p.pos]
	if c == '(' {
		p.pos++
		p.depth++
		if p.depth > maxDepth {
			return Value{}, errors.New("countdown: expression nested too deeply")
		}
		p.skipSpace()
		if p.pos < len(p.src) && p.src[p.pos] == ')' { // (): an empty tuple
			p.pos++
			p.depth--
			return poison(errEmptyTuple), nil
		}
		v, err := p.test()
		if err != nil {
			return v, err
		}
		if v, err = p.tupleRest(v, ')'); err != nil {
			return v, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return Value{}, fmt.Errorf("countdown: missing ')' at offset %d", p.pos)
		}
		p.pos++
		p.depth--
		return v, nil
	}
	if c >= '0' && c <= '9' || c == '.' {
		return p.number()
	}
	if name, ok := p.name(); ok {
		return nameValue(name)
	}
	if c == '[' { // a list display: no number, truthy unless empty
		empty := strings.HasPrefix(strings.TrimLeft(p.src[p.pos+1:], " \t\f"), "]")
		if err := p.argList(']'); err != nil {
			return Value{}, err
		}
		if empty {
			return poison(errEmptyTuple), nil
		}
		return poison(errTuple), nil
	}
	return Value{}, fmt.Errorf("countdown: unexpected %q at offset %d", p.rest(), p.pos)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c >= 0x80
}

// digitPart scans digit (["_"] digit)* for the given digit class and
// returns the digits without underscores.
func (p *parser) digitPart(ok func(byte) bool) (string, error) {
	start := p.pos
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if ok(c) {
			b.WriteByte(c)
			p.pos++
			continue
		}
		if c == '_' && p.pos > start && p.pos+1 < len(p.src) && ok(p.src[p.pos+1]) {
			p.pos++
			continue
		}
		break
	}
	return b.String(), nil
}

// maxIntDigits is CPython's limit on decimal integer literals
// (sys.int_info.default_max_str_digits).
const maxIntDigits = 4300

// number scans one Python numeric literal.
func (p *parser) number() (Value, error) {
	start := p.pos
	s := p.src
	// Prefixed integers: 0x.., 0o.., 0b...
	if s[p.pos] == '0' && p.pos+1 < len(s) && strings.IndexByte("xXoObB", s[p.pos+1]) >= 0 {
		base := map[byte]int{'x': 16, 'X': 16, 'o': 8, 'O': 8, 'b': 2, 'B': 2}[s[p.pos+1]]
		p.pos += 2
		if p.pos < len(s) && s[p.pos] == '_' {
			p.pos++
		}
		digits, _ := p.digitPart(func(c byte) bool {
			switch base {
			case 2:
				return c == '0' || c == '1'
			case 8:
				return c >= '0' && c <= '7'
			}
			return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
		})
		if digits == "" || p.pos < len(s) && isIdent(s[p.pos]) && !keywordAfterNumber(s[p.pos:]) {
			return Value{}, fmt.Errorf("countdown: invalid literal at offset %d", start)
		}
		n, ok := new(big.Int).SetString(digits, base)
		if !ok || n.BitLen() > maxIntBits {
			return Value{}, fmt.Errorf("countdown: invalid literal at offset %d", start)
		}
		return Value{IsInt: true, Int: n}, nil
	}
	intPart, _ := p.digitPart(isDigit)
	isFloat := false
	text := intPart
	if p.pos < len(s) && s[p.pos] == '.' {
		p.pos++
		frac, _ := p.digitPart(isDigit)
		if intPart == "" && frac == "" {
			return Value{}, fmt.Errorf("countdown: unexpected '.' at offset %d", start)
		}
		isFloat = true
		text += "." + frac
	}
	if p.pos < len(s) && (s[p.pos] == 'e' || s[p.pos] == 'E') {
		q := p.pos + 1
		sign := ""
		if q < len(s) && (s[q] == '+' || s[q] == '-') {
			sign = string(s[q])
			q++
		}
		if q < len(s) && isDigit(s[q]) {
			p.pos = q
			exp, _ := p.digitPart(isDigit)
			isFloat = true
			text += "e" + sign + exp
		}
	}
	if p.pos < len(s) && (s[p.pos] == 'j' || s[p.pos] == 'J') {
		return Value{}, fmt.Errorf("countdown: complex literal at offset %d not supported", start)
	}
	if p.pos < len(s) && isIdent(s[p.pos]) && !keywordAfterNumber(s[p.pos:]) {
		return Value{}, fmt.Errorf("countdown: invalid literal at offset %d", start)
	}
	if isFloat {
		f, err := parseFloat(text)
		if err != nil {
			return Value{}, fmt.Errorf("countdown: invalid literal %q", text)
		}
		return Value{Float: f}, nil
	}
	if len(intPart) > 1 && intPart[0] == '0' && strings.Trim(intPart, "0") != "" {
		return Value{}, fmt.Errorf("countdown: leading zeros in decimal integer literal at offset %d", start)
	}
	if len(intPart) > maxIntDigits {
		return Value{}, fmt.Errorf("countdown: integer literal exceeds %d digits", maxIntDigits)
	}
	n, _ := new(big.Int).SetString(intPart, 10)
	return Value{IsInt: true, Int: n}, nil
}

// parseFloat converts a float literal (underscores removed) with correct
// rounding; out-of-range literals become ±inf or 0 as in Python.
func parseFloat(text string) (float64, error) {
	f, err := strconv.ParseFloat(text, 64)
	var ne *strconv.NumError
	if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
		return f, nil
	}
	return f, err
}

var errZeroDiv = errors.New("countdown: division by zero")

// toFloat is Python's float(int): correctly rounded, OverflowError when out
// of range.
func toFloat(v Value) (float64, error) {
	if !v.IsInt {
		return v.Float, nil
	}
	f, _ := new(big.Float).SetInt(v.Int).Float64()
	if math.IsInf(f, 0) {
		return 0, errors.New("countdown: int too large to convert to float")
	}
	return f, nil
}

func intVal(x *big.Int) (Value, error) {
	if x.BitLen() > maxIntBits {
		return Value{}, errTooLarge
	}
	return Value{IsInt: true, Int: x}, nil
}

// applyOp applies a Python binary operator.
func applyOp(op string, a, b Value) (Value, error) {
	switch op {
	case "&", "|", "^", "<<", ">>":
		if !a.IsInt || !b.IsInt {
			return Value{}, fmt.Errorf("countdown: unsupported operand type(s) for %s: float", op)
		}
		return bitOp(op, a.Int, b.Int)
	}
	if a.IsInt && b.IsInt {
		return intBinary(op, a.Int, b.Int)
	}
	x, err := toFloat(a)
	if err != nil {
		return Value{}, err
	}
	y, err := toFloat(b)
	if err != nil {
		return Value{}, err
	}
	return floatBinary(op, x, y)
}

func intBinary(op string, a, b *big.Int) (Value, error) {
	switch op {
	case "+":
		return intVal(new(big.Int).Add(a, b))
	case "-":
		return intVal(new(big.Int).Sub(a, b))
	case "*":
		if a.BitLen()+b.BitLen() > maxIntBits+1 {
			return Value{}, errTooLarge
		}
		return intVal(new(big.Int).Mul(a, b))
	case "/":
		if b.Sign() == 0 {
			return Value{}, errZeroDiv
		}
		f, _ := new(big.Rat).SetFrac(a, b).Float64()
		if math.IsInf(f, 0) {
			return Value{}, errors.New("countdown: integer division result too large for a float")
		}
		return Value{Float: f}, nil
	case "//", "%":
		if b.Sign() == 0 {
			return Value{}, errZeroDiv
		}
		q, r := new(big.Int).QuoRem(a, b, new(big.Int))
		if r.Sign() != 0 && (r.Sign() < 0) != (b.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
			r.Add(r, b)
		}
		if op == "//" {
			return intVal(q)
		}
		return intVal(r)
	case "**":
		if b.Sign() < 0 {
			x, err := toFloat(Value{IsInt: true, Int: a})
			if err != nil {
				return Value{}, err
			}
			y, err := toFloat(Value{IsInt: true, Int: b})
			if err != nil {
				return Value{}, err
			}
			return floatBinary("**", x, y)
		}
		if a.CmpAbs(big.NewInt(1)) <= 0 {
			// 0, 1 and −1 stay small for any exponent.
			if a.Sign() == 0 {
				if b.Sign() == 0 {
					return intVal(big.NewInt(1))
				}
				return intVal(big.NewInt(0))
			}
			if a.Sign() < 0 && b.Bit(0) == 1 {
				return intVal(big.NewInt(-1))
			}
			return intVal(big.NewInt(1))
		}
		if !b.IsInt64() || b.Int64()*int64(a.BitLen()-1) > maxIntBits {
			return Value{}, errTooLarge
		}
		return intVal(new(big.Int).Exp(a, b, nil))
	}
	return Value{}, fmt.Errorf("countdown: unknown operator %q", op)
}

func floatBinary(op string, x, y float64) (Value, error) {
	switch op {
	case "+":
		return Value{Float: x + y}, nil
	case "-":
		return Value{Float: x - y}, nil
	case "*":
		return Value{Float: x * y}, nil
	case "/":
		if y == 0 {
			return Value{}, errZeroDiv
		}
		return Value{Float: x / y}, nil
	case "//", "%":
		if y == 0 {
			return Value{}, errZeroDiv
		}
		div, mod := pyFloatDivmod(x, y)
		if op == "//" {
			return Value{Float: div}, nil
		}
		return Value{Float: mod}, nil
	case "**":
		return floatPow(x, y)
	}
	return Value{}, fmt.Errorf("countdown: unknown operator %q", op)
}

// pyFloatDivmod is CPython's float divmod (Objects/floatobject.c).
func pyFloatDivmod(vx, wx float64) (float64, float64) {
	mod := math.Mod(vx, wx)
	div := (vx - mod) / wx
	if mod != 0 {
		if (wx < 0) != (mod < 0) {
			mod += wx
			div -= 1.0
		}
	} else {
		mod = math.Copysign(0, wx)
	}
	var floordiv float64
	if div != 0 {
		floordiv = math.Floor(div)
		if div-floordiv > 0.5 {
			floordiv += 1.0
		}
	} else {
		floordiv = math.Copysign(0, vx/wx)
	}
	return floordiv, mod
}

// floatPow is CPython's float_pow for real results.
func floatPow(iv, iw float64) (Value, error) {
	if iw == 0 {
		return Value{Float: 1.0}, nil
	}
	if math.IsNaN(iv) {
		return Value{Float: iv}, nil
	}
	if math.IsNaN(iw) {
		if iv == 1.0 {
			return Value{Float: 1.0}, nil
		}
		return Value{Float: iw}, nil
	}
	if iv == 0 && iw < 0 {
		return Value{}, errors.New("countdown: 0.0 cannot be raised to a negative power")
	}
	if iv < 0 && !math.IsInf(iv, 0) && !math.IsInf(iw, 0) && iw != math.Floor(iw) {
		return Value{}, errors.New("countdown: negative number to a fractional power gives a complex number (not supported)")
	}
	if math.IsInf(iv, 0) || math.IsInf(iw, 0) || iv == 0 {
		return Value{Float: math.Pow(iv, iw)}, nil // C99 Annex F special values
	}
	neg := iv < 0 && math.Mod(iw, 2) != 0 // negative base, odd integer exponent
	r, ok := powCR(math.Abs(iv), iw)
	if !ok {
		return Value{}, errors.New("countdown: float power overflow")
	}
	if neg {
		r = -r
	}
	return Value{Float: r}, nil
}

func bitOp(op string, a, b *big.Int) (Value, error) {
	switch op {
	case "&":
		return intVal(new(big.Int).And(a, b))
	case "|":
		return intVal(new(big.Int).Or(a, b))
	case "^":
		return intVal(new(big.Int).Xor(a, b))
	}
	if b.Sign() < 0 {
		return Value{}, errors.New("countdown: negative shift count")
	}
	if op == ">>" {
		if !b.IsInt64() || b.Int64() > int64(a.BitLen()) {
			if a.Sign() < 0 {
				return intVal(big.NewInt(-1))
			}
			return intVal(big.NewInt(0))
		}
		return intVal(new(big.Int).Rsh(a, uint(b.Int64()))) // floors like Python
	}
	if a.Sign() == 0 {
		return intVal(big.NewInt(0))
	}
	if !b.IsInt64() || b.Int64()+int64(a.BitLen()) > maxIntBits {
		return Value{}, errTooLarge
	}
	return intVal(new(big.Int).Lsh(a, uint(b.Int64())))
}

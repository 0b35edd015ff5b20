package tokenizer

import "strconv"

// Statement nodes.
type (
	jnode interface{}

	textNode   struct{ text string }
	outputNode struct {
		x   jexpr
		pos int
	}
	ifNode struct {
		conds    []jexpr
		bodies   [][]jnode
		elseBody []jnode
	}
	forNode struct {
		targets  []string
		iter     jexpr
		filter   jexpr // optional "if" clause
		body     []jnode
		elseBody []jnode
		pos      int
	}
	setNode struct {
		targets []string // one name, or several for tuple unpacking
		attr    string   // set ns.attr = ...
		value   jexpr
		pos     int
	}
	loopCtlNode struct {
		brk bool
		pos int
	}
)

// Expression nodes.
type (
	jexpr interface{}

	litExpr  struct{ v any }
	nameExpr struct {
		name string
		pos  int
	}
	attrExpr struct {
		obj  jexpr
		name string
		pos  int
	}
	indexExpr struct {
		obj, idx jexpr
		pos      int
	}
	sliceExpr struct {
		obj, lo, hi, step jexpr // nil parts are omitted
		pos               int
	}
	callExpr struct {
		fn     jexpr
		args   []jexpr
		kwargs []kwarg
		pos    int
	}
	filterExpr struct {
		name   string
		x      jexpr
		args   []jexpr
		kwargs []kwarg
		pos    int
	}
	testExpr struct {
		name string
		x    jexpr
		args []jexpr
		neg  bool
		pos  int
	}
	binExpr struct {
		op   string
		l, r jexpr
		pos  int
	}
	unaryExpr struct {
		op  string
		x   jexpr
		pos int
	}
	condExpr struct {
		cond, a, b jexpr // b nil: undefined
		pos        int
	}
	compareExpr struct {
		first jexpr
		ops   []string
		rest  []jexpr
		pos   int
	}
	listExpr struct {
		items []jexpr
		tuple bool
	}
	dictExpr struct{ keys, vals []jexpr }
)

type kwarg struct {
	name string
	x    jexpr
}

// parser turns lexed pieces into a statement tree.
type parser struct {
	src    string
	pieces []piece
	i      int
	// token cursor inside the current tag
	toks []jtoken
	t    int
	end  int // offset of the tag, for errors at its end
}

// parseTemplate parses normalised source (see normalizeSource).
func parseTemplate(src string) ([]jnode, error) {
	pieces, err := lexTemplate(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, pieces: pieces}
	body, endTag, err := p.parseBody()
	if err != nil {
		return nil, err
	}
	if endTag != "" {
		return nil, p.errTok(p.pieces[p.i-1].toks[0], "unexpected {%% %s %%}", endTag)
	}
	return body, nil
}

func (p *parser) errAt(off int, format string, args ...any) error {
	return errAt(p.src, off, format, args...)
}

func (p *parser) errTok(t jtoken, format string, args ...any) error {
	return p.errAt(t.pos, format, args...)
}

// parseBody parses statements until an end/else tag or the end of input;
// it returns the tag name that stopped it ("" at end of input). The
// stopping tag's tokens are left in p.toks with p.t after the name.
func (p *parser) parseBody() ([]jnode, string, error) {
	var out []jnode
	for p.i < len(p.pieces) {
		pc := p.pieces[p.i]
		p.i++
		switch pc.kind {
		case pcText:
			out = append(out, textNode{pc.text})
		case pcOutput:
			p.toks, p.t, p.end = pc.toks, 0, pc.pos
			x, err := p.parseExpr()
			if err != nil {
				return nil, "", err
			}
			if err := p.expectEnd(); err != nil {
				return nil, "", err
			}
			out = append(out, outputNode{x, pc.pos})
		case pcStmt:
			p.toks, p.t, p.end = pc.toks, 0, pc.pos
			kw := p.toks[0]
			if kw.kind != tkName {
				return nil, "", p.errTok(kw, "expected a statement name, got %q", kw.val)
			}
			p.t = 1
			switch kw.val {
			case "if":
				n, err := p.parseIf()
				if err != nil {
					return nil, "", err
				}
				out = append(out, n)
			case "for":
				n, err := p.parseFor(kw.pos)
				if err != nil {
					return nil, "", err
				}
				out = append(out, n)
			case "set":
				n, err := p.parseSet(kw.pos)
				if err != nil {
					return nil, "", err
				}
				out = append(out, n)
			case "break", "continue":
				if err := p.expectEnd(); err != nil {
					return nil, "", err
				}
				out = append(out, loopCtlNode{kw.val == "break", kw.pos})
			case "generation", "endgeneration":
				// transformers' assistant-mask markers render nothing.
				if err := p.expectEnd(); err != nil {
					return nil, "", err
				}
			case "elif", "else", "endif", "endfor":
				return out, kw.val, nil
			default:
				return nil, "", p.errTok(kw, "unsupported statement {%% %s %%}", kw.val)
			}
		}
	}
	return out, "", nil
}

func (p *parser) parseIf() (jnode, error) {
	n := &ifNode{}
	for {
		cond, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expectEnd(); err != nil {
			return nil, err
		}
		body, tag, err := p.parseBody()
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, cond)
		n.bodies = append(n.bodies, body)
		switch tag {
		case "elif":
			continue
		case "else":
			if err := p.expectEnd(); err != nil {
				return nil, err
			}
			body, tag, err := p.parseBody()
			if err != nil {
				return nil, err
			}
			if tag != "endif" {
				return nil, p.errMissing("endif", tag)
			}
			n.elseBody = body
			return n, p.expectEnd()
		case "endif":
			return n, p.expectEnd()
		default:
			return nil, p.errMissing("endif", tag)
		}
	}
}

func (p *parser) errMissing(want, got string) error {
	if got == "" {
		return p.errAt(len(p.src), "missing {%% %s %%}", want)
	}
	return p.errAt(p.toks[0].pos, "unexpected {%% %s %%}, want {%% %s %%}", got, want)
}

func (p *parser) parseFor(pos int) (jnode, error) {
	n := &forNode{pos: pos}
	for {
		t := p.next()
		if t.kind != tkName {
			return nil, p.errTok(t, "expected a loop variable name, got %q", t.val)
		}
		n.targets = append(n.targets, t.val)
		if !p.acceptOp(",") {
			break
		}
	}
	if t := p.next(); t.kind != tkName || t.val != "in" {
		return nil, p.errTok(t, "expected 'in' in for loop, got %q", t.val)
	}
	iter, err := p.parseOr() // no ternary: "if" starts the filter clause
	if err != nil {
		return nil, err
	}
	n.iter = iter
	if p.acceptName("if") {
		if n.filter, err = p.parseOr(); err != nil {
			return nil, err
		}
	}
	if p.peek().kind == tkName && p.peek().val == "recursive" {
		return nil, p.errTok(p.peek(), "unsupported construct: recursive loops")
	}
	if err := p.expectEnd(); err != nil {
		return nil, err
	}
	body, tag, err := p.parseBody()
	if err != nil {
		return nil, err
	}
	n.body = body
	if tag == "else" {
		if err := p.expectEnd(); err != nil {
			return nil, err
		}
		if n.elseBody, tag, err = p.parseBody(); err != nil {
			return nil, err
		}
	}
	if tag != "endfor" {
		return nil, p.errMissing("endfor", tag)
	}
	return n, p.expectEnd()
}

func (p *parser) parseSet(pos int) (jnode, error) {
	n := &setNode{pos: pos}
	t := p.next()
	if t.kind != tkName {
		return nil, p.errTok(t, "expected a variable name after set, got %q", t.val)
	}
	n.targets = []string{t.val}
	if p.acceptOp(".") {
		a := p.next()
		if a.kind != tkName {
			return nil, p.errTok(a, "expected an attribute name, got %q", a.val)
		}
		n.attr = a.val
	} else {
		for p.acceptOp(",") {
			t := p.next()
			if t.kind != tkName {
				return nil, p.errTok(t, "expected a variable name, got %q", t.val)
			}
			n.targets = append(n.targets, t.val)
		}
	}
	if !p.acceptOp("=") {
		return nil, p.errTok(p.peek(), "unsupported construct: block set (use {%% set x = ... %%})")
	}
	v, err := p.parseTupleOrExpr()
	if err != nil {
		return nil, err
	}
	n.value = v
	return n, p.expectEnd()
}

// Token cursor helpers.

func (p *parser) peek() jtoken {
	if p.t < len(p.toks) {
		return p.toks[p.t]
	}
	end := p.end
	if len(p.toks) > 0 {
		last := p.toks[len(p.toks)-1]
		end = last.pos + len(last.val)
	}
	return jtoken{kind: tkEOF, val: "end of tag", pos: end}
}

func (p *parser) next() jtoken {
	t := p.peek()
	if p.t < len(p.toks) {
		p.t++
	}
	return t
}

func (p *parser) acceptOp(op string) bool {
	if t := p.peek(); t.kind == tkOp && t.val == op {
		p.t++
		return true
	}
	return false
}

func (p *parser) acceptName(name string) bool {
	if t := p.peek(); t.kind == tkName && t.val == name {
		p.t++
		return true
	}
	return false
}

func (p *parser) expectOp(op string) error {
	if !p.acceptOp(op) {
		t := p.peek()
		return p.errTok(t, "expected %q, got %q", op, t.val)
	}
	return nil
}

func (p *parser) expectEnd() error {
	if t := p.peek(); t.kind != tkEOF {
		return p.errTok(t, "unexpected %q", t.val)
	}
	return nil
}

// Expressions, lowest precedence first (as Jinja2's parser).

func (p *parser) parseTupleOrExpr() (jexpr, error) {
	x, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tkOp || p.peek().val != "," {
		return x, nil
	}
	items := []jexpr{x}
	for p.acceptOp(",") {
		if p.peek().kind == tkEOF {
			break
		}
		y, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		items = append(items, y)
	}
	return listExpr{items, true}, nil
}

func (p *parser) parseExpr() (jexpr, error) {
	pos := p.peek().pos
	x, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.acceptName("if") {
		cond, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		var alt jexpr
		if p.acceptName("else") {
			if alt, err = p.parseExpr(); err != nil {
				return nil, err
			}
		}
		x = condExpr{cond, x, alt, pos}
	}
	return x, nil
}

func (p *parser) parseOr() (jexpr, error) {
	x, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if !p.acceptName("or") {
			return x, nil
		}
		y, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		x = binExpr{"or", x, y, t.pos}
	}
}

func (p *parser) parseAnd() (jexpr, error) {
	x, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if !p.acceptName("and") {
			return x, nil
		}
		y, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		x = binExpr{"and", x, y, t.pos}
	}
}

func (p *parser) parseNot() (jexpr, error) {
	if t := p.peek(); t.kind == tkName && t.val == "not" {
		p.t++
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return unaryExpr{"not", x, t.pos}, nil
	}
	return p.parseCompare()
}

func (p *parser) parseCompare() (jexpr, error) {
	pos := p.peek().pos
	x, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	c := compareExpr{first: x, pos: pos}
	for {
		t := p.peek()
		var op string
		switch {
		case t.kind == tkOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == ">" || t.val == "<=" || t.val == ">="):
			op = t.val
			p.t++
		case t.kind == tkName && t.val == "in":
			op = "in"
			p.t++
		case t.kind == tkName && t.val == "not" && p.t+1 < len(p.toks) && p.toks[p.t+1].kind == tkName && p.toks[p.t+1].val == "in":
			op = "not in"
			p.t += 2
		}
		if op == "" {
			break
		}
		y, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		c.ops = append(c.ops, op)
		c.rest = append(c.rest, y)
	}
	if len(c.ops) == 0 {
		return x, nil
	}
	return c, nil
}

func (p *parser) parseMath1() (jexpr, error) {
	x, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tkOp || (t.val != "+" && t.val != "-") {
			return x, nil
		}
		p.t++
		y, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		x = binExpr{t.val, x, y, t.pos}
	}
}

func (p *parser) parseConcat() (jexpr, error) {
	x, err := p.parseMath2()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if !p.acceptOp("~") {
			return x, nil
		}
		y, err := p.parseMath2()
		if err != nil {
			return nil, err
		}
		x = binExpr{"~", x, y, t.pos}
	}
}

func (p *parser) parseMath2() (jexpr, error) {
	x, err := p.parsePow()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tkOp || (t.val != "*" && t.val != "/" && t.val != "//" && t.val != "%") {
			return x, nil
		}
		p.t++
		y, err := p.parsePow()
		if err != nil {
			return nil, err
		}
		x = binExpr{t.val, x, y, t.pos}
	}
}

func (p *parser) parsePow() (jexpr, error) {
	x, err := p.parseUnary(true)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if !p.acceptOp("**") {
			return x, nil
		}
		y, err := p.parseUnary(true)
		if err != nil {
			return nil, err
		}
		x = binExpr{"**", x, y, t.pos}
	}
}

func (p *parser) parseUnary(withFilter bool) (jexpr, error) {
	t := p.peek()
	var x jexpr
	var err error
	if t.kind == tkOp && (t.val == "-" || t.val == "+") {
		p.t++
		y, err := p.parseUnary(false)
		if err != nil {
			return nil, err
		}
		x = unaryExpr{t.val, y, t.pos}
	} else {
		if x, err = p.parsePrimary(); err != nil {
			return nil, err
		}
	}
	if x, err = p.parsePostfix(x); err != nil {
		return nil, err
	}
	if withFilter {
		return p.parseFilters(x)
	}
	return x, nil
}

func (p *parser) parsePrimary() (jexpr, error) {
	t := p.next()
	switch t.kind {
	case tkString:
		s := t.val
		for p.peek().kind == tkString { // adjacent literals concatenate
			s += p.next().val
		}
		return litExpr{s}, nil
	case tkInt:
		v, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			return nil, p.errTok(t, "integer literal %s out of range", t.val)
		}
		return litExpr{v}, nil
	case tkFloat:
		v, err := strconv.ParseFloat(t.val, 64)
		if err != nil {
			return nil, p.errTok(t, "bad float literal %s", t.val)
		}
		return litExpr{v}, nil
	case tkName:
		switch t.val {
		case "true", "True":
			return litExpr{true}, nil
		case "false", "False":
			return litExpr{false}, nil
		case "none", "None":
			return litExpr{nil}, nil
		}
		return nameExpr{t.val, t.pos}, nil
	case tkOp:
		switch t.val {
		case "(":
			if p.acceptOp(")") {
				return listExpr{tuple: true}, nil
			}
			x, err := p.parseTupleOrExpr()
			if err != nil {
				return nil, err
			}
			return x, p.expectOp(")")
		case "[":
			var items []jexpr
			for !p.acceptOp("]") {
				if len(items) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.acceptOp("]") {
						break
					}
				}
				x, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				items = append(items, x)
			}
			return listExpr{items: items}, nil
		case "{":
			d := dictExpr{}
			for !p.acceptOp("}") {
				if len(d.keys) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.acceptOp("}") {
						break
					}
				}
				k, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(":"); err != nil {
					return nil, err
				}
				v, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				d.keys = append(d.keys, k)
				d.vals = append(d.vals, v)
			}
			return d, nil
		}
	}
	return nil, p.errTok(t, "unexpected %q in expression", t.val)
}

func (p *parser) parsePostfix(x jexpr) (jexpr, error) {
	for {
		t := p.peek()
		if t.kind != tkOp {
			return x, nil
		}
		switch t.val {
		case ".":
			p.t++
			a := p.next()
			if a.kind != tkName && a.kind != tkInt {
				return nil, p.errTok(a, "expected an attribute name after '.', got %q", a.val)
			}
			if a.kind == tkInt {
				n, _ := strconv.ParseInt(a.val, 10, 64)
				x = indexExpr{x, litExpr{n}, a.pos}
			} else {
				x = attrExpr{x, a.val, a.pos}
			}
		case "[":
			p.t++
			var parts [3]jexpr
			isSlice := false
			for k := 0; k < 3; k++ {
				if pt := p.peek(); !(pt.kind == tkOp && (pt.val == ":" || pt.val == "]")) {
					e, err := p.parseExpr()
					if err != nil {
						return nil, err
					}
					parts[k] = e
				}
				if k < 2 && p.acceptOp(":") {
					isSlice = true
					continue
				}
				break
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
			if isSlice {
				x = sliceExpr{x, parts[0], parts[1], parts[2], t.pos}
			} else {
				if parts[0] == nil {
					return nil, p.errTok(t, "empty subscript")
				}
				x = indexExpr{x, parts[0], t.pos}
			}
		case "(":
			p.t++
			args, kwargs, err := p.parseArgs()
			if err != nil {
				return nil, err
			}
			x = callExpr{x, args, kwargs, t.pos}
		default:
			return x, nil
		}
	}
}

// parseArgs parses call arguments after "(" up to and including ")".
func (p *parser) parseArgs() ([]jexpr, []kwarg, error) {
	var args []jexpr
	var kwargs []kwarg
	for !p.acceptOp(")") {
		if len(args)+len(kwargs) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, nil, err
			}
			if p.acceptOp(")") {
				break
			}
		}
		if t := p.peek(); t.kind == tkName && p.t+1 < len(p.toks) && p.toks[p.t+1].kind == tkOp && p.toks[p.t+1].val == "=" {
			p.t += 2
			x, err := p.parseExpr()
			if err != nil {
				return nil, nil, err
			}
			kwargs = append(kwargs, kwarg{t.val, x})
			continue
		}
		if t := p.peek(); t.kind == tkOp && (t.val == "*" || t.val == "**") {
			return nil, nil, p.errTok(t, "unsupported construct: *args/**kwargs in calls")
		}
		if len(kwargs) > 0 {
			return nil, nil, p.errTok(p.peek(), "positional argument after keyword argument")
		}
		x, err := p.parseExpr()
		if err != nil {
			return nil, nil, err
		}
		args = append(args, x)
	}
	return args, kwargs, nil
}

func (p *parser) parseFilters(x jexpr) (jexpr, error) {
	for {
		t := p.peek()
		switch {
		case t.kind == tkOp && t.val == "|":
			p.t++
			name := p.next()
			if name.kind != tkName {
				return nil, p.errTok(name, "expected a filter name after '|', got %q", name.val)
			}
			f := filterExpr{name: name.val, x: x, pos: name.pos}
			if p.acceptOp("(") {
				args, kwargs, err := p.parseArgs()
				if err != nil {
					return nil, err
				}
				f.args, f.kwargs = args, kwargs
			}
			x = f
		case t.kind == tkName && t.val == "is":
			p.t++
			neg := p.acceptName("not")
			name := p.next()
			if name.kind != tkName {
				return nil, p.errTok(name, "expected a test name after 'is', got %q", name.val)
			}
			te := testExpr{name: name.val, x: x, neg: neg, pos: name.pos}
			if p.acceptOp("(") {
				args, _, err := p.parseArgs()
				if err != nil {
					return nil, err
				}
				te.args = args
			} else if nt := p.peek(); nt.kind == tkString || nt.kind == tkInt || nt.kind == tkFloat ||
				(nt.kind == tkName && nt.val != "and" && nt.val != "or" && nt.val != "if" && nt.val != "else" && nt.val != "is" && nt.val != "in" && nt.val != "not") {
				arg, err := p.parsePrimary()
				if err != nil {
					return nil, err
				}
				if arg, err = p.parsePostfix(arg); err != nil {
					return nil, err
				}
				te.args = []jexpr{arg}
			}
			x = te
		default:
			return x, nil
		}
	}
}

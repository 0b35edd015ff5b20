package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
)

// This file holds the lexer of the Jinja subset: template text is cut into
// text, output ({{ }}), statement ({% %}) and comment ({# #}) pieces with
// whitespace control as transformers configures Jinja2 (trim_blocks and
// lstrip_blocks on), and tag contents into expression tokens.

// TemplateError is a chat-template parse or render error at a position of
// the template source.
type TemplateError struct {
	Line, Col int    // 1-based position in the template source
	Msg       string // what went wrong
}

func (e *TemplateError) Error() string {
	return fmt.Sprintf("chat template: line %d col %d: %s", e.Line, e.Col, e.Msg)
}

type tokKind int

const (
	tkEOF tokKind = iota
	tkName
	tkString
	tkInt
	tkFloat
	tkOp
)

type jtoken struct {
	kind tokKind
	val  string
	pos  int // byte offset in the source
}

type pieceKind int

const (
	pcText pieceKind = iota
	pcOutput
	pcStmt
)

type piece struct {
	kind pieceKind
	text string   // pcText
	toks []jtoken // pcOutput, pcStmt
	pos  int
}

// posOf converts a byte offset to line and column.
func posOf(src string, off int) (int, int) {
	if off > len(src) {
		off = len(src)
	}
	line := 1 + strings.Count(src[:off], "\n")
	col := off - strings.LastIndexByte(src[:off], '\n')
	return line, col
}

func errAt(src string, off int, format string, args ...any) *TemplateError {
	l, c := posOf(src, off)
	return &TemplateError{Line: l, Col: c, Msg: fmt.Sprintf(format, args...)}
}

var rawEnd = regexp.MustCompile(`\{%([-+]?)\s*endraw\s*([-+]?)%\}`)

// normalizeSource applies Jinja2's defaults to template source: newlines
// ("\r\n", "\r") become "\n" and one trailing newline is dropped
// (keep_trailing_newline=False).
func normalizeSource(src string) string {
	if strings.ContainsRune(src, '\r') {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	return strings.TrimSuffix(src, "\n")
}

// lexTemplate splits src (normalised) into pieces.
func lexTemplate(src string) ([]piece, error) {
	var out []piece
	i := 0
	stripNext := false // the previous tag ended with "-": strip leading whitespace
	trimNL := false    // the previous tag was a block/comment: drop one newline
	for i <= len(src) {
		j := nextTagStart(src, i)
		text := src[i:j]
		if stripNext {
			text = strings.TrimLeft(text, " \t\n\r\v\f")
		} else if trimNL {
			if strings.HasPrefix(text, "\r\n") {
				text = text[2:]
			} else if strings.HasPrefix(text, "\n") {
				text = text[1:]
			}
		}
		stripNext, trimNL = false, false
		if j == len(src) {
			if text != "" {
				out = append(out, piece{kind: pcText, text: text, pos: i})
			}
			break
		}
		kind := src[j+1] // '{', '%' or '#'
		start := j + 2
		leftMod := byte(0)
		if start < len(src) && (src[start] == '-' || src[start] == '+') {
			leftMod = src[start]
			start++
		}
		// Left whitespace control on the preceding text.
		switch {
		case leftMod == '-':
			text = strings.TrimRight(text, " \t\n\r\v\f")
		case leftMod == 0 && kind != '{':
			// lstrip_blocks: drop spaces and tabs between the line start and the tag.
			raw := src[i:j]
			k := len(raw)
			for k > 0 && (raw[k-1] == ' ' || raw[k-1] == '\t') {
				k--
			}
			if (k > 0 && raw[k-1] == '\n') || (k == 0 && (i == 0 || src[i-1] == '\n')) {
				text = strings.TrimRight(text, " \t")
			}
		}
		if text != "" {
			out = append(out, piece{kind: pcText, text: text, pos: i})
		}
		if kind == '#' {
			end := strings.Index(src[start:], "#}")
			if end < 0 {
				return nil, errAt(src, j, "unclosed comment")
			}
			end += start
			if end > start && src[end-1] == '-' {
				stripNext = true
			} else if !(end > start && src[end-1] == '+') {
				trimNL = true
			}
			i = end + 2
			continue
		}
		closer := "}}"
		if kind == '%' {
			closer = "%}"
		}
		toks, end, rightMod, err := lexTag(src, start, closer)
		if err != nil {
			return nil, err
		}
		if kind == '%' && len(toks) == 1 && toks[0].kind == tkName && toks[0].val == "raw" {
			loc := rawEnd.FindStringSubmatchIndex(src[end:])
			if loc == nil {
				return nil, errAt(src, j, "missing {%% endraw %%}")
			}
			body := src[end : end+loc[0]]
			if rightMod == '-' {
				body = strings.TrimLeft(body, " \t\n\r\v\f")
			}
			if loc[3] > loc[2] && src[end+loc[2]] == '-' {
				body = strings.TrimRight(body, " \t\n\r\v\f")
			}
			if body != "" {
				out = append(out, piece{kind: pcText, text: body, pos: end})
			}
			if loc[5] > loc[4] && src[end+loc[4]] == '-' {
				stripNext = true
			} else if !(loc[5] > loc[4] && src[end+loc[4]] == '+') {
				trimNL = true
			}
			i = end + loc[1]
			continue
		}
		pk := pcOutput
		if kind == '%' {
			pk = pcStmt
			if len(toks) == 0 {
				return nil, errAt(src, j, "empty statement tag")
			}
		} else if len(toks) == 0 {
			return nil, errAt(src, j, "empty expression tag")
		}
		out = append(out, piece{kind: pk, toks: toks, pos: j})
		if rightMod == '-' {
			stripNext = true
		} else if kind == '%' && rightMod != '+' {
			trimNL = true
		}
		i = end
	}
	return out, nil
}

// nextTagStart returns the offset of the next "{{", "{%" or "{#" at or after
// i, or len(src).
func nextTagStart(src string, i int) int {
	for {
		k := strings.IndexByte(src[i:], '{')
		if k < 0 || i+k+1 >= len(src) {
			return len(src)
		}
		c := src[i+k+1]
		if c == '{' || c == '%' || c == '#' {
			return i + k
		}
		i += k + 1
	}
}

// lexTag tokenizes a tag body starting at i up to closer ("}}" or "%}"),
// which may be preceded by "-" or "+". It returns the tokens, the offset
// after the closer and the modifier before it.
func lexTag(src string, i int, closer string) ([]jtoken, int, byte, error) {
	var toks []jtoken
	depth := 0 // open brackets: the closer only counts outside them, as in Jinja2
	for {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
			i++
		}
		if i >= len(src) {
			return nil, 0, 0, errAt(src, i, "unclosed tag: missing %q", closer)
		}
		if depth == 0 && strings.HasPrefix(src[i:], closer) {
			return toks, i + 2, 0, nil
		}
		if depth == 0 && (src[i] == '-' || src[i] == '+') && strings.HasPrefix(src[i+1:], closer) {
			return toks, i + 3, src[i], nil
		}
		c := src[i]
		switch {
		case c == '\'' || c == '"':
			s, n, err := lexString(src, i)
			if err != nil {
				return nil, 0, 0, err
			}
			toks = append(toks, jtoken{tkString, s, i})
			i += n
		case c >= '0' && c <= '9':
			k := i
			for k < len(src) && (src[k] >= '0' && src[k] <= '9' || src[k] == '_') {
				k++
			}
			kind := tkInt
			if k+1 < len(src) && src[k] == '.' && src[k+1] >= '0' && src[k+1] <= '9' {
				kind = tkFloat
				k++
				for k < len(src) && (src[k] >= '0' && src[k] <= '9' || src[k] == '_') {
					k++
				}
			}
			if k < len(src) && (src[k] == 'e' || src[k] == 'E') {
				m := k + 1
				if m < len(src) && (src[m] == '+' || src[m] == '-') {
					m++
				}
				if m < len(src) && src[m] >= '0' && src[m] <= '9' {
					kind = tkFloat
					for m < len(src) && src[m] >= '0' && src[m] <= '9' {
						m++
					}
					k = m
				}
			}
			toks = append(toks, jtoken{kind, strings.ReplaceAll(src[i:k], "_", ""), i})
			i = k
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			k := i
			for k < len(src) && (src[k] == '_' || src[k] >= 'a' && src[k] <= 'z' || src[k] >= 'A' && src[k] <= 'Z' || src[k] >= '0' && src[k] <= '9') {
				k++
			}
			toks = append(toks, jtoken{tkName, src[i:k], i})
			i = k
		default:
			op := ""
			for _, o := range []string{"//", "**", "==", "!=", "<=", ">="} {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				if !strings.ContainsRune("+-*/%~|.,:()[]{}<>=!", rune(c)) {
					return nil, 0, 0, errAt(src, i, "unexpected character %q in tag", c)
				}
				op = string(c)
			}
			switch op {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth > 0 {
					depth--
				}
			}
			toks = append(toks, jtoken{tkOp, op, i})
			i += len(op)
		}
	}
}

// lexString reads a quoted string literal with Python escapes.
func lexString(src string, i int) (string, int, error) {
	q := src[i]
	var sb strings.Builder
	k := i + 1
	for k < len(src) {
		c := src[k]
		if c == q {
			return sb.String(), k + 1 - i, nil
		}
		if c != '\\' {
			sb.WriteByte(c)
			k++
			continue
		}
		if k+1 >= len(src) {
			break
		}
		e := src[k+1]
		k += 2
		switch e {
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case 'r':
			sb.WriteByte('\r')
		case '\\', '\'', '"':
			sb.WriteByte(e)
		case '0':
			sb.WriteByte(0)
		case 'u', 'x', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if k+n > len(src) {
				return "", 0, errAt(src, k-2, "bad \\%c escape in string", e)
			}
			var r rune
			for _, h := range src[k : k+n] {
				var d rune
				switch {
				case h >= '0' && h <= '9':
					d = h - '0'
				case h >= 'a' && h <= 'f':
					d = h - 'a' + 10
				case h >= 'A' && h <= 'F':
					d = h - 'A' + 10
				default:
					return "", 0, errAt(src, k-2, "bad \\%c escape in string", e)
				}
				r = r*16 + d
			}
			sb.WriteRune(r)
			k += n
		default: // Python keeps unknown escapes verbatim
			sb.WriteByte('\\')
			sb.WriteByte(e)
		}
	}
	return "", 0, errAt(src, i, "unterminated string literal")
}

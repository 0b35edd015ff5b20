package docscheck

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// root is the repository root, two levels above this package.
var root = func() string {
	d, err := filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	return d
}()

// needs are the markers a command block may carry.
var needs = map[string]bool{"gpu": true, "model": true, "network": true, "root": true, "minutes": true}

// docFiles are the documents checked: README.md and doc/**.md.
func docFiles(t *testing.T) []string {
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "doc"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// block is one fenced code block.
type block struct {
	file  string
	line  int // of the opening fence
	lang  string
	needs string // the marker's WHAT, "" when unmarked
	lines []string
}

var needsRe = regexp.MustCompile(`^<!--\s*needs:\s*([a-z]+)\s*-->$`)

// parse returns a document's fenced blocks and its text outside them.
func parse(t *testing.T, file string) ([]block, []string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	var prose []string
	var cur *block
	prev := "" // the last non-blank line outside blocks
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur != nil {
			if strings.HasPrefix(trimmed, "```") {
				blocks = append(blocks, *cur)
				cur = nil
				continue
			}
			cur.lines = append(cur.lines, line)
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			cur = &block{file: file, line: n, lang: strings.TrimPrefix(trimmed, "```")}
			if m := needsRe.FindStringSubmatch(prev); m != nil {
				cur.needs = m[1]
			}
			continue
		}
		prose = append(prose, line)
		if trimmed != "" {
			prev = trimmed
		}
	}
	if cur != nil {
		t.Errorf("%s:%d: unclosed code block", rel(file), cur.line)
	}
	return blocks, prose
}

func rel(p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return r
}

func isCommandBlock(b block) bool {
	switch b.lang {
	case "", "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// commands splits a block into command lines: continuations joined,
// comments dropped, `a && b` split.
func commands(b block) []string {
	var out []string
	joined := ""
	for _, l := range b.lines {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		l = strings.TrimSpace(l)
		if strings.HasSuffix(l, `\`) {
			joined += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		l = joined + l
		joined = ""
		for _, c := range strings.Split(l, "&&") {
			if c = strings.TrimSpace(c); c != "" {
				out = append(out, c)
			}
		}
	}
	return out
}

// fields splits a command line on spaces, keeping single- or
// double-quoted words together (without their quotes).
func fields(s string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

var makeRule = regexp.MustCompile(`(?m)^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:([^=]|$)`)

func makeTargets(t *testing.T) map[string]bool {
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range makeRule.FindAllStringSubmatch(string(data), -1) {
		for _, name := range strings.Fields(m[1]) {
			targets[name] = true
		}
	}
	return targets
}

// TestCommandBlocks runs every unmarked command block of the documents.
func TestCommandBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ragen binary")
	}
	targets := makeTargets(t)
	var bin string
	build := func() string {
		if bin != "" {
			return bin
		}
		if os.Getenv("CGO_ENABLED") == "0" {
			t.Skip("the ragen binary needs cgo (libtorch)")
		}
		bin = filepath.Join(t.TempDir(), "ragen")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/ragen")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/ragen: %v\n%s", err, out)
		}
		return bin
	}
	work := t.TempDir() // commands run here; paths that exist in the repository are made absolute
	for _, file := range docFiles(t) {
		blocks, _ := parse(t, file)
		for _, b := range blocks {
			if !isCommandBlock(b) {
				continue
			}
			where := fmt.Sprintf("%s:%d", rel(b.file), b.line)
			if b.needs != "" {
				if !needs[b.needs] {
					t.Errorf("%s: unknown marker needs: %s (known: gpu, model, network, root, minutes)", where, b.needs)
				}
				continue
			}
			for _, c := range commands(b) {
				args := fields(c)
				switch {
				case len(args) >= 3 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/ragen":
					args = append([]string{"ragen"}, args[3:]...)
				case args[0] == "make":
					for _, tg := range args[1:] {
						if !targets[tg] {
							t.Errorf("%s: %q: the Makefile has no target %q", where, c, tg)
						}
					}
					continue
				}
				if args[0] != "ragen" {
					t.Errorf("%s: %q: the docs test cannot run this; mark the block <!-- needs: WHAT --> (gpu, model, network, root, minutes) or teach the test", where, c)
					continue
				}
				runRagen(t, build(), work, where, c, args[1:])
			}
		}
	}
}

// runRagen runs one documented ragen command in its quick form.
func runRagen(t *testing.T, bin, work, where, line string, args []string) {
	quick := append([]string(nil), args...)
	for i, a := range quick {
		if _, err := os.Stat(filepath.Join(root, a)); err == nil && !strings.HasPrefix(a, "-") && a != "" && !strings.Contains(a, "=") {
			quick[i] = filepath.Join(root, a)
		}
	}
	if len(quick) > 0 {
		switch quick[0] {
		case "train", "eval", "sft", "demo":
			if !strings.Contains(line, "--cfg") {
				quick = append(quick, "--cfg", "job")
			}
		case "dash", "serve-envs", "visualize", "launch":
			quick = append(quick[:1], "--help")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, quick...)
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	t.Logf("%s: ragen %s", where, strings.Join(args, " "))
	if err != nil {
		t.Errorf("%s: %q (run as ragen %s): %v\n%s", where, line, strings.Join(quick, " "), err, tail(out))
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

var (
	linkRe    = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	headingRe = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	idRe      = regexp.MustCompile(`<a id="([^"]+)"`)
	codeRe    = regexp.MustCompile("`[^`]*`")
)

// anchors are a markdown file's heading slugs (GitHub's rule) and explicit ids.
func anchors(t *testing.T, file string) map[string]bool {
	_, prose := parse(t, file)
	got := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose {
		for _, m := range idRe.FindAllStringSubmatch(l, -1) {
			got[m[1]] = true
		}
		m := headingRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			got[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			got[s] = true
		}
		seen[s]++
	}
	return got
}

// slug is GitHub's heading anchor: lower case, punctuation dropped, spaces
// to hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ' || r == '-':
			b.WriteRune('-')
		case r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestLinks checks that every relative link of the documents resolves,
// and its #anchor too when it points into a markdown file.
func TestLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	for _, file := range docFiles(t) {
		_, prose := parse(t, file)
		for i, l := range prose {
			l = codeRe.ReplaceAllString(l, "")
			for _, m := range linkRe.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s (prose line %d): link %s: %v", rel(file), i+1, target, err)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if cache[dest] == nil {
					cache[dest] = anchors(t, dest)
				}
				if !cache[dest][anchor] {
					t.Errorf("%s (prose line %d): link %s: no heading or id %q in %s", rel(file), i+1, target, anchor, rel(dest))
				}
			}
		}
	}
}

package config

import (
	"strings"
	"testing"
)

// FuzzParseOverride: the override parser never panics, and every accepted override
// applies to a small config without panicking.
func FuzzParseOverride(f *testing.F) {
	seeds := []string{
		"a.b=1", "+a.c=[1,2,{x: 'y'}]", "++a=null", "~a.b", "~a.b=1", "a.b=${a.c}",
		"a.b='q\\'uoted'", `a.b="x,y"`, "a.b=int(3.5)", "a.b=choice(1,2)", "a.b=1,2", "a.b=[",
		"a.l[0]=3", "a..b=1", "=", "+", "~", "a.b={k:[1,{z:2}]}", `a.b=\,\ x`, "a.b=${oc.env:X,1}",
		"a.b=1e-6", "a.b=-inf", "a.b=nan", "a.b=007", "a.b=TRUE", "a.b=  spaced out ",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ov, err := ParseOverride(s)
		if err != nil {
			return
		}
		if ov.Key == "" {
			t.Fatalf("accepted %q with an empty key", s)
		}
		root, _ := parseYAML([]byte("a:\n  b: 1\n  c: text\n  l: [1, 2]\n  m: {x: 1}\n"))
		_ = applyOverride(root, ov)
		_ = resolveAll(root, func(string) (string, bool) { return "", false })
		_ = renderYAML(root)
	})
}

// FuzzLoadYAML: arbitrary YAML plus an override never panics the loader, and whatever
// loads can be printed and loaded again to the same hash.
func FuzzLoadYAML(f *testing.F) {
	f.Add("a: 1\nb: ${a}\n", "a=2")
	f.Add("defaults: [x]\n", "+z=1")
	f.Add("a: [1, {b: ${.c}}]\nc: 2\n", "~a")
	f.Add("a: &x {b: 1}\nc: *x\nd: {<<: *x, e: 2}\n", "c.b=3")
	f.Add("a: ${oc.select:nope,1}\nb: '${a}-${a}'\n", "++q=[]")
	f.Fuzz(func(t *testing.T, doc, ov string) {
		if len(doc) > 4096 {
			return
		}
		fs := mapFS(map[string]string{"c.yaml": doc, "x.yaml": "x: 1\n"})
		tr, err := Load("c", []string{ov}, WithFS(fs), WithEnv(func(string) (string, bool) { return "", false }))
		if err != nil {
			return
		}
		out := tr.YAML()
		back, err := Load("o", nil, WithFS(mapFS(map[string]string{"o.yaml": strings.ReplaceAll(out, "${", `\${`)})))
		if err != nil {
			t.Fatalf("printed config does not load: %v\n%s", err, out)
		}
		_ = back.Keys()
		_ = Check(tr)
	})
}

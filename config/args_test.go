package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	cases := []struct {
		in   []string
		want Args
	}{
		{[]string{"--config-name", "_2_sokoban", "a=1", "+b=2"}, Args{ConfigName: "_2_sokoban", Overrides: []string{"a=1", "+b=2"}}},
		{[]string{"--config-name=_1_bandit.yaml", "-cp", "/tmp/cfg"}, Args{ConfigName: "_1_bandit", ConfigPath: "/tmp/cfg"}},
		{[]string{"-cn", "eval", "--cfg", "job", "--resolve", "~x"}, Args{ConfigName: "eval", Cfg: "job", Resolve: true, Overrides: []string{"~x"}}},
		{[]string{"++x.y=[1,2]", "--config-path=d"}, Args{ConfigPath: "d", Overrides: []string{"++x.y=[1,2]"}}},
		{nil, Args{}},
	}
	for _, c := range cases {
		got, err := ParseArgs(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %+v, want %+v", c.in, got, c.want)
		}
	}
	for in, want := range map[string]string{
		"--config-name":     "needs a value",
		"--cfg hydra":       `only "job"`,
		"--resolve=1":       "takes no value",
		"--verbose":         `unknown flag "--verbose"`,
		"--config-name x a": "missing '='",
		"a=1,2":             "ambiguous",
	} {
		_, err := ParseArgs(strings.Fields(in))
		wantErr(t, err, want)
	}
}

func TestArgsLoadPrint(t *testing.T) {
	a, err := ParseArgs([]string{"--config-name", "_2_sokoban", "trainer.experiment_name=x", "--cfg", "job"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := a.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.Print(tr), "default_local_dir: checkpoints/${trainer.project_name}/${trainer.experiment_name}") {
		t.Error("--cfg job without --resolve prints interpolations")
	}
	a.Resolve = true
	if !strings.Contains(a.Print(tr), "default_local_dir: checkpoints/ragen/x") {
		t.Error("--resolve prints resolved values")
	}
}

func FuzzParseArgs(f *testing.F) {
	f.Add("--config-name _2_sokoban a=1 +b=[1,2] --cfg job --resolve")
	f.Add("-cn=x -cp=/d ~a.b ++c={d: 1}")
	f.Fuzz(func(t *testing.T, line string) {
		a, err := ParseArgs(strings.Fields(line))
		if err != nil {
			return
		}
		for _, o := range a.Overrides {
			if _, err := ParseOverride(o); err != nil {
				t.Fatalf("accepted override %q fails to parse: %v", o, err)
			}
		}
	})
}

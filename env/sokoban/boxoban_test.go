package sokoban

import (
	"strings"
	"testing"

	"ragen/env"
)

const vendored = "testdata/boxoban-unfiltered-test-000-first100.txt"

func TestLoadVendoredLevels(t *testing.T) {
	levels, err := LoadLevels(vendored)
	if err != nil {
		t.Fatal(err)
	}
	if len(levels) != 100 || levels[0].ID != "0" || levels[99].ID != "99" {
		t.Fatalf("%d levels, ids %q..%q", len(levels), levels[0].ID, levels[len(levels)-1].ID)
	}
	// Level 0 as printed in the file.
	want := "##########\n###    . #\n## .   $.#\n##    .$ #\n#####    #\n####   ###\n##### $###\n#####$ ###\n#####@####\n##########"
	r, err := levels[0].Room()
	if err != nil || r.String() != want {
		t.Errorf("level 0:\n%s\nwant\n%s (%v)", r, want, err)
	}
	for _, l := range levels {
		r, err := l.Room()
		if err != nil {
			t.Fatal(err)
		}
		if r.Rows != 10 || r.Cols != 10 {
			t.Errorf("level %s: %dx%d", l.ID, r.Rows, r.Cols)
		}
	}
}

func TestParseLevelsErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"empty", "", "no levels"},
		{"row before header", "####\n", "line 1: row outside a level"},
		{"ragged", "; 0\n#####\n#@$.#\n####\n", "line 1: level 0: sokoban: row 2 has 4 cells"},
		{"bad cell", "; 7\n#####\n#@$x#\n#####\n", `unknown cell 'x'`},
		{"two players", "; 0\n#####\n#@@$.#\n", "row 1 has 6 cells"},
		{"no player", "; 0\n####\n#$.#\n####\n", "0 players"},
		{"box count", "; 0\n#####\n#@$$.#\n", "row 1 has 6 cells"},
		{"unbalanced", "; 0\n######\n#@$$.#\n######\n", "2 boxes and 1 targets"},
		{"header only", "; 3\n", `level "3" has no rows`},
	}
	for _, tc := range tests {
		_, err := ParseLevels(strings.NewReader(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	ls, err := ParseLevels(strings.NewReader("; a\r\n#####\r\n#@$.#\r\n#####\r\n\r\n; b\n#####\n#+$*#\n#####\n"))
	if err != nil || len(ls) != 2 || ls[1].ID != "b" || ls[0].Rows[1] != "#@$.#" {
		t.Errorf("CRLF / two levels: %v %v", ls, err)
	}
}

func FuzzParseLevels(f *testing.F) {
	f.Add("; 0\n#####\n#@$.#\n#####\n")
	f.Add("; 1\n#####\n#+*$.#\n")
	f.Add("; x\n##\n\n; y\n")
	f.Fuzz(func(t *testing.T, text string) {
		levels, err := ParseLevels(strings.NewReader(text))
		if err != nil {
			return
		}
		for _, l := range levels {
			r, err := l.Room()
			if err != nil {
				t.Fatalf("accepted level %q fails Room: %v", l.ID, err)
			}
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
			// Round trip through the Boxoban notation.
			back, err := ParseRoom(strings.Split(r.String(), "\n"))
			if err != nil || back.String() != r.String() {
				t.Fatalf("round trip of %q: %v", r.String(), err)
			}
			// The env accepts every parsed room and steps without panicking.
			e, err := NewFromRoom(DefaultConfig(), r)
			if err != nil {
				t.Fatal(err)
			}
			for id := range 9 {
				_, _ = e.Step(ctx, env.Action{ID: id})
			}
		}
	})
}

func FuzzParseRoom(f *testing.F) {
	f.Add("#####\n#@$.#\n#####")
	f.Add("@$.")
	f.Add("+*\n$.")
	f.Fuzz(func(t *testing.T, text string) {
		r, err := ParseRoom(strings.Split(text, "\n"))
		if err != nil {
			return
		}
		e, err := NewFromRoom(DefaultConfig(), r)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []int{1, 2, 3, 4, 1, 1, 3, 3, 2, 2, 4, 4} {
			if _, err := e.Step(ctx, env.Action{ID: id}); err != nil {
				t.Fatal(err)
			}
			if err := e.Room().Validate(); err != nil {
				t.Fatalf("step %d broke the room: %v", id, err)
			}
		}
		_, _, _ = Solve(r, 12, 5000)
	})
}

// Solve on Boxoban levels: every solution found replays to a win.
func TestSolveBoxobanLevels(t *testing.T) {
	levels, err := LoadLevels(vendored)
	if err != nil {
		t.Fatal(err)
	}
	n := 10
	if testing.Short() {
		n = 3
	}
	solved := 0
	for _, l := range levels[:n] {
		r, _ := l.Room()
		plan, ok, err := Solve(r, 200, 300000)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		solved++
		e, _ := NewFromRoom(DefaultConfig(), r)
		var last env.StepResult
		for _, id := range plan {
			last, _ = e.Step(ctx, env.Action{ID: id})
		}
		if !last.Done || last.Info["success"] != true {
			t.Errorf("level %s: plan %v does not win", l.ID, plan)
		}
	}
	if solved == 0 {
		t.Error("no Boxoban level solved within the budget")
	}
}

func TestLevelFileOption(t *testing.T) {
	e, err := FromEnvConfig(map[string]any{"level_file": vendored})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.Reset(ctx, 101, env.ModeTrain) // 101 mod 100 = level 1
	if err != nil {
		t.Fatal(err)
	}
	want := "##########\n###O#___O#\n#_X_OO_X_#\n#PX____X##\n######__##\n##########\n##########\n##########\n##########\n##########"
	if obs != want {
		t.Errorf("level 1:\n%s\nwant\n%s", obs, want)
	}
	if _, err := FromEnvConfig(map[string]any{"level_file": "testdata/missing.txt"}); err == nil {
		t.Error("missing level file: want error")
	}
}

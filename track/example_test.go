package track_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"ragen/track"
)

func ExampleFormatStep() {
	fmt.Println(track.FormatStep(3, map[string]float64{
		"critic/score/mean": 0.5,
		"actor/entropy":     1,
		"actor/ppo_kl":      1.5e-5,
	}))
	// Output: step:3 - actor/entropy:1.0 - actor/ppo_kl:1.5e-05 - critic/score/mean:0.5
}

func ExampleNew() {
	dir, _ := os.MkdirTemp("", "track")
	defer os.RemoveAll(dir)
	l, err := track.New([]string{"console", "file"}, track.Options{
		Project: "ragen", Experiment: "demo", Dir: dir,
		Out: os.Stdout, NoBar: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	l.Log(1, map[string]float64{"critic/score/mean": 0.25, "actor/entropy": math.NaN()})
	l.Close()
	recs, _ := track.ReadJSONL(filepath.Join(dir, "ragen", "demo.jsonl"))
	fmt.Println(len(recs), recs[0].Step, recs[0].Data["critic/score/mean"])

	_, err = track.New([]string{"wandb"}, track.Options{})
	fmt.Println(err)
	// Output:
	// step:1 - actor/entropy:nan - critic/score/mean:0.25
	// 1 1 0.25
	// track: logger backend "wandb" is not available offline (it needs an account and network access); valid backends: console, file, jsonl, tensorboard
}

func ExampleProgress() {
	// A fixed clock that advances 1.5 s per reading keeps the output stable;
	// real loops leave Now nil.
	t := time.Unix(0, 0)
	clock := func() time.Time { t = t.Add(1500 * time.Millisecond); return t }
	p := track.NewProgress(os.Stdout, "eval", track.ProgressOptions{Total: 4, Mode: track.ModePlain, Width: 8, Now: clock})
	p.Set(2, track.Field{Name: "acc", Value: 0.5})
	p.Set(4, track.Field{Name: "acc", Value: 0.75})
	p.Finish()
	// Output:
	// eval:  50%|####    | 2/4 [00:03<00:03,  1.50s/it, acc=0.5]
	// eval: 100%|########| 4/4 [00:06<00:00,  1.50s/it, acc=0.75]
}

func ExampleAppendRecord() {
	fmt.Println(string(track.AppendRecord(nil, 2, map[string]float64{"r": 1, "kl": math.Inf(1)})))
	// Output: {"step":2,"data":{"kl":null,"r":1.0}}
}

func ExamplePlot() {
	dir, _ := os.MkdirTemp("", "plots")
	defer os.RemoveAll(dir)
	var recs []track.Record
	for s := 1; s <= 20; s++ {
		recs = append(recs, track.Record{Step: s, Data: map[string]float64{
			"critic/score/mean":     float64(s) / 20,
			"train/Sokoban/success": float64(s) / 40,
		}})
	}
	files, err := track.Plot(recs, nil, dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range files {
		fmt.Println(filepath.Base(f))
	}
	// Output:
	// success.png
	// reward.png
	// summary.png
}

package frozenlake

// Outcome is one entry of gymnasium's transition table P[s][a]: with
// probability Prob the player moves to cell Next (row*cols+col), receiving
// Reward; Done when Next is a hole or the goal.
type Outcome struct {
	Prob   float64
	Next   int
	Reward float64
	Done   bool
}

// Transitions returns gymnasium's P for the current map: P[s][a] for cell s
// and gymnasium action a (0 Left, 1 Down, 2 Right, 3 Up; see ActionMap for
// the env's own ids). Holes and the goal are absorbing: one outcome, prob 1,
// back to themselves, reward 0, done. Slippery cells list the three
// outcomes in gymnasium's order [(a−1)%4, a, (a+1)%4], merged neither by
// target nor by reward, as gymnasium keeps them. Nil before the first reset.
func (e *Env) Transitions() [][][]Outcome {
	if !e.ready {
		return nil
	}
	n := e.rows * e.cols
	P := make([][][]Outcome, n)
	for s := 0; s < n; s++ {
		P[s] = make([][]Outcome, 4)
		for a := 0; a < 4; a++ {
			if t := e.tile(s); t == 'G' || t == 'H' {
				P[s][a] = []Outcome{{Prob: 1, Next: s, Done: true}}
				continue
			}
			cands, probs := []int{a}, []float64{1}
			if e.cfg.IsSlippery {
				fail := (1 - e.cfg.SuccessRate) / 2
				cands, probs = []int{(a + 3) % 4, a, (a + 1) % 4}, []float64{fail, e.cfg.SuccessRate, fail}
			}
			for i, c := range cands {
				next := e.move(s, c)
				t := e.tile(next)
				o := Outcome{Prob: probs[i], Next: next, Done: t == 'G' || t == 'H'}
				if t == 'G' {
					o.Reward = 1
				}
				P[s][a] = append(P[s][a], o)
			}
		}
	}
	return P
}

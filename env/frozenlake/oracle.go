package frozenlake

import "sort"

// OracleActions returns up to max moves of a shortest hole-free path from
// the player to the goal (env.Oracle). It plans as if the lake were not
// slippery; on a slippery lake the plan is the intended direction.
func (e *Env) OracleActions(max int) ([]string, bool, error) {
	if !e.ready {
		return nil, false, nil
	}
	n := e.rows * e.cols
	prev := make([]int, n)
	how := make([]int, n)
	for i := range prev {
		prev[i] = -1
	}
	// our action ids in ascending order, so ties resolve the same way each time
	ids := make([]int, 0, len(e.cfg.ActionMap))
	for id := range e.cfg.ActionMap {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	start := e.pos
	prev[start] = start
	queue := []int{start}
	goal := -1
	for len(queue) > 0 && goal < 0 {
		p := queue[0]
		queue = queue[1:]
		if e.tile(p) == 'G' {
			goal = p
			break
		}
		if e.tile(p) == 'H' {
			continue
		}
		for _, id := range ids {
			q := e.move(p, e.cfg.ActionMap[id])
			if prev[q] >= 0 || e.tile(q) == 'H' {
				continue
			}
			prev[q], how[q] = p, id
			queue = append(queue, q)
		}
	}
	if goal < 0 {
		return nil, false, nil
	}
	var path []int
	for p := goal; p != start; p = prev[p] {
		path = append(path, how[p])
	}
	out := make([]string, 0, min(max, len(path)))
	for i := len(path) - 1; i >= 0 && len(out) < max; i-- {
		out = append(out, e.cfg.ActionLookupMap[path[i]])
	}
	return out, true, nil
}

package sokoban

// OracleActions returns up to max moves of a shortest solution from the
// current state (env.Oracle), found by Solve.
func (e *Env) OracleActions(max int) ([]string, bool, error) {
	if !e.ready {
		return nil, false, nil
	}
	ids, ok, err := Solve(e.room, 100, 200000)
	if err != nil || !ok {
		return nil, ok, err
	}
	if len(ids) > max {
		ids = ids[:max]
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = e.cfg.ActionLookupMap[id]
	}
	return out, true, nil
}

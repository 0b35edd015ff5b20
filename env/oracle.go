package env

// Oracle is implemented by envs that can name the next actions of an optimal
// plan from their current state (a solver). Demonstrations for supervised
// warm-up (ragen sft) are made from it.
type Oracle interface {
	// OracleActions returns up to max action names (as ActionLookup spells
	// them) of a shortest plan from the current state. ok is false when the
	// env knows no plan (unsolvable, or the search limit was hit).
	OracleActions(max int) (actions []string, ok bool, err error)
}

package bandit

// Arms returns the current episode's arm names: the low-paying and the
// high-paying arm, and the action id of each (valid after Reset).
func (e *Env) Arms() (lo, hi string, loID, hiID int) {
	for id, name := range e.lookup {
		if id == e.hiID {
			hi, hiID = name, id
		} else {
			lo, loID = name, id
		}
	}
	return lo, hi, loID, hiID
}

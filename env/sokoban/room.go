package sokoban

import (
	"fmt"
	"strings"
)

// Cell codes of room_fixed and room_state.
const (
	Wall        = 0
	Floor       = 1
	Target      = 2
	BoxOnTarget = 3
	Box         = 4
	Player      = 5
	// PlayerOnTarget appears only in renders (room_state holds Player).
	PlayerOnTarget = 6
)

// Room is a Sokoban position: Fixed holds walls, floor and targets (0/1/2);
// State is the live grid (0..5). Both are row-major, Rows*Cols long.
type Room struct {
	Rows, Cols int
	Fixed      []int8
	State      []int8
}

// Clone returns a deep copy.
func (r Room) Clone() Room {
	return Room{Rows: r.Rows, Cols: r.Cols, Fixed: append([]int8(nil), r.Fixed...), State: append([]int8(nil), r.State...)}
}

// At returns State at (row, col).
func (r Room) At(row, col int) int { return int(r.State[row*r.Cols+col]) }

// PlayerPos returns the player's (row, col), or (-1, -1) if there is none.
func (r Room) PlayerPos() (int, int) {
	for i, v := range r.State {
		if v == Player {
			return i / r.Cols, i % r.Cols
		}
	}
	return -1, -1
}

// Validate checks that the room is a usable position: matching sizes,
// Fixed codes in 0..2, State codes in 0..5 consistent with Fixed (walls
// stay walls, code 3 only on targets), exactly one player, and as many
// boxes as targets.
func (r Room) Validate() error {
	n := r.Rows * r.Cols
	if r.Rows <= 0 || r.Cols <= 0 || len(r.Fixed) != n || len(r.State) != n {
		return fmt.Errorf("sokoban: room %dx%d with %d fixed and %d state cells", r.Rows, r.Cols, len(r.Fixed), len(r.State))
	}
	players, boxes, targets := 0, 0, 0
	for i := range n {
		f, s := r.Fixed[i], r.State[i]
		if f < Wall || f > Target {
			return fmt.Errorf("sokoban: room_fixed cell (%d, %d) = %d, want 0..2", i/r.Cols, i%r.Cols, f)
		}
		if f == Target {
			targets++
		}
		switch {
		case s < Wall || s > Player:
			return fmt.Errorf("sokoban: room_state cell (%d, %d) = %d, want 0..5", i/r.Cols, i%r.Cols, s)
		case (s == Wall) != (f == Wall):
			return fmt.Errorf("sokoban: cell (%d, %d): state %d does not match fixed %d", i/r.Cols, i%r.Cols, s, f)
		case s == Player:
			players++
		case s == Box || s == BoxOnTarget:
			boxes++
		case (s == Floor || s == Target) && s != f:
			return fmt.Errorf("sokoban: cell (%d, %d): state %d does not match fixed %d", i/r.Cols, i%r.Cols, s, f)
		}
	}
	if players != 1 {
		return fmt.Errorf("sokoban: room has %d players, want 1", players)
	}
	if boxes == 0 || boxes != targets {
		return fmt.Errorf("sokoban: room has %d boxes and %d targets, want the same positive number", boxes, targets)
	}
	return nil
}

// String renders the room in Boxoban notation ('#', ' ', '.', '$', '*',
// '@', '+'), rows joined by newlines.
func (r Room) String() string {
	var b strings.Builder
	for i, s := range r.State {
		if i > 0 && i%r.Cols == 0 {
			b.WriteByte('\n')
		}
		onTarget := r.Fixed[i] == Target
		switch {
		case s == Wall:
			b.WriteByte('#')
		case s == Player && onTarget:
			b.WriteByte('+')
		case s == Player:
			b.WriteByte('@')
		case s == BoxOnTarget || (s == Box && onTarget):
			b.WriteByte('*')
		case s == Box:
			b.WriteByte('$')
		case s == Target:
			b.WriteByte('.')
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// ParseRoom reads a room in Boxoban notation: '#' wall, ' ' (or '-', '_')
// floor, '.' target, '$' box, '*' box on target, '@' player, '+' player on
// target. Rows must have equal length. Boxes on targets get code 3 (as
// gym-sokoban's push does).
func ParseRoom(rows []string) (Room, error) {
	if len(rows) == 0 {
		return Room{}, fmt.Errorf("sokoban: empty room")
	}
	cols := len(rows[0])
	r := Room{Rows: len(rows), Cols: cols, Fixed: make([]int8, len(rows)*cols), State: make([]int8, len(rows)*cols)}
	for i, line := range rows {
		if len(line) != cols {
			return Room{}, fmt.Errorf("sokoban: row %d has %d cells, want %d", i, len(line), cols)
		}
		for j := range cols {
			k := i*cols + j
			var f, s int8
			switch line[j] {
			case '#':
				f, s = Wall, Wall
			case ' ', '-', '_':
				f, s = Floor, Floor
			case '.':
				f, s = Target, Target
			case '$':
				f, s = Floor, Box
			case '*':
				f, s = Target, BoxOnTarget
			case '@':
				f, s = Floor, Player
			case '+':
				f, s = Target, Player
			default:
				return Room{}, fmt.Errorf("sokoban: row %d col %d: unknown cell %q", i, j, line[j])
			}
			r.Fixed[k], r.State[k] = f, s
		}
	}
	if err := r.Validate(); err != nil {
		return Room{}, err
	}
	return r, nil
}

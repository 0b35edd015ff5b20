package rubikscube

import (
	"fmt"
	"strings"
)

// Face indices. Sticker s belongs to face s/4; within a face the stickers
// are laid out [0 1; 2 3] as seen from outside the cube.
const (
	FaceU = iota // up, stickers 0–3
	FaceL        // left, 4–7
	FaceF        // front, 8–11
	FaceR        // right, 12–15
	FaceB        // back, 16–19
	FaceD        // down, 20–23
)

// Colours: the solved cube has face i all colour i.
const colourLetters = "WOGRBY"

// Cube is a 2×2 cube as 24 sticker colours (0..5).
type Cube [24]uint8

// SolvedCube returns the cube with face i all colour i.
func SolvedCube() Cube {
	var c Cube
	for i := range c {
		c[i] = uint8(i / 4)
	}
	return c
}

// IsSolved reports whether every face is one colour (any colour, as
// upstream checks it).
func (c *Cube) IsSolved() bool {
	for f := 0; f < 6; f++ {
		x := c[4*f]
		if c[4*f+1] != x || c[4*f+2] != x || c[4*f+3] != x {
			return false
		}
	}
	return true
}

// String writes the stickers as colour letters, faces separated by spaces
// in the order U L F R B D ("WWWW OOOO GGGG RRRR BBBB YYYY" when solved).
func (c Cube) String() string {
	var b strings.Builder
	for i, s := range c {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		if int(s) < len(colourLetters) {
			b.WriteByte(colourLetters[s])
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

// ParseCube reads the format String writes: 24 colour letters (W O G R B Y,
// case-insensitive), whitespace ignored. Each colour must appear exactly
// four times.
func ParseCube(s string) (Cube, error) {
	var c Cube
	var counts [6]int
	n := 0
	for _, r := range s {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			continue
		}
		k := strings.IndexRune(colourLetters, toUpperASCII(r))
		if k < 0 {
			return Cube{}, fmt.Errorf("rubikscube: parse cube: unknown colour %q at sticker %d (want one of %s)", r, n, colourLetters)
		}
		if n >= 24 {
			return Cube{}, fmt.Errorf("rubikscube: parse cube: more than 24 stickers")
		}
		c[n] = uint8(k)
		counts[k]++
		n++
	}
	if n != 24 {
		return Cube{}, fmt.Errorf("rubikscube: parse cube: got %d stickers, want 24", n)
	}
	for k, m := range counts {
		if m != 4 {
			return Cube{}, fmt.Errorf("rubikscube: parse cube: colour %c appears %d times, want 4", colourLetters[k], m)
		}
	}
	return c, nil
}

func toUpperASCII(r rune) rune {
	if r >= 'a' && r <= 'z' {
		return r - 'a' + 'A'
	}
	return r
}

// A cycle moves pairs of stickers: for a cycle {p0, p1, p2, p3} the new
// stickers at p0 are the old ones at p1, p1 gets p2, p2 gets p3 and p3
// gets p0 (element-wise over each pair), exactly as upstream writes
// "(8,9)←(12,13)←(16,17)←(4,5)←(8,9)".
type cycle [4][2]int

type faceTurn struct {
	face  int
	sides cycle
}

// Quarter turns (clockwise seen from outside the face), upstream's
// tables. Sticker positions, derived from the U/L/F/R/D tables: U0=UBL
// U1=UBR U2=UFL U3=UFR; L4=UBL L5=UFL L6=DBL L7=DFL; F8=UFL F9=UFR F10=DFL
// F11=DFR; R12=UFR R13=UBR R14=DFR R15=DBR; B16=UBR B17=UBL B18=DBR B19=DBL;
// D20=DFL D21=DFR D22=DBL D23=DBR.
var turns = [6]faceTurn{
	FaceU: {FaceU, cycle{{8, 9}, {12, 13}, {16, 17}, {4, 5}}},
	FaceD: {FaceD, cycle{{10, 11}, {6, 7}, {18, 19}, {14, 15}}},
	FaceL: {FaceL, cycle{{0, 2}, {19, 17}, {20, 22}, {8, 10}}},
	FaceR: {FaceR, cycle{{1, 3}, {9, 11}, {21, 23}, {18, 16}}},
	FaceF: {FaceF, cycle{{2, 3}, {7, 5}, {21, 20}, {12, 14}}},
	// B turned clockwise seen from the back carries the corners
	// UBR→UBL→DBL→DBR→UBR, so the D stickers at DBR (23) and DBL (22) go to
	// R at UBR (13) and DBR (15): R(13,15) ← D(23,22), D(23,22) ← L(6,4).
	FaceB: {FaceB, cycle{{0, 1}, {13, 15}, {23, 22}, {6, 4}}},
}

// legacyB is upstream's B move: (0,1)←(13,15)←(22,23)←(6,4). It reverses
// the D pair, so stickers of the DBL and DBR corners are exchanged and the
// cube reaches states no real cube can.
var legacyB = faceTurn{FaceB, cycle{{0, 1}, {13, 15}, {22, 23}, {6, 4}}}

func (c *Cube) turn(t faceTurn) {
	// Own face: new0=old2, new2=old3, new3=old1, new1=old0.
	o := 4 * t.face
	a0, a1, a2, a3 := c[o], c[o+1], c[o+2], c[o+3]
	c[o], c[o+1], c[o+2], c[o+3] = a2, a0, a3, a1
	s := t.sides
	t0, t1 := c[s[0][0]], c[s[0][1]]
	for k := 0; k < 3; k++ {
		c[s[k][0]], c[s[k][1]] = c[s[k+1][0]], c[s[k+1][1]]
	}
	c[s[3][0]], c[s[3][1]] = t0, t1
}

// Move is an action id: 1 U, 2 U', 3 D, 4 D', 5 L, 6 L', 7 R, 8 R', 9 F,
// 10 F', 11 B, 12 B'. Odd ids are clockwise quarter turns, even ids the
// preceding odd move applied three times.
type Move int

var moveFaces = [6]int{FaceU, FaceD, FaceL, FaceR, FaceF, FaceB}

var moveNames = [13]string{"", "U", "U'", "D", "D'", "L", "L'", "R", "R'", "F", "F'", "B", "B'"}

// Valid reports whether m is one of the twelve moves.
func (m Move) Valid() bool { return m >= 1 && m <= 12 }

// String is the move's name ("U", "U'", …) or "Move(n)" for an invalid id.
func (m Move) String() string {
	if !m.Valid() {
		return fmt.Sprintf("Move(%d)", int(m))
	}
	return moveNames[m]
}

// Inverse returns the move that undoes m.
func (m Move) Inverse() Move {
	if m%2 == 1 {
		return m + 1
	}
	return m - 1
}

// Apply turns the cube by move m with the correct permutations. It
// reports false (and leaves the cube unchanged) for an invalid id.
func (c *Cube) Apply(m Move) bool { return c.apply(m, false) }

// ApplyLegacy is Apply with upstream's faulty B permutation.
func (c *Cube) ApplyLegacy(m Move) bool { return c.apply(m, true) }

func (c *Cube) apply(m Move, legacy bool) bool {
	if !m.Valid() {
		return false
	}
	face := moveFaces[(m-1)/2]
	t := turns[face]
	if legacy && face == FaceB {
		t = legacyB
	}
	reps := 1
	if m%2 == 0 {
		reps = 3
	}
	for i := 0; i < reps; i++ {
		c.turn(t)
	}
	return true
}

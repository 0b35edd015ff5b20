package sokoban

import (
	"errors"
	"fmt"

	"ragen/internal/pyrand"
)

// Generation failures. Upstream raises RuntimeError and RuntimeWarning for
// these and retries the reset with another seed.
var (
	// ErrNotEnoughSpace: the topology has no more than num_boxes+1 floor
	// cells (upstream's RuntimeError).
	ErrNotEnoughSpace = errors.New("sokoban: not enough free spots to place player and boxes")
	// ErrZeroScore: four tries of reverse play found no room with a box
	// displaced (upstream's RuntimeWarning "Generated Model with score == 0").
	ErrZeroScore = errors.New("sokoban: generated room with score == 0")
)

// maxExplored is gym-sokoban's cap on the reverse-play search.
const maxExplored = 300000

// GenParams are the inputs of upstream's generate_room.
type GenParams struct {
	Rows, Cols  int
	NumBoxes    int
	SearchDepth int
	// NumSteps is the topology walk length; 0 means int(1.7*(rows+cols)).
	NumSteps int
}

func (p GenParams) numSteps() int {
	if p.NumSteps > 0 {
		return p.NumSteps
	}
	return int(1.7 * float64(p.Rows+p.Cols))
}

// Generated is a generated level: the room, upstream's box_mapping (target
// cell -> box cell, targets in row-major order) and its displacement score.
type Generated struct {
	Room Room
	// Mapping[i] = {target row, target col, box row, box col}.
	Mapping [][4]int
	Score   int // box displacement score of Mapping
}

// Generate is upstream's reset-time generation for a seed: it seeds a
// CPython random.Random and a NumPy legacy RandomState with seed (the
// all_seed context) and runs generateWith.
func Generate(p GenParams, seed int64) (Generated, error) {
	np, err := pyrand.NewLegacy(seed)
	if err != nil {
		return Generated{}, fmt.Errorf("sokoban: %w", err)
	}
	return generateWith(p, pyrand.NewRandom(seed), np, &Scratch{})
}

// Scratch holds reusable buffers for generation; one per goroutine.
type Scratch struct {
	rp     reversePlay
	level  []int8
	cells  []int
	walked []int
}

var (
	genDirs  = [4][2]int{{1, 0}, {0, 1}, {-1, 0}, {0, -1}}
	genMasks = [5][3][3]int8{
		{{0, 0, 0}, {1, 1, 1}, {0, 0, 0}},
		{{0, 1, 0}, {0, 1, 0}, {0, 1, 0}},
		{{0, 0, 0}, {1, 1, 0}, {0, 1, 0}},
		{{0, 0, 0}, {1, 1, 0}, {1, 1, 0}},
		{{0, 0, 0}, {0, 1, 1}, {0, 1, 0}},
	}
	// CHANGE_COORDINATES: 0 up, 1 down, 2 left, 3 right.
	changes = [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}}
)

// generateWith runs upstream's generate_room (tries=4,
// p_change_directions=0.35) followed by add_random_player_movement, drawing
// from py (Python random) and np (NumPy legacy) in upstream's order.
func generateWith(p GenParams, py *pyrand.Random, np *pyrand.Legacy, sc *Scratch) (Generated, error) {
	if p.Rows < 3 || p.Cols < 3 || p.NumBoxes < 1 || p.SearchDepth < 0 {
		return Generated{}, fmt.Errorf("sokoban: cannot generate a %dx%d room with %d boxes", p.Rows, p.Cols, p.NumBoxes)
	}
	rows, cols := p.Rows, p.Cols
	n := rows * cols
	var room Room
	score := 0
	for try := 0; try < 4; try++ {
		level := sc.topology(p, py)
		// place_boxes_and_player
		cells := sc.cells[:0]
		for i, v := range level {
			if v == 1 {
				cells = append(cells, i)
			}
		}
		if len(cells) <= p.NumBoxes+1 {
			sc.cells = cells
			return Generated{}, fmt.Errorf("%w (#%d for 1 player and %d boxes)", ErrNotEnoughSpace, len(cells), p.NumBoxes)
		}
		level[cells[np.RandIntN(len(cells))]] = Player
		for range p.NumBoxes {
			cells = cells[:0]
			for i, v := range level {
				if v == 1 {
					cells = append(cells, i)
				}
			}
			level[cells[np.RandIntN(len(cells))]] = Target
		}
		sc.cells = cells
		room = Room{Rows: rows, Cols: cols, Fixed: make([]int8, n), State: make([]int8, n)}
		for i, v := range level {
			f, s := v, v
			if v == Player {
				f = Floor
			}
			if v == Target {
				s = Box
			}
			room.Fixed[i], room.State[i] = f, s
		}
		sc.rp.run(room, p.SearchDepth)
		score = sc.rp.bestDisplacement()
		sc.rp.writeBest(room.State)
		if score > 0 {
			break
		}
	}
	if score == 0 {
		return Generated{}, ErrZeroScore
	}
	moveP := 0.5
	if score == 1 {
		moveP = 0.8
	}
	sc.randomWalk(room, py, moveP)
	g := Generated{Room: room, Score: score}
	for k, t := range sc.rp.targets {
		b := sc.rp.bestPos[k]
		g.Mapping = append(g.Mapping, [4]int{t / cols, t % cols, b / cols, b % cols})
	}
	return g, nil
}

// topology is room_topology_generation.
func (sc *Scratch) topology(p GenParams, py *pyrand.Random) []int8 {
	rows, cols := p.Rows, p.Cols
	if cap(sc.level) < rows*cols {
		sc.level = make([]int8, rows*cols)
	}
	level := sc.level[:rows*cols]
	clear(level)
	dir := genDirs[py.RandBelow(4)] // random.sample(directions, 1)[0]
	pr := py.RandInt(1, rows-1)
	pc := py.RandInt(1, cols-1)
	for range p.numSteps() {
		if py.Random() < 0.35 {
			dir = genDirs[py.RandBelow(4)]
		}
		pr = max(min(pr+dir[0], rows-2), 1)
		pc = max(min(pc+dir[1], cols-2), 1)
		m := &genMasks[py.RandBelow(5)]
		for i := range 3 {
			row := (pr - 1 + i) * cols
			for j := range 3 {
				level[row+pc-1+j] += m[i][j]
			}
		}
	}
	for i := range level {
		r, c := i/cols, i%cols
		if level[i] > 0 && r > 0 && r < rows-1 && c > 0 && c < cols-1 {
			level[i] = 1
		} else {
			level[i] = 0
		}
	}
	return level
}

// randomWalk is add_random_player_movement(move_probability=moveP,
// continue_probability=0.5, max_steps=3) on room.State.
func (sc *Scratch) randomWalk(room Room, py *pyrand.Random, moveP float64) {
	if py.Random() > moveP {
		return
	}
	cols := room.Cols
	player := 0
	for i, v := range room.State {
		if v == Player {
			player = i
			break
		}
	}
	visited := append(sc.walked[:0], player)
	var valid [4]int
	for steps := 0; steps < 3; {
		nv := 0
		for a := range 4 {
			next := player + changes[a][0]*cols + changes[a][1]
			if s := room.State[next]; s != Floor && s != Target {
				continue
			}
			seen := false
			for _, v := range visited {
				if v == next {
					seen = true
					break
				}
			}
			if !seen {
				valid[nv] = next
				nv++
			}
		}
		if nv == 0 {
			break
		}
		next := valid[py.RandBelow(nv)]
		room.State[player] = room.Fixed[player]
		room.State[next] = Player
		player = next
		visited = append(visited, player)
		steps++
		if steps >= 3 || py.Random() > 0.5 {
			break
		}
	}
	sc.walked = visited
}

// reversePlay is gym-sokoban's reverse_playing / depth_first_search with
// make/unmake moves instead of copies. Explored states are keyed by the
// grid content (player cell, box cells and whether each box was pulled,
// i.e. shows code 3 rather than 4), exactly what marshal.dumps(room_state)
// distinguishes.
type reversePlay struct {
	rows, cols int
	fixed      []int8
	targets    []int  // mapping keys: target cells, row-major
	pos        []int  // mapping values: current box cell per key
	pulled     []bool // box shows code 3
	boxAt      []int  // cell -> key index, or -1
	isTarget   []bool
	player     int

	small    bool // rows*cols <= 64: compact keys
	boxMask  uint64
	pullMask uint64
	exSmall  smallSet
	exBig    map[string]struct{}
	keyBuf   []byte

	bestScore  int
	bestPlayer int
	bestPos    []int
	bestPulled []bool
}

type smallKey struct {
	boxes, pulled uint64
	player        int
}

func (rp *reversePlay) run(room Room, searchDepth int) {
	rp.rows, rp.cols = room.Rows, room.Cols
	n := room.Rows * room.Cols
	rp.fixed = room.Fixed
	rp.targets = rp.targets[:0]
	rp.isTarget = resize(rp.isTarget, n)
	rp.boxAt = resizeInt(rp.boxAt, n)
	for i := range n {
		rp.boxAt[i] = -1
		rp.isTarget[i] = room.Fixed[i] == Target
		if room.Fixed[i] == Target {
			rp.targets = append(rp.targets, i)
		}
	}
	k := len(rp.targets)
	rp.pos = resizeInt(rp.pos, k)
	rp.pulled = resize(rp.pulled, k)
	rp.bestPos = resizeInt(rp.bestPos, k)
	rp.bestPulled = resize(rp.bestPulled, k)
	rp.boxMask, rp.pullMask = 0, 0
	rp.small = n <= 64
	// Initial state: boxes (code 4) on their targets, the player.
	for key, t := range rp.targets {
		rp.pos[key] = t
		rp.pulled[key] = false
		rp.boxAt[t] = key
		if rp.small {
			rp.boxMask |= 1 << uint(t)
		}
	}
	for i, v := range room.State {
		if v == Player {
			rp.player = i
		}
	}
	if rp.small {
		rp.exSmall.reset()
	} else {
		if rp.exBig == nil {
			rp.exBig = make(map[string]struct{}, 1024)
		} else {
			clear(rp.exBig)
		}
	}
	// best_room_score = -1; best mapping = identity; best room = None.
	rp.bestScore = -1
	rp.bestPlayer = rp.player
	copy(rp.bestPos, rp.pos)
	copy(rp.bestPulled, rp.pulled)
	rp.dfs(0, -1, searchDepth)
}

func (rp *reversePlay) numExplored() int {
	if rp.small {
		return rp.exSmall.n
	}
	return len(rp.exBig)
}

// markExplored adds the current state; it reports false if it was there.
func (rp *reversePlay) markExplored() bool {
	if rp.small {
		return rp.exSmall.add(smallKey{rp.boxMask, rp.pullMask, rp.player})
	}
	n := rp.rows * rp.cols
	b := rp.keyBuf[:0]
	for i := range n {
		c := byte(rp.fixed[i])
		if key := rp.boxAt[i]; key >= 0 {
			c = Box
			if rp.pulled[key] {
				c = BoxOnTarget
			}
		} else if i == rp.player {
			c = Player
		}
		b = append(b, c)
	}
	rp.keyBuf = b
	if _, ok := rp.exBig[string(b)]; ok {
		return false
	}
	rp.exBig[string(b)] = struct{}{}
	return true
}

func (rp *reversePlay) displacement(pos []int) int {
	s := 0
	for k, t := range rp.targets {
		dr := pos[k]/rp.cols - t/rp.cols
		dc := pos[k]%rp.cols - t%rp.cols
		s += abs(dr) + abs(dc)
	}
	return s
}

func (rp *reversePlay) bestDisplacement() int { return rp.displacement(rp.bestPos) }

// emptyTargets counts cells showing code 2: targets under neither a box
// nor the player.
func (rp *reversePlay) emptyTargets() int {
	n := 0
	for _, t := range rp.targets {
		if rp.boxAt[t] < 0 && t != rp.player {
			n++
		}
	}
	return n
}

func (rp *reversePlay) dfs(swaps, lastPull, ttl int) {
	ttl--
	if ttl <= 0 || rp.numExplored() >= maxExplored {
		return
	}
	if !rp.markExplored() {
		return
	}
	score := swaps * rp.displacement(rp.pos)
	if rp.emptyTargets() != len(rp.targets) {
		score = 0
	}
	if score > rp.bestScore {
		rp.bestScore = score
		rp.bestPlayer = rp.player
		copy(rp.bestPos, rp.pos)
		copy(rp.bestPulled, rp.pulled)
	}
	cols := rp.cols
	for a := range 4 {
		d := changes[a][0]*cols + changes[a][1]
		old := rp.player
		next := old + d
		if rp.fixed[next] == Wall || rp.boxAt[next] >= 0 {
			// No move: the child is this (explored) state and returns at once.
			continue
		}
		rp.player = next
		lastPullNext := lastPull
		loc := old - d
		key := -1
		var wasPulled bool
		if loc >= 0 && loc < len(rp.boxAt) {
			key = rp.boxAt[loc]
		}
		if key >= 0 {
			wasPulled = rp.pulled[key]
			rp.boxAt[loc] = -1
			rp.boxAt[old] = key
			rp.pos[key] = old
			rp.pulled[key] = true
			if rp.small {
				rp.boxMask = rp.boxMask&^(1<<uint(loc)) | 1<<uint(old)
				rp.pullMask = rp.pullMask&^(1<<uint(loc)) | 1<<uint(old)
			}
			lastPullNext = key
		}
		swapsNext := swaps
		if lastPullNext != lastPull {
			swapsNext++
		}
		rp.dfs(swapsNext, lastPullNext, ttl)
		// Unmake.
		if key >= 0 {
			rp.boxAt[old] = -1
			rp.boxAt[loc] = key
			rp.pos[key] = loc
			rp.pulled[key] = wasPulled
			if rp.small {
				rp.boxMask = rp.boxMask&^(1<<uint(old)) | 1<<uint(loc)
				rp.pullMask &^= 1 << uint(old)
				if wasPulled {
					rp.pullMask |= 1 << uint(loc)
				}
			}
		}
		rp.player = old
	}
}

// writeBest writes best_room with every box as code 4 into state (which
// must hold the room's fixed layout plus anything; it is overwritten).
func (rp *reversePlay) writeBest(state []int8) {
	copy(state, rp.fixed)
	for _, p := range rp.bestPos {
		state[p] = Box
	}
	state[rp.bestPlayer] = Player
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func resize(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	return s[:n]
}

func resizeInt(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

// smallSet is an open-addressing hash set of smallKey whose reset is O(1):
// a slot is occupied only if its stamp equals the current epoch.
type smallSet struct {
	keys   []smallKey
	stamps []uint32
	epoch  uint32
	n      int
	shift  uint
}

func (s *smallSet) reset() {
	s.n = 0
	s.epoch++
	if s.keys == nil || s.epoch == 0 {
		s.init(1 << 10)
	}
}

func (s *smallSet) init(size int) {
	s.keys = make([]smallKey, size)
	s.stamps = make([]uint32, size)
	s.epoch = 1
	s.n = 0
	s.shift = uint(64 - bitsLen(size-1))
}

func bitsLen(x int) int {
	n := 0
	for x > 0 {
		n++
		x >>= 1
	}
	return n
}

func (s *smallSet) slot(k smallKey) uint64 {
	h := k.boxes*0x9E3779B97F4A7C15 ^ k.pulled*0xC2B2AE3D27D4EB4F ^ uint64(k.player)*0x165667B19E3779F9
	h ^= h >> 29
	return (h * 0xBF58476D1CE4E5B9) >> s.shift
}

// add inserts k and reports whether it was new.
func (s *smallSet) add(k smallKey) bool {
	mask := uint64(len(s.keys) - 1)
	for i := s.slot(k); ; i = (i + 1) & mask {
		if s.stamps[i] != s.epoch {
			s.keys[i] = k
			s.stamps[i] = s.epoch
			s.n++
			if 2*s.n > len(s.keys) {
				s.grow()
			}
			return true
		}
		if s.keys[i] == k {
			return false
		}
	}
}

func (s *smallSet) grow() {
	oldKeys, oldStamps, epoch, n := s.keys, s.stamps, s.epoch, s.n
	s.init(2 * len(oldKeys))
	for i, st := range oldStamps {
		if st == epoch {
			s.add(oldKeys[i])
		}
	}
	s.n = n
}

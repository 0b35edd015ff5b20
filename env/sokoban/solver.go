package sokoban

import (
	"fmt"
	"slices"
)

// DefaultMaxStates bounds Solve's search when maxStates is 0.
const DefaultMaxStates = 2_000_000

type solveKey struct {
	boxes  [4]uint64 // box cells as a bitset (rooms up to 256 cells)
	player uint16
}

type solveNode struct {
	key    solveKey
	parent int32
	action int8
}

// Solve finds a shortest action list (ids 1 Up, 2 Down, 3 Left, 4 Right;
// every step counts, pushes and plain moves alike) that puts every box on a
// target, by breadth-first search over (player, boxes) positions. Moves are
// tried in the order up, down, left, right, so among shortest solutions it
// returns the one upstream's get_shortest_action_path returns. It reports
// ok=false when no solution of at most maxDepth steps exists or the search
// visits maxStates positions (0 means DefaultMaxStates). An already solved
// room gives an empty list and ok=true.
func Solve(room Room, maxDepth, maxStates int) (actions []int, ok bool, err error) {
	if err := room.Validate(); err != nil {
		return nil, false, err
	}
	if room.Rows*room.Cols > 256 {
		return nil, false, fmt.Errorf("sokoban: Solve supports rooms up to 256 cells, got %dx%d", room.Rows, room.Cols)
	}
	if maxStates <= 0 {
		maxStates = DefaultMaxStates
	}
	rows, cols := room.Rows, room.Cols
	var start solveKey
	isTarget := make([]bool, len(room.Fixed))
	var targetMask [4]uint64
	for i, s := range room.State {
		if s == Box || s == BoxOnTarget {
			start.boxes[i>>6] |= 1 << uint(i&63)
		}
		if s == Player {
			start.player = uint16(i)
		}
		if room.Fixed[i] == Target {
			isTarget[i] = true
			targetMask[i>>6] |= 1 << uint(i&63)
		}
	}
	solved := func(k *solveKey) bool {
		for w := range k.boxes {
			if k.boxes[w]&^targetMask[w] != 0 {
				return false
			}
		}
		return true
	}
	if solved(&start) {
		return []int{}, true, nil
	}
	hasBox := func(k *solveKey, i int) bool { return k.boxes[i>>6]&(1<<uint(i&63)) != 0 }
	nodes := []solveNode{{key: start, parent: -1}}
	depth := []int32{0}
	seen := map[solveKey]struct{}{start: {}}
	for head := 0; head < len(nodes); head++ {
		cur := nodes[head].key
		if int(depth[head]) >= maxDepth {
			// BFS order: every later node is at least this deep.
			return nil, false, nil
		}
		pr, pc := int(cur.player)/cols, int(cur.player)%cols
		for a := range 4 {
			ch := changes[a]
			nr, nc := pr+ch[0], pc+ch[1]
			if nr < 0 || nc < 0 || nr >= rows || nc >= cols {
				continue
			}
			np := nr*cols + nc
			if room.Fixed[np] == Wall {
				continue
			}
			next := cur
			if hasBox(&cur, np) {
				br, bc := nr+ch[0], nc+ch[1]
				if br < 0 || bc < 0 || br >= rows || bc >= cols {
					continue
				}
				bp := br*cols + bc
				if room.Fixed[bp] == Wall || hasBox(&cur, bp) {
					continue
				}
				next.boxes[np>>6] &^= 1 << uint(np&63)
				next.boxes[bp>>6] |= 1 << uint(bp&63)
			}
			next.player = uint16(np)
			if _, dup := seen[next]; dup {
				continue
			}
			seen[next] = struct{}{}
			nodes = append(nodes, solveNode{key: next, parent: int32(head), action: int8(a + 1)})
			depth = append(depth, depth[head]+1)
			if solved(&next) {
				var path []int
				for i := len(nodes) - 1; i > 0; i = int(nodes[i].parent) {
					path = append(path, int(nodes[i].action))
				}
				slices.Reverse(path)
				return path, true, nil
			}
			if len(nodes) >= maxStates {
				return nil, false, nil
			}
		}
	}
	return nil, false, nil
}

package parquet

import (
	"errors"
	"fmt"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// ErrUnsupported marks a column ReadValues cannot read because of its
// schema (a physical type it does not decode), as opposed to corrupt data.
var ErrUnsupported = errors.New("unsupported")

// Group is a struct (group) value: its fields in schema order, as pyarrow's
// to_pylist and Hugging Face datasets give a struct column's dict.
type Group struct {
	Names  []string
	Values []any
}

// Get returns the value of field name.
func (g *Group) Get(name string) (any, bool) {
	for i, n := range g.Names {
		if n == name {
			return g.Values[i], true
		}
	}
	return nil, false
}

// triple is one leaf value with its levels (val is set when def is the
// leaf's maximum definition level).
type triple struct {
	rep, def int
	val      any
}

// node is the schema below a top-level field, with the leaf columns each
// subtree spans.
type node struct {
	col          *pq.Column
	kids         []*node
	leaf         leaf // for a leaf
	lo, hi       int  // the leaves under this node: [lo, hi) in leaf order
	list, mapped bool // LIST or MAP annotated group
}

func buildNode(c *pq.Column, leaves *[]leaf) (*node, error) {
	n := &node{col: c, lo: len(*leaves)}
	if c.Leaf() {
		l, err := leafOf(c)
		if err != nil {
			return nil, fmt.Errorf("field %s %w", c.Name(), err)
		}
		n.leaf = l
		*leaves = append(*leaves, l)
	} else {
		if lt := c.Type().LogicalType(); lt != nil {
			switch lt.Value.(type) {
			case *format.ListType:
				n.list = true
			case *format.MapType:
				n.mapped = true
			}
		}
		for _, k := range c.Columns() {
			kn, err := buildNode(k, leaves)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, kn)
		}
		// A LIST or MAP annotation applies when its one child repeats.
		if (n.list || n.mapped) && (len(n.kids) != 1 || !n.kids[0].col.Repeated()) {
			n.list, n.mapped = false, false
		}
	}
	n.hi = len(*leaves)
	return n, nil
}

// ReadValues reads top-level field name, of any shape, as one Go value per
// row, stopping after the row group that reaches maxRows rows (≤ 0: all row
// groups; callers trim). A value is nil (null), bool, int64 (INT32, INT64),
// float64 (FLOAT, DOUBLE), string (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY), []any
// (a LIST, a MAP's key-value groups, or a repeated field) or *Group (a
// struct), nested as the schema nests them. Lists follow the Parquet
// format's rules for the 3-level form and the older 2-level forms.
func (f *File) ReadValues(name string, maxRows int) (vals []any, err error) {
	defer func() {
		if r := recover(); r != nil { // the library panics on some corrupt input
			vals, err = nil, fmt.Errorf("parquet: column %s: corrupt file: %v", name, r)
		}
	}()
	top, err := f.top(name)
	if err != nil {
		return nil, err
	}
	var leaves []leaf
	root, err := buildNode(top, &leaves)
	if err != nil {
		return nil, fmt.Errorf("parquet: column %s: %w", name, err)
	}
	for i, rg := range f.f.RowGroups() {
		if maxRows > 0 && len(vals) >= maxRows {
			break
		}
		rows := make([][][]triple, len(leaves)) // leaf -> row -> triples
		for j, l := range leaves {
			if err := f.checkPages(i, l); err != nil {
				return nil, fmt.Errorf("parquet: column %s: %w", name, err)
			}
			if rows[j], err = l.readTriples(rg.ColumnChunks()[l.col.Index()]); err != nil {
				return nil, fmt.Errorf("parquet: column %s: %w", name, err)
			}
			if want := rg.NumRows(); int64(len(rows[j])) != want {
				return nil, fmt.Errorf("parquet: row group declares %d rows, column %s holds %d", want, l.col.Name(), len(rows[j]))
			}
		}
		for r := 0; r < int(rg.NumRows()); r++ {
			cols := make([][]triple, len(leaves))
			for j := range leaves {
				cols[j] = rows[j][r]
			}
			v, err := field(root, cols, 0, 0)
			if err != nil {
				return nil, fmt.Errorf("parquet: column %s, row %d: %w", name, len(vals), err)
			}
			vals = append(vals, v)
		}
	}
	return vals, nil
}

// readTriples reads one column chunk of leaf l, split into rows.
func (l leaf) readTriples(chunk pq.ColumnChunk) ([][]triple, error) {
	var rows [][]triple
	err := eachValue(chunk, func(v pq.Value) error {
		t := triple{rep: v.RepetitionLevel(), def: v.DefinitionLevel()}
		if t.rep > l.maxRep || t.def > l.maxDef {
			return fmt.Errorf("levels %d/%d above the column's %d/%d", t.rep, t.def, l.maxRep, l.maxDef)
		}
		if t.def == l.maxDef {
			t.val = l.value(v)
		}
		if t.rep == 0 {
			rows = append(rows, nil)
		} else if len(rows) == 0 {
			return errors.New("continued list before the first row")
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], t)
		return nil
	})
	return rows, err
}

func (l leaf) value(v pq.Value) any {
	switch l.kind {
	case pq.Boolean:
		return v.Boolean()
	case pq.Int32:
		return int64(v.Int32())
	case pq.Int64:
		return v.Int64()
	case pq.Float:
		return float64(v.Float())
	case pq.Double:
		return v.Double()
	default:
		return string(v.ByteArray())
	}
}

// field assembles field n of one record (or one list element) from the
// triples of its leaves; def and rep are the levels of n's parent.
func field(n *node, cols [][]triple, def, rep int) (any, error) {
	if n.col.Repeated() { // a repeated field without a LIST annotation is a list of its values
		return elems(n, cols, def, rep, false)
	}
	if n.col.Optional() {
		if n.hi > n.lo && cols[n.lo][0].def <= def {
			return nil, nil
		}
		def++
	}
	return value(n, cols, def, rep)
}

// value assembles present node n (def counts n itself).
func value(n *node, cols [][]triple, def, rep int) (any, error) {
	switch {
	case n.col.Leaf():
		t := cols[n.lo][0]
		if t.def != n.leaf.maxDef {
			return nil, fmt.Errorf("field %s: definition level %d where %d was due", n.col.Name(), t.def, n.leaf.maxDef)
		}
		return t.val, nil
	case n.list || n.mapped:
		r := n.kids[0]
		// The 2-level forms: the repeated group is the element when it
		// has several fields or is named array or <list>_tuple (and
		// a MAP's key_value group always is).
		whole := n.mapped || r.col.Leaf() || len(r.kids) != 1 || r.col.Name() == "array" || r.col.Name() == n.col.Name()+"_tuple"
		return elems(r, cols, def, rep, !whole)
	default:
		g := &Group{Names: make([]string, len(n.kids)), Values: make([]any, len(n.kids))}
		for i, k := range n.kids {
			v, err := field(k, cols, def, rep)
			if err != nil {
				return nil, err
			}
			g.Names[i], g.Values[i] = k.col.Name(), v
		}
		return g, nil
	}
}

// elems assembles repeated node r as a list: each element is r's value, or
// with child its one field's. def and rep are the levels of r's parent.
func elems(r *node, cols [][]triple, def, rep int, child bool) (any, error) {
	out := []any{}
	if r.hi == r.lo || cols[r.lo][0].def <= def {
		return out, nil // empty
	}
	def, rep = def+1, rep+1
	// split each leaf's triples where an element starts (repetition level rep)
	starts := make([][]int, r.hi-r.lo)
	for j := r.lo; j < r.hi; j++ {
		for i, t := range cols[j] {
			if i == 0 || t.rep == rep {
				starts[j-r.lo] = append(starts[j-r.lo], i)
			} else if t.rep < rep {
				return nil, fmt.Errorf("field %s: repetition level %d inside a list at level %d", r.col.Name(), t.rep, rep)
			}
		}
		if len(starts[j-r.lo]) != len(starts[0]) {
			return nil, fmt.Errorf("field %s: its leaves hold %d and %d elements", r.col.Name(), len(starts[0]), len(starts[j-r.lo]))
		}
	}
	sub := make([][]triple, len(cols))
	for e := range starts[0] {
		for j := r.lo; j < r.hi; j++ {
			s := starts[j-r.lo]
			end := len(cols[j])
			if e+1 < len(s) {
				end = s[e+1]
			}
			sub[j] = cols[j][s[e]:end]
			if sub[j][0].def < def {
				return nil, fmt.Errorf("field %s: an element below the list's definition level", r.col.Name())
			}
		}
		var v any
		var err error
		if child {
			v, err = field(r.kids[0], sub, def, rep)
		} else {
			v, err = value(r, sub, def, rep)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

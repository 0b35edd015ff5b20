// Package apicheck finds exported identifiers of non-internal packages whose
// declarations mention a type from an internal package. Code in another
// module cannot name such a type, so an API that mentions one cannot be used
// from outside (a parameter it cannot build, a field it cannot read, a
// method it cannot implement). `make test` runs it over ragen.
package apicheck

import (
	"errors"
	"fmt"
	"go/token"
	"go/types"
	"os"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Violation is one exported identifier that mentions an internal type.
type Violation struct {
	Pos      token.Position // where the identifier is declared
	Ident    string         // pkg.Name or pkg.Type.Method / pkg.Type.Field
	Internal string         // the internal type it mentions (path.Name)
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s mentions internal type %s", v.Pos, v.Ident, v.Internal)
}

// IsInternal reports whether an import path is an internal package (has an
// "internal" element).
func IsInternal(path string) bool {
	for _, e := range strings.Split(path, "/") {
		if e == "internal" {
			return true
		}
	}
	return false
}

// Check loads the packages matched by patterns in dir (with cgo on) and
// returns every violation in the non-internal, non-main packages among them,
// sorted by position.
func Check(dir string, patterns ...string) ([]Violation, error) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo,
		Dir:  dir,
		Env:  append(os.Environ(), "CGO_ENABLED=1"),
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("apicheck: %w", err)
	}
	var errs []error
	var out []Violation
	for _, p := range pkgs {
		if p.Name == "main" || IsInternal(p.PkgPath) {
			continue // not API; go build reports their errors
		}
		for _, e := range p.Errors {
			errs = append(errs, fmt.Errorf("apicheck: %s: %s", p.PkgPath, e))
		}
		if p.Types == nil {
			continue
		}
		out = append(out, checkPackage(p.Fset, p.Types)...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Pos, out[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Line < b.Line
	})
	return out, nil
}

func checkPackage(fset *token.FileSet, pkg *types.Package) []Violation {
	var out []Violation
	report := func(obj types.Object, ident string, t types.Type) {
		for _, in := range internalTypes(t) {
			out = append(out, Violation{Pos: fset.Position(obj.Pos()), Ident: ident, Internal: in})
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		ident := pkg.Name() + "." + name
		switch o := obj.(type) {
		case *types.TypeName:
			if o.IsAlias() {
				report(o, ident, types.Unalias(o.Type()))
				continue
			}
			named, ok := o.Type().(*types.Named)
			if !ok {
				continue
			}
			checkUnderlying(named.Underlying(), ident, o, report)
			for i := 0; i < named.NumMethods(); i++ {
				m := named.Method(i)
				if m.Exported() {
					report(m, ident+"."+m.Name(), m.Type())
				}
			}
		default:
			report(o, ident, o.Type())
		}
	}
	return out
}

// checkUnderlying reports the exported fields of a struct and the methods of
// an interface; other underlying types are checked whole.
func checkUnderlying(u types.Type, ident string, obj types.Object, report func(types.Object, string, types.Type)) {
	switch u := u.(type) {
	case *types.Struct:
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			if f.Exported() || (f.Embedded() && isExportedEmbed(f.Type())) {
				report(f, ident+"."+f.Name(), f.Type())
			}
		}
	case *types.Interface:
		for i := 0; i < u.NumMethods(); i++ {
			m := u.Method(i)
			report(m, ident+"."+m.Name(), m.Type())
		}
		for i := 0; i < u.NumEmbeddeds(); i++ {
			report(obj, ident+" (embedded)", u.EmbeddedType(i))
		}
	default:
		report(obj, ident, u)
	}
}

func isExportedEmbed(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Obj().Exported()
	}
	return false
}

// internalTypes lists the named types from internal packages that t spells
// out: it descends through composite types and type arguments, but not into
// the underlying type of a named type (that is checked where it is declared).
func internalTypes(t types.Type) []string {
	var out []string
	seen := map[types.Type]bool{}
	var walk func(types.Type)
	walk = func(t types.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Alias:
			walk(types.Unalias(t))
		case *types.Named:
			if p := t.Obj().Pkg(); p != nil && IsInternal(p.Path()) {
				out = append(out, p.Path()+"."+t.Obj().Name())
			}
			if args := t.TypeArgs(); args != nil {
				for i := 0; i < args.Len(); i++ {
					walk(args.At(i))
				}
			}
		case *types.Pointer:
			walk(t.Elem())
		case *types.Slice:
			walk(t.Elem())
		case *types.Array:
			walk(t.Elem())
		case *types.Map:
			walk(t.Key())
			walk(t.Elem())
		case *types.Chan:
			walk(t.Elem())
		case *types.Signature:
			if tp := t.TypeParams(); tp != nil {
				for i := 0; i < tp.Len(); i++ {
					walk(tp.At(i).Constraint())
				}
			}
			for i := 0; i < t.Params().Len(); i++ {
				walk(t.Params().At(i).Type())
			}
			for i := 0; i < t.Results().Len(); i++ {
				walk(t.Results().At(i).Type())
			}
		case *types.Struct:
			for i := 0; i < t.NumFields(); i++ {
				if f := t.Field(i); f.Exported() {
					walk(f.Type())
				}
			}
		case *types.Interface:
			for i := 0; i < t.NumMethods(); i++ {
				walk(t.Method(i).Type())
			}
			for i := 0; i < t.NumEmbeddeds(); i++ {
				walk(t.EmbeddedType(i))
			}
		case *types.Union:
			for i := 0; i < t.Len(); i++ {
				walk(t.Term(i).Type())
			}
		case *types.TypeParam:
			walk(t.Constraint())
		}
	}
	walk(t)
	return out
}

package config

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"ragen/config/rule"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

//go:embed *.yaml
var embedded embed.FS

// Embedded returns the configuration files shipped with the binary (base.yaml, envs.yaml,
// ppo_trainer.yaml, the _N_<exp>.yaml experiments, eval.yaml, ...).
func Embedded() fs.FS { return embedded }

type options struct {
	errs   []error // from options (e.g. a --config-path that is not a folder)
	search []fs.FS
	getenv func(string) (string, bool)
}

// Option configures Load.
type Option func(*options)

// WithConfigPath makes Load look for configs in dir first (the --config-path of
// upstream's Hydra CLI), falling back to the embedded files, so a user directory may hold
// only its own experiment files that list `base` in their defaults.
func WithConfigPath(dir string) Option {
	return func(o *options) {
		if st, err := os.Stat(dir); err != nil {
			o.errs = append(o.errs, fmt.Errorf("config: --config-path %s: %w", dir, err))
		} else if !st.IsDir() {
			o.errs = append(o.errs, fmt.Errorf("config: --config-path %s is not a folder", dir))
		}
		o.search = append([]fs.FS{os.DirFS(dir)}, o.search...)
	}
}

// WithFS replaces the search path by the given file systems (searched in order).
func WithFS(fsys ...fs.FS) Option {
	return func(o *options) { o.search = append([]fs.FS(nil), fsys...) }
}

// WithEnv sets the environment lookup used by ${oc.env:VAR,default} (default os.LookupEnv).
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.getenv = lookup }
}

// Load composes the config called name (a file name without .yaml; "" means "base") from
// its Hydra defaults list, applies the command-line overrides (key=value, +key=value,
// ++key=value, ~key) and resolves ${...} interpolations. Every problem found in the
// overrides is reported, joined.
func Load(name string, overrides []string, opts ...Option) (*Tree, error) {
	o := options{search: []fs.FS{embedded}, getenv: os.LookupEnv}
	for _, opt := range opts {
		opt(&o)
	}
	if len(o.errs) > 0 {
		return nil, errors.Join(o.errs...)
	}
	name = strings.TrimSuffix(name, ".yaml")
	if name == "" {
		name = "base"
	}
	c := composer{opts: &o}
	frags, err := c.compose(name, "", nil, false)
	if err != nil {
		return nil, err
	}
	var root any = newMap()
	for _, f := range frags {
		root = merge(root, nest(f.pkg, f.m))
	}
	rm := root.(*Map)
	rm.del("hydra") // Hydra's own settings never reach the job config.

	var errs []error
	for _, s := range overrides {
		ov, err := ParseOverride(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := applyOverride(rm, ov); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	raw := clone(rm).(*Map)
	if err := resolveAll(rm, o.getenv); err != nil {
		return nil, err
	}
	return &Tree{name: name, root: rm, raw: raw}, nil
}

type composer struct {
	opts  *options
	cache map[string]parsedFile
}

type parsedFile struct {
	m      *Map
	header string
}

// embeddedCache keeps parsed embedded files (immutable) across Load calls.
var embeddedCache sync.Map // name -> parsedFile

// read finds and parses name+".yaml" on the search path. The returned map is the caller's
// to modify.
func (c *composer) read(name string) (*Map, string, error) {
	if pf, ok := c.cache[name]; ok {
		return clone(pf.m).(*Map), pf.header, nil
	}
	file := name + ".yaml"
	for _, fsys := range c.opts.search {
		isEmbedded := fsys == fs.FS(embedded)
		if isEmbedded {
			if v, ok := embeddedCache.Load(name); ok {
				pf := v.(parsedFile)
				c.remember(name, pf)
				return clone(pf.m).(*Map), pf.header, nil
			}
		}
		data, err := fs.ReadFile(fsys, file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("config: read %s: %w", file, err)
		}
		m, err := parseYAML(data)
		if err != nil {
			return nil, "", fmt.Errorf("config: %s: %w", file, err)
		}
		pf := parsedFile{m: m, header: packageHeader(data)}
		if isEmbedded {
			embeddedCache.Store(name, pf)
		}
		c.remember(name, pf)
		return clone(m).(*Map), pf.header, nil
	}
	return nil, "", &notFoundError{name: name, avail: c.available()}
}

func (c *composer) remember(name string, pf parsedFile) {
	if c.cache == nil {
		c.cache = map[string]parsedFile{}
	}
	c.cache[name] = pf
}

type notFoundError struct {
	name  string
	avail []string
}

func (e *notFoundError) Error() string {
	return fmt.Sprintf("config: cannot find config %q%s; available: %s", e.name,
		rule.DidYouMean(e.name, e.avail), strings.Join(e.avail, ", "))
}

// available lists the config names on the search path.
func (c *composer) available() []string {
	seen := map[string]bool{}
	for _, fsys := range c.opts.search {
		_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
				seen[strings.TrimSuffix(p, ".yaml")] = true
			}
			return nil
		})
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// parseYAML parses one YAML document into a Map (an empty document is an empty map).
func parseYAML(data []byte) (*Map, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 {
		return newMap(), nil
	}
	v, err := fromNode(&doc, 0)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return newMap(), nil
	}
	m, ok := v.(*Map)
	if !ok {
		return nil, fmt.Errorf("top level is a %s, want a map", typeName(v))
	}
	return m, nil
}

// packageHeader returns X from a leading "# @package X" line, or "".
func packageHeader(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "#") {
			return ""
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(line, "#")), "@package"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// fragment is one config's own content placed at an absolute dotted package.
type fragment struct {
	pkg string
	m   *Map
}

// compose loads config name (a path like "base" or "group/option"), expands its defaults
// list and returns the fragments to merge, in order. pkg is the absolute package the
// config's content goes to; stack holds the configs being composed (cycle detection).
func (c *composer) compose(name, pkg string, stack []string, optional bool) ([]fragment, error) {
	for _, s := range stack {
		if s == name {
			return nil, fmt.Errorf("config: defaults cycle: %s -> %s", strings.Join(stack, " -> "), name)
		}
	}
	if len(stack) > 64 {
		return nil, fmt.Errorf("config: defaults nested deeper than 64 levels at %s", name)
	}
	self, _, err := c.read(name)
	if err != nil {
		var nf *notFoundError
		if optional && errors.As(err, &nf) {
			return nil, nil
		}
		if len(stack) > 0 {
			return nil, fmt.Errorf("%w (in the defaults of %s)", err, stack[len(stack)-1])
		}
		return nil, err
	}
	stack = append(stack, name)
	dir := path.Dir(name)
	if dir == "." {
		dir = ""
	}
	var defaults []any
	if d, ok := self.Get("defaults"); ok {
		self.del("defaults")
		switch dl := d.(type) {
		case []any:
			defaults = dl
		case nil:
		default:
			return nil, fmt.Errorf("config: %s: defaults must be a list, found %s", name, describe(d))
		}
	}
	hasSelf := false
	for _, e := range defaults {
		if e == "_self_" {
			hasSelf = true
		}
	}
	if !hasSelf {
		defaults = append(defaults, "_self_") // Hydra >= 1.1: _self_ last unless placed
	}

	var out []fragment
	for _, e := range defaults {
		if e == "_self_" {
			out = append(out, fragment{pkg: pkg, m: self})
			continue
		}
		entries, err := parseDefault(name, dir, e)
		if err != nil {
			return nil, err
		}
		for _, en := range entries {
			childPkg := joinPkg(pkg, en.pkg)
			if en.global {
				childPkg = en.pkg
			} else if !en.pkgSet {
				if _, h, err := c.read(en.config); err == nil {
					switch {
					case h == "" || h == "_group_":
					case h == "_global_":
						childPkg = ""
					case strings.HasPrefix(h, "_global_."):
						childPkg = strings.TrimPrefix(h, "_global_.")
					default:
						childPkg = joinPkg(pkg, h)
					}
				}
			}
			sub, err := c.compose(en.config, childPkg, stack, en.optional)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
	}
	return out, nil
}

func joinPkg(parent, rel string) string {
	switch {
	case parent == "":
		return rel
	case rel == "":
		return parent
	}
	return parent + "." + rel
}

// defaultEntry is one resolved element of a defaults list.
type defaultEntry struct {
	config   string // config path without .yaml, relative to the search-path root
	pkg      string // dotted package, relative to the parent's package unless global
	pkgSet   bool   // pkg given explicitly with @
	global   bool   // pkg is absolute (@_global_...)
	optional bool
}

// parseDefault interprets one defaults-list element of config `owner` living in dir.
// As in Hydra, an entry's default package is its group path as written (relative to the
// parent's package); "/x" names a config from the root of the search path.
func parseDefault(owner, dir string, e any) ([]defaultEntry, error) {
	full := func(p string) string {
		if strings.HasPrefix(p, "/") || dir == "" {
			return strings.TrimPrefix(p, "/")
		}
		return dir + "/" + p
	}
	groupOf := func(p string) string {
		g := path.Dir(strings.TrimPrefix(p, "/"))
		if g == "." {
			return ""
		}
		return strings.ReplaceAll(g, "/", ".")
	}
	setPkg := func(en *defaultEntry, pkg, group string) {
		en.pkgSet = true
		switch {
		case pkg == "_global_":
			en.pkg, en.global = "", true
		case strings.HasPrefix(pkg, "_global_."):
			en.pkg, en.global = strings.TrimPrefix(pkg, "_global_."), true
		case pkg == "_group_":
			en.pkg = group
		default:
			en.pkg = pkg
		}
	}
	switch x := e.(type) {
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return nil, fmt.Errorf("config: %s: empty defaults entry", owner)
		}
		cfg, pkg, hasPkg := strings.Cut(s, "@")
		en := defaultEntry{config: full(cfg), pkg: groupOf(cfg)}
		if hasPkg {
			setPkg(&en, pkg, groupOf(cfg))
		}
		return []defaultEntry{en}, nil
	case *Map:
		if x.Len() != 1 {
			return nil, fmt.Errorf("config: %s: defaults entry %s must have exactly one key", owner, flowString(x))
		}
		key := x.keys[0]
		val := x.vals[key]
		optional := false
		fields := strings.Fields(key)
		if len(fields) == 2 && fields[0] == "optional" {
			optional, key = true, fields[1]
		} else if len(fields) == 2 && fields[0] == "override" {
			return nil, fmt.Errorf("config: %s: 'override %s' in a defaults list is not supported; choose the option in the config that declares the group", owner, fields[1])
		} else if len(fields) != 1 {
			return nil, fmt.Errorf("config: %s: malformed defaults entry %q", owner, key)
		}
		grp, pkg, hasPkg := strings.Cut(key, "@")
		var opts []string
		switch v := val.(type) {
		case nil:
			return nil, nil // group explicitly deselected
		case string:
			opts = []string{v}
		case []any:
			for _, o := range v {
				s, ok := o.(string)
				if !ok {
					return nil, fmt.Errorf("config: %s: defaults entry %s: options must be strings", owner, key)
				}
				opts = append(opts, s)
			}
		default:
			return nil, fmt.Errorf("config: %s: defaults entry %s: option must be a string, list or null, found %s", owner, key, describe(val))
		}
		relGroup := strings.ReplaceAll(strings.TrimPrefix(grp, "/"), "/", ".")
		var out []defaultEntry
		for _, opt := range opts {
			en := defaultEntry{config: full(grp) + "/" + opt, pkg: relGroup, optional: optional}
			if hasPkg {
				setPkg(&en, pkg, relGroup)
			}
			out = append(out, en)
		}
		return out, nil
	}
	return nil, fmt.Errorf("config: %s: defaults entry %s must be a string or a one-key map", owner, describe(e))
}

// nest wraps v under the dotted package path pkg.
func nest(pkg string, v any) any {
	if pkg == "" {
		return v
	}
	segs := strings.Split(pkg, ".")
	for i := len(segs) - 1; i >= 0; i-- {
		m := newMap()
		m.set(segs[i], v)
		v = m
	}
	return v
}

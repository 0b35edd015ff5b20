package config

import (
	"fmt"
	"strings"
)

// Args is a parsed Hydra-style command line: `--config-name NAME`, `--config-path DIR`,
// `--cfg job` (print the config instead of running), `--resolve`, then overrides.
type Args struct {
	ConfigName string   // --config-name / -cn; "" means base
	ConfigPath string   // --config-path / -cp; "" means the embedded configs only
	Cfg        string   // --cfg / -c: "job" prints the job config ("hydra"/"all" are refused)
	Resolve    bool     // --resolve: print with interpolations resolved
	Overrides  []string // key=value, +key=value, ++key=value, ~key
}

// ParseArgs splits a command line (without the program and subcommand names). Flags take
// their value as the next argument or after '='; everything else is an override, checked
// with ParseOverride.
func ParseArgs(args []string) (Args, error) {
	var a Args
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, val, hasVal := strings.Cut(arg, "=")
		if !strings.HasPrefix(name, "-") || strings.HasPrefix(arg, "--=") {
			if _, err := ParseOverride(arg); err != nil {
				return a, err
			}
			a.Overrides = append(a.Overrides, arg)
			continue
		}
		takeValue := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("config: flag %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "--config-name", "-cn":
			a.ConfigName, err = takeValue()
			a.ConfigName = strings.TrimSuffix(a.ConfigName, ".yaml")
		case "--config-path", "-cp":
			a.ConfigPath, err = takeValue()
		case "--cfg", "-c":
			a.Cfg, err = takeValue()
			if err == nil && a.Cfg != "job" {
				err = fmt.Errorf("config: --cfg %q: only \"job\" is supported (hydra's own config does not exist here)", a.Cfg)
			}
		case "--resolve":
			if hasVal {
				err = fmt.Errorf("config: --resolve takes no value")
			}
			a.Resolve = true
		default:
			err = fmt.Errorf("config: unknown flag %q (known: --config-name/-cn, --config-path/-cp, --cfg/-c job, --resolve); overrides look like key=value", name)
		}
		if err != nil {
			return a, err
		}
	}
	return a, nil
}

// Load loads the config the arguments name, with their overrides and config path.
func (a Args) Load(opts ...Option) (*Tree, error) {
	if a.ConfigPath != "" {
		opts = append(opts, WithConfigPath(a.ConfigPath))
	}
	return Load(a.ConfigName, a.Overrides, opts...)
}

// Print renders the config as `--cfg job` would: raw, or resolved with --resolve.
func (a Args) Print(t *Tree) string {
	if a.Resolve {
		return t.YAML()
	}
	return t.RawYAML()
}

package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"ragen/env/httpenv"
)

const serveEnvsHelp = `
Serves every registered environment over ragen's HTTP env protocol (go doc
ragen/env/httpenv) until SIGINT/SIGTERM, which stop it within
--shutdown-timeout (twice: calls in progress, then env closes).

  --addr HOST:PORT         listen address (default 127.0.0.1:8111)
  --token T                bearer token clients must send (default: $RAGEN_ENV_TOKEN);
                           binding a non-loopback address without one prints a warning
  --allow-dir DIR          a folder whose files clients may name in env_config
                           (level_file, train_path, ...); repeatable; none by default
  --max-file-bytes N       size cap of such a file (default 256MiB)
  --allow-urls             let clients name URLs in env_config (off by default)
  --max-envs N             live env cap (default 1024)
  --idle-timeout D         close envs idle this long (default 10m; negative: never)
  --max-memory N           Go heap cap: creates/resets answered 503 above it (default 8GiB)
  --max-env-memory N       what one create/reset/step may allocate (default 1GiB)
  --max-conns N            open connection cap (default 512); at the cap a new client takes
                           the place of the longest-idle connection
  --read-timeout D         to read a request, headers and body (default 10s)
  --write-timeout D        to handle a request and write the reply (default 5m)
  --conn-idle-timeout D    keep-alive connection idle limit (default 2m)
  --shutdown-timeout D     (default 3s)
Sizes take a K, M, G (x1000) or KiB, MiB, GiB (x1024) suffix.
`

// cmdServeEnvs serves every registered environment over ragen's HTTP env
// protocol (env/httpenv), so trainers elsewhere can use env_type "http"
// tags pointing here. It stops on SIGINT/SIGTERM, closing every env.
func cmdServeEnvs(ctx context.Context, args []string) error {
	addr, opts, err := serveOptions(args)
	if err != nil {
		return err
	}
	if w := exposureWarning(addr, opts.Token); w != "" {
		fmt.Fprintln(os.Stderr, "ragen: serve-envs: warning:", w)
	}
	files := "clients may name no files"
	if len(opts.AllowedDirs) > 0 {
		files = "clients may name files under " + strings.Join(opts.AllowedDirs, ", ")
	}
	fmt.Fprintf(os.Stderr, "ragen: serving environments on http://%s (%s; protocol: go doc ragen/env/httpenv)\n", addr, files)
	return httpenv.ListenAndServe(ctx, addr, opts)
}

type dirList []string

func (d *dirList) String() string     { return strings.Join(*d, ",") }
func (d *dirList) Set(v string) error { *d = append(*d, v); return nil }

type byteSize struct{ n *int64 }

func (b byteSize) String() string { return "" }
func (b byteSize) Set(v string) error {
	n, err := parseBytes(v)
	if err != nil {
		return err
	}
	*b.n = n
	return nil
}

// parseBytes reads 123, 64K, 64KiB, 8G, 8GiB (K/M/G decimal, KiB/MiB/GiB
// binary).
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	num := s
	for _, u := range []struct {
		suf string
		m   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"B", 1}} {
		if strings.HasSuffix(s, u.suf) {
			num, mult = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 1 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: want a positive size such as 512MiB", s)
	}
	return n * mult, nil
}

// serveOptions parses the serve-envs flags.
func serveOptions(args []string) (string, httpenv.Options, error) {
	var opts httpenv.Options
	fs := flag.NewFlagSet("serve-envs", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:8111", "")
	fs.StringVar(&opts.Token, "token", "", "")
	var dirs dirList
	fs.Var(&dirs, "allow-dir", "")
	fs.Var(byteSize{&opts.MaxFileBytes}, "max-file-bytes", "")
	fs.BoolVar(&opts.AllowURLs, "allow-urls", false, "")
	fs.IntVar(&opts.MaxEnvs, "max-envs", 0, "")
	fs.DurationVar(&opts.IdleTimeout, "idle-timeout", 0, "")
	fs.Var(byteSize{&opts.MaxMemoryBytes}, "max-memory", "")
	fs.Var(byteSize{&opts.MaxEnvBytes}, "max-env-memory", "")
	fs.IntVar(&opts.MaxConns, "max-conns", 0, "")
	fs.DurationVar(&opts.ReadTimeout, "read-timeout", 0, "")
	fs.DurationVar(&opts.WriteTimeout, "write-timeout", 0, "")
	fs.DurationVar(&opts.ConnIdleTimeout, "conn-idle-timeout", 0, "")
	fs.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", 0, "")
	if err := fs.Parse(args); err != nil {
		return "", opts, fmt.Errorf("serve-envs: %v (see ragen serve-envs --help)", err)
	}
	if fs.NArg() > 0 {
		return "", opts, fmt.Errorf("serve-envs: unexpected arguments %q (see ragen serve-envs --help)", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, c := range []struct {
		name string
		bad  bool
	}{{"max-envs", opts.MaxEnvs < 1}, {"max-conns", opts.MaxConns < 1}, {"read-timeout", opts.ReadTimeout <= 0},
		{"write-timeout", opts.WriteTimeout <= 0}, {"conn-idle-timeout", opts.ConnIdleTimeout <= 0}, {"shutdown-timeout", opts.ShutdownTimeout <= 0}} {
		if set[c.name] && c.bad {
			return "", opts, fmt.Errorf("serve-envs: --%s %s: want a positive value", c.name, fs.Lookup(c.name).Value)
		}
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		return "", opts, fmt.Errorf("serve-envs: --addr %q: want HOST:PORT", *addr)
	}
	if opts.Token == "" {
		opts.Token = os.Getenv(httpenv.TokenEnv)
	}
	opts.AllowedDirs = dirs
	return *addr, opts, nil
}

// exposureWarning is a warning when addr is reachable from other machines
// and no token guards it.
func exposureWarning(addr, token string) string {
	if token != "" {
		return ""
	}
	host, _, _ := net.SplitHostPort(addr)
	if host == "localhost" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	return fmt.Sprintf("%s is not a loopback address and no token is set: anyone who can reach it can create and drive envs here (set --token or %s)", addr, httpenv.TokenEnv)
}

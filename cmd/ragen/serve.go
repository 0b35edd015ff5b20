package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"ragen/env/httpenv"
)

// cmdServeEnvs serves every registered environment over ragen's HTTP env
// protocol (env/httpenv), so trainers elsewhere can use env_type "http"
// tags pointing here. It stops on SIGINT/SIGTERM, closing every env.
func cmdServeEnvs(ctx context.Context, args []string) error {
	fl, rest, err := splitFlags(args, "addr", "max-envs", "idle-timeout")
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("serve-envs: unexpected arguments %q (flags: --addr, --max-envs, --idle-timeout)", rest)
	}
	addr := fl["addr"]
	if addr == "" {
		addr = "127.0.0.1:8111"
	}
	var opts httpenv.Options
	if v, ok := fl["max-envs"]; ok {
		if opts.MaxEnvs, err = strconv.Atoi(v); err != nil || opts.MaxEnvs < 1 {
			return fmt.Errorf("serve-envs: --max-envs %q: want a positive integer", v)
		}
	}
	if v, ok := fl["idle-timeout"]; ok {
		if opts.IdleTimeout, err = time.ParseDuration(v); err != nil {
			return fmt.Errorf("serve-envs: --idle-timeout %q: %w", v, err)
		}
	}
	fmt.Fprintf(os.Stderr, "ragen: serving environments on http://%s (protocol: go doc ragen/env/httpenv)\n", addr)
	return httpenv.ListenAndServe(ctx, addr, opts)
}

package httpenv_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ragen/env"
	"ragen/env/httpenv"
)

// rssMiB reads this process's resident set size from /proc (0 elsewhere).
func rssMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// soakInt reads a knob from the environment (RAGEN_SOAK_CLIENTS, ...).
func soakInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkServeEnvsSoak runs serve-envs (httpenv.Serve with the CLI's
// defaults) under load on loopback: RAGEN_SOAK_CLIENTS well-behaved
// clients (default 64) each play RAGEN_SOAK_EPISODES episodes (default
// 20) of Sokoban and FrozenLake, while hostile clients keep sending
// /dev/zero level files, oversized rooms and slow partial bodies. It
// reports steps/s, errors of the well-behaved clients (must be 0),
// refusals of the hostile ones, and the process RSS (server and clients
// share it) peak and end; the RSS timeline is logged. Run with
// -benchtime=1x.
func BenchmarkServeEnvsSoak(b *testing.B) {
	clients := soakInt("RAGEN_SOAK_CLIENTS", 64)
	episodes := soakInt("RAGEN_SOAK_EPISODES", 20)
	for b.Loop() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- httpenv.Serve(ctx, ln, httpenv.Options{ReadTimeout: 2 * time.Second}) }()
		url := "http://" + ln.Addr().String()

		var steps, errs, refused, cut atomic.Int64
		var peak atomic.Int64
		var timeline []string
		stopSample := make(chan struct{})
		sampled := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(sampled)
			t := time.NewTicker(500 * time.Millisecond)
			defer t.Stop()
			for {
				r := rssMiB()
				if int64(r) > peak.Load() {
					peak.Store(int64(r))
				}
				timeline = append(timeline, fmt.Sprintf("%.1fs %.0fMiB %dsteps", time.Since(start).Seconds(), r, steps.Load()))
				select {
				case <-stopSample:
					return
				case <-t.C:
				}
			}
		}()
		hostileCtx, stopHostile := context.WithCancel(context.Background())
		var hwg sync.WaitGroup
		for h := range 4 {
			hwg.Add(1)
			go func() {
				defer hwg.Done()
				for hostileCtx.Err() == nil {
					switch h {
					case 0, 1:
						cfg := map[string]any{"level_file": "/dev/zero"}
						typ := "sokoban"
						if h == 1 {
							typ, cfg = "frozen_lake", map[string]any{"size": 2000}
						}
						if _, err := httpenv.New(httpenv.Config{URL: url, EnvType: typ, EnvConfig: cfg}); err != nil {
							refused.Add(1)
						}
					default: // slow partial body, cut by the read timeout
						c, err := net.Dial("tcp", ln.Addr().String())
						if err != nil {
							continue
						}
						fmt.Fprintf(c, "POST /v1/envs HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
						_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
						buf := make([]byte, 512)
						for {
							if _, err := c.Read(buf); err != nil {
								break
							}
						}
						c.Close()
						cut.Add(1)
					}
				}
			}()
		}
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				typ, cfg := "sokoban", map[string]any{"dim_room": []any{6, 6}, "num_boxes": 1}
				if i%2 == 1 {
					typ, cfg = "frozen_lake", map[string]any{"size": 8}
				}
				c, err := httpenv.New(httpenv.Config{URL: url, EnvType: typ, EnvConfig: cfg, Timeout: 30 * time.Second})
				if err != nil {
					errs.Add(1)
					return
				}
				defer c.Close()
				bg := context.Background()
				for ep := range episodes {
					if _, err := c.Reset(bg, int64(i*1000+ep), env.ModeTrain); err != nil {
						errs.Add(1)
						continue
					}
					for k := range 20 {
						r, err := c.Step(bg, env.Action{ID: 1 + (k+i)%4})
						if err != nil {
							errs.Add(1)
							break
						}
						steps.Add(1)
						if r.Done {
							break
						}
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		stopHostile()
		hwg.Wait()
		close(stopSample)
		<-sampled
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			b.Errorf("Serve: %v", err)
		}
		b.ReportMetric(float64(clients), "clients")
		b.ReportMetric(float64(steps.Load()), "steps")
		b.ReportMetric(float64(steps.Load())/elapsed.Seconds(), "steps/s")
		b.ReportMetric(float64(errs.Load()), "errors")
		b.ReportMetric(float64(refused.Load()), "hostile_refused")
		b.ReportMetric(float64(cut.Load()), "slow_conns_cut")
		b.ReportMetric(float64(peak.Load()), "rss_peak_MiB")
		b.ReportMetric(rssMiB(), "rss_end_MiB")
		b.Logf("RSS over time: %s", strings.Join(timeline, ", "))
		if errs.Load() > 0 {
			b.Errorf("%d errors for well-behaved clients", errs.Load())
		}
	}
}

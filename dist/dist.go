package dist

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"
	"unsafe"

	dc "ragen/internal/dist/csrc"
	"ragen/internal/torch/bridge"
	tc "ragen/internal/torch/csrc"
	"ragen/torch"
)

// DefaultTimeout bounds rendezvous and every collective unless Config says
// otherwise.
const DefaultTimeout = 5 * time.Minute

// DefaultPort is c10d's default master port.
const DefaultPort = 29500

// Config says how to join a process group.
type Config struct {
	Backend    string        // "gloo" (default) or "nccl"
	Rank       int           // this process's global rank, 0..WorldSize-1
	WorldSize  int           // number of processes
	LocalRank  int           // rank on this node (selects the GPU with NCCL)
	MasterAddr string        // TCPStore host (rank 0 serves it unless AgentStore); default 127.0.0.1
	MasterPort int           // TCPStore port; default 29500
	AgentStore bool          // the store is served by a launcher (torchrun's agent): every rank is a client
	StoreFile  string        // rendezvous through a c10d FileStore at this path instead of TCP
	Prefix     string        // namespace of this group's keys in the store
	Timeout    time.Duration // rendezvous and per-collective limit; default DefaultTimeout
	Bind       string        // Gloo: "iface:NAME", "host:ADDR" or "" (loopback for a loopback master, else GLOO_SOCKET_IFNAME or the default device)
	Threads    int           // Gloo worker threads (0: c10d's default)
}

// Validate reports every inconsistent field.
func (c Config) Validate() error {
	var errs []error
	if c.WorldSize < 1 {
		errs = append(errs, fmt.Errorf("dist: world size %d must be >= 1", c.WorldSize))
	}
	if c.Rank < 0 || (c.WorldSize >= 1 && c.Rank >= c.WorldSize) {
		errs = append(errs, fmt.Errorf("dist: rank %d outside 0..%d", c.Rank, c.WorldSize-1))
	}
	if c.LocalRank < 0 {
		errs = append(errs, fmt.Errorf("dist: local rank %d must be >= 0", c.LocalRank))
	}
	if c.MasterPort < 0 || c.MasterPort > 65535 {
		errs = append(errs, fmt.Errorf("dist: master port %d outside 1..65535", c.MasterPort))
	}
	switch c.Backend {
	case "", "gloo", "nccl":
	default:
		errs = append(errs, fmt.Errorf("dist: backend %q: want gloo or nccl", c.Backend))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("dist: timeout %v must be >= 0", c.Timeout))
	}
	return errors.Join(errs...)
}

// NCCLAvailable reports whether this binary was built with NCCL (the cuda tag).
func NCCLAvailable() bool { return dc.NCCLAvailable() }

// Group is a c10d process group. Its methods are safe for use by one
// goroutine at a time (collectives must be issued in the same order on
// every rank anyway).
type Group struct {
	cfg   Config
	store dc.Store
	pg    dc.PG
	rs    int // reduce-scatter algorithm

	mu     sync.Mutex
	broken error
	closed bool
}

// Init joins the group cfg describes: it rendezvouses through the store and
// connects the backend, waiting at most cfg.Timeout (or ctx's deadline).
func Init(ctx context.Context, cfg Config) (*Group, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Backend == "" {
		cfg.Backend = "gloo"
	}
	if cfg.MasterAddr == "" {
		cfg.MasterAddr = "127.0.0.1"
	}
	if cfg.MasterPort == 0 {
		cfg.MasterPort = DefaultPort
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "ragen"
	}
	to, err := limit(ctx, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	g := &Group{cfg: cfg}
	if cfg.StoreFile != "" {
		g.store, err = dc.FileStore(cfg.StoreFile, cfg.WorldSize, to)
	} else {
		server := cfg.Rank == 0 && !cfg.AgentStore
		g.store, err = dc.TCPStore(cfg.MasterAddr, cfg.MasterPort, server, cfg.WorldSize, to)
	}
	if err != nil {
		return nil, fmt.Errorf("dist: rank %d/%d: rendezvous at %s: %w", cfg.Rank, cfg.WorldSize, g.where(), err)
	}
	switch cfg.Backend {
	case "gloo":
		g.pg, err = dc.Gloo(g.store, cfg.Prefix, cfg.Rank, cfg.WorldSize, cfg.Timeout, g.bind(), cfg.Threads)
	case "nccl":
		g.pg, err = dc.NCCL(g.store, cfg.Prefix, cfg.Rank, cfg.WorldSize, cfg.Timeout)
	}
	if err != nil {
		g.store.Free()
		return nil, fmt.Errorf("dist: rank %d/%d: %s process group: %w", cfg.Rank, cfg.WorldSize, cfg.Backend, err)
	}
	g.rs = dc.RSAuto
	return g, nil
}

func (g *Group) where() string {
	if g.cfg.StoreFile != "" {
		return "file " + g.cfg.StoreFile
	}
	return net.JoinHostPort(g.cfg.MasterAddr, fmt.Sprint(g.cfg.MasterPort))
}

func (g *Group) bind() string {
	if g.cfg.Bind != "" {
		return g.cfg.Bind
	}
	if ifname := getenv("GLOO_SOCKET_IFNAME"); ifname != "" {
		return "iface:" + ifname
	}
	if g.cfg.StoreFile != "" || isLoopback(g.cfg.MasterAddr) {
		return "host:127.0.0.1"
	}
	return ""
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Rank is this process's rank.
func (g *Group) Rank() int { return g.cfg.Rank }

// Size is the world size.
func (g *Group) Size() int { return g.cfg.WorldSize }

// LocalRank is this process's rank on its node.
func (g *Group) LocalRank() int { return g.cfg.LocalRank }

// Backend is "gloo" or "nccl".
func (g *Group) Backend() string { return g.cfg.Backend }

// Timeout is the per-collective limit.
func (g *Group) Timeout() time.Duration { return g.cfg.Timeout }

// ReduceScatterAlgo names how ReduceScatter runs.
type ReduceScatterAlgo int

const (
	// RSAuto: native where the backend has it (NCCL), else RSAllreduce.
	RSAuto ReduceScatterAlgo = iota
	// RSAllreduce: allreduce the whole input, keep the own chunk (fastest
	// on few local ranks).
	RSAllreduce
	// RSAllToAll: all-to-all then a local sum (reduce-scatter traffic).
	RSAllToAll
)

// SetReduceScatter chooses the reduce-scatter algorithm.
func (g *Group) SetReduceScatter(a ReduceScatterAlgo) error {
	switch a {
	case RSAuto:
		g.rs = dc.RSAuto
	case RSAllreduce:
		g.rs = dc.RSAllreduce
	case RSAllToAll:
		g.rs = dc.RSAlltoall
	default:
		return fmt.Errorf("dist: unknown reduce-scatter algorithm %d", a)
	}
	return nil
}

// ReduceOp is a reduction.
type ReduceOp int

const (
	Sum ReduceOp = iota
	Avg
	Product
	Min
	Max
)

func (op ReduceOp) c() (int, error) {
	switch op {
	case Sum:
		return dc.Sum, nil
	case Avg:
		return dc.Avg, nil
	case Product:
		return dc.Product, nil
	case Min:
		return dc.Min, nil
	case Max:
		return dc.Max, nil
	}
	return 0, fmt.Errorf("dist: unknown reduce op %d", op)
}

// limit returns the wait allowed by ctx and the group timeout.
func limit(ctx context.Context, to time.Duration) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < to {
			if left <= 0 {
				return 0, context.DeadlineExceeded
			}
			to = left
		}
	}
	return to, nil
}

// handle is the C handle (a tt_tensor) of t as the dist shim takes it.
func handle(t *torch.Tensor) (unsafe.Pointer, error) {
	h := bridge.Handle(t)
	if h.IsNil() {
		return nil, torch.ErrFreed
	}
	return *(*unsafe.Pointer)(unsafe.Pointer(&h)), nil
}

// A tc.Tensor is one C pointer; handle reads it as such.
var _ [unsafe.Sizeof(tc.Tensor{}) - unsafe.Sizeof(uintptr(0))]struct{}
var _ [unsafe.Sizeof(uintptr(0)) - unsafe.Sizeof(tc.Tensor{})]struct{}

func handles(ts []*torch.Tensor) ([]unsafe.Pointer, error) {
	out := make([]unsafe.Pointer, len(ts))
	for i, t := range ts {
		h, err := handle(t)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// run executes one collective under the group's rules: closed and broken
// groups fail at once; a failure breaks the group and names rank and op.
func (g *Group) run(ctx context.Context, op string, keep any, f func(to time.Duration) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return fmt.Errorf("dist: %s on a closed group", op)
	}
	if g.broken != nil {
		return fmt.Errorf("dist: %s: group broken by an earlier failure: %w", op, g.broken)
	}
	to, err := limit(ctx, g.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("dist: %s: %w", op, err)
	}
	err = f(to)
	runtime.KeepAlive(keep)
	if err != nil {
		var ce *dc.Error
		if errors.As(err, &ce) && ce.Comm {
			// A c10d failure leaves the group unusable (a peer is gone or out of step).
			g.broken = fmt.Errorf("rank %d/%d %s (limit %v): %w", g.cfg.Rank, g.cfg.WorldSize, op, to, err)
			return fmt.Errorf("dist: %w", g.broken)
		}
		return fmt.Errorf("dist: rank %d %s: %w", g.cfg.Rank, op, err)
	}
	return nil
}

// AllReduce reduces ts in place across ranks (contiguous tensors).
func (g *Group) AllReduce(ctx context.Context, op ReduceOp, ts ...*torch.Tensor) error {
	o, err := op.c()
	if err != nil {
		return err
	}
	return g.run(ctx, "allreduce", ts, func(to time.Duration) error {
		hs, err := handles(ts)
		if err != nil {
			return err
		}
		return g.pg.AllReduce(hs, o, to)
	})
}

// Broadcast copies root's ts into every rank's ts.
func (g *Group) Broadcast(ctx context.Context, root int, ts ...*torch.Tensor) error {
	return g.run(ctx, "broadcast", ts, func(to time.Duration) error {
		hs, err := handles(ts)
		if err != nil {
			return err
		}
		return g.pg.Broadcast(hs, root, to)
	})
}

// AllGather fills outs[r] (len(outs) == Size, each shaped like in) with
// rank r's in.
func (g *Group) AllGather(ctx context.Context, outs []*torch.Tensor, in *torch.Tensor) error {
	return g.run(ctx, "allgather", []any{outs, in}, func(to time.Duration) error {
		if len(outs) != g.cfg.WorldSize {
			return fmt.Errorf("%d outputs for a world of %d", len(outs), g.cfg.WorldSize)
		}
		hs, err := handles(outs)
		if err != nil {
			return err
		}
		h, err := handle(in)
		if err != nil {
			return err
		}
		return g.pg.AllGather(hs, h, to)
	})
}

// AllGatherFlat fills chunk r of the contiguous flat (Size x shard's
// elements) with rank r's shard.
func (g *Group) AllGatherFlat(ctx context.Context, flat, shard *torch.Tensor) error {
	return g.run(ctx, "allgather_flat", []any{flat, shard}, func(to time.Duration) error {
		hs, err := handles([]*torch.Tensor{flat, shard})
		if err != nil {
			return err
		}
		return g.pg.AllGatherFlat(hs[0], hs[1], to)
	})
}

// ReduceScatter sets out to the reduction over ranks of chunk Rank of in
// (in has Size x out's elements).
func (g *Group) ReduceScatter(ctx context.Context, op ReduceOp, out, in *torch.Tensor) error {
	o, err := op.c()
	if err != nil {
		return err
	}
	return g.run(ctx, "reduce_scatter", []any{out, in}, func(to time.Duration) error {
		hs, err := handles([]*torch.Tensor{out, in})
		if err != nil {
			return err
		}
		return g.pg.ReduceScatter(hs[0], hs[1], o, g.rs, to)
	})
}

// AllToAll sends chunk j of in to rank j; chunk j of out comes from rank j.
func (g *Group) AllToAll(ctx context.Context, out, in *torch.Tensor) error {
	return g.run(ctx, "alltoall", []any{out, in}, func(to time.Duration) error {
		hs, err := handles([]*torch.Tensor{out, in})
		if err != nil {
			return err
		}
		return g.pg.AllToAll(hs[0], hs[1], to)
	})
}

// Barrier returns when every rank has reached it.
func (g *Group) Barrier(ctx context.Context) error {
	return g.run(ctx, "barrier", nil, func(to time.Duration) error { return g.pg.Barrier(to) })
}

// Close destroys the group and its store handle. It may wait for a
// collective still running in c10d's threads (at most the timeout).
func (g *Group) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	g.pg.Free()
	g.store.Free()
	return nil
}

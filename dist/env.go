package dist

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

var getenv = os.Getenv

// FromEnv reads the process-group settings the launchers export: torchrun,
// `ragen launch` and Kubernetes PyTorchJobs set RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR and MASTER_PORT; Slurm's srun sets SLURM_PROCID,
// SLURM_NTASKS and SLURM_LOCALID (MASTER_ADDR, when unset, is the first
// host of SLURM_JOB_NODELIST or SLURM_LAUNCH_NODE_IPADDR). ok is false when
// none of them is set (a single process). RAGEN_DIST_BACKEND,
// RAGEN_DIST_TIMEOUT (a Go duration) and RAGEN_DIST_STORE_FILE override the
// backend, the timeout and the rendezvous.
func FromEnv() (cfg Config, ok bool, err error) {
	num := func(key string, dst *int) {
		if err != nil {
			return
		}
		v := getenv(key)
		if v == "" {
			return
		}
		n, e := strconv.Atoi(strings.TrimSpace(v))
		if e != nil {
			err = fmt.Errorf("dist: %s=%q is not an integer", key, v)
			return
		}
		*dst = n
	}
	switch {
	case getenv("RANK") != "" || getenv("WORLD_SIZE") != "":
		ok = true
		if getenv("RANK") == "" || getenv("WORLD_SIZE") == "" {
			return cfg, ok, fmt.Errorf("dist: RANK=%q and WORLD_SIZE=%q must be set together", getenv("RANK"), getenv("WORLD_SIZE"))
		}
		num("RANK", &cfg.Rank)
		num("WORLD_SIZE", &cfg.WorldSize)
		num("LOCAL_RANK", &cfg.LocalRank)
	case getenv("SLURM_PROCID") != "" && getenv("SLURM_NTASKS") != "":
		ok = true
		num("SLURM_PROCID", &cfg.Rank)
		num("SLURM_NTASKS", &cfg.WorldSize)
		num("SLURM_LOCALID", &cfg.LocalRank)
		if getenv("MASTER_ADDR") == "" {
			cfg.MasterAddr = slurmMaster()
		}
	default:
		return cfg, false, nil
	}
	if a := getenv("MASTER_ADDR"); a != "" {
		cfg.MasterAddr = a
	}
	num("MASTER_PORT", &cfg.MasterPort)
	// torchrun's agent already serves the store at MASTER_ADDR:MASTER_PORT.
	cfg.AgentStore = strings.EqualFold(getenv("TORCHELASTIC_USE_AGENT_STORE"), "true")
	if cfg.AgentStore {
		cfg.Prefix = "ragen/" + getenv("TORCHELASTIC_RESTART_COUNT")
	}
	cfg.Backend = getenv("RAGEN_DIST_BACKEND")
	cfg.StoreFile = getenv("RAGEN_DIST_STORE_FILE")
	if v := getenv("RAGEN_DIST_TIMEOUT"); v != "" && err == nil {
		d, e := time.ParseDuration(v)
		if e != nil || d <= 0 {
			return cfg, ok, fmt.Errorf("dist: RAGEN_DIST_TIMEOUT=%q is not a positive duration (e.g. 90s)", v)
		}
		cfg.Timeout = d
	}
	if err != nil {
		return cfg, ok, err
	}
	return cfg, ok, cfg.Validate()
}

// slurmMaster is the first host of SLURM_JOB_NODELIST ("n[01-04],m7" ->
// "n01"), else the launching node.
func slurmMaster() string {
	nl := getenv("SLURM_JOB_NODELIST")
	if nl == "" {
		nl = getenv("SLURM_NODELIST")
	}
	if nl != "" {
		return firstHost(nl)
	}
	return getenv("SLURM_LAUNCH_NODE_IPADDR")
}

func firstHost(nodelist string) string {
	i := strings.IndexAny(nodelist, "[,")
	if i < 0 {
		return nodelist
	}
	if nodelist[i] == ',' {
		return nodelist[:i]
	}
	prefix := nodelist[:i]
	rest := nodelist[i+1:]
	j := strings.IndexAny(rest, "-,]")
	if j < 0 {
		return prefix
	}
	return prefix + rest[:j]
}

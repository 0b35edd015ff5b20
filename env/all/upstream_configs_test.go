package all

import (
	"strings"
	"testing"

	"ragen/config"
	"ragen/env/deepcoder/sandbox"
)

// Upstream's experiment configs for the external-service envs validate
// here exactly as far as what they need is present: SearchQA runs on the
// embedded BM25 retriever and DeepCoder on the fallback prompt, while Lean
// and WebShop fail before any model loads, saying what is missing.
func TestUpstreamExperimentConfigs(t *testing.T) {
	for name, want := range map[string]string{
		"_9_search":     "",
		"_10_deepcoder": "",
		"_7_lean":       `dataset "CoderBak/minif2f" not found locally`,
		"_6_webshop":    "scripts/envbridge.py",
		"webshop_full":  "scripts/envbridge.py",
	} {
		tree, err := config.Load(name, []string{"+custom_envs.WebShop.env_config.bridge_url=http://127.0.0.1:9", "+custom_envs.WebShopFull.env_config.bridge_url=http://127.0.0.1:9"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		err = config.CheckEnvs(tree)
		if name == "_10_deepcoder" && err != nil && strings.Contains(err.Error(), sandbox.ErrNoNamespaces.Error()) {
			t.Logf("%s: this kernel refuses the sandbox's namespaces: %v", name, err)
			continue
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: err = %v, want it to mention %q", name, err, want)
		}
	}
}

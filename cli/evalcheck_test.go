package cli

import (
	"context"
	"strings"
	"testing"
)

// ragen eval checks the envs before it loads a model: with a model folder
// that does not exist and a DeepCoder env whose interpreter is missing, the
// error is the env's, not the model's.
func TestEvalChecksEnvsBeforeTheModel(t *testing.T) {
	err := run(context.Background(), []string{"eval", "--config-name", "eval", "model_path=/nonexistent/model",
		"es_manager.val.env_configs.tags=[DeepCoder]", "es_manager.val.env_configs.n_groups=[4]", "es_manager.val.env_groups=4",
		"+custom_envs.DeepCoder.env_config.python_path=/missing/python3"})
	if err == nil || !strings.Contains(err.Error(), "/missing/python3") || strings.Contains(err.Error(), "/nonexistent/model") {
		t.Fatalf("err = %v", err)
	}
}

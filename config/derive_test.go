package config

import "testing"

func TestDerive(t *testing.T) {
	tr := mustLoad(t, "_9_search", []string{"actor_rollout_ref.actor.use_ref=false", "actor_rollout_ref.actor.use_kl_loss=true"}, shipped())
	if err := Derive(tr); err != nil {
		t.Fatal(err)
	}
	// 16 groups x 8 envs = 128 rows.
	if n, _ := tr.Int("data.train_batch_size"); n != 128 {
		t.Errorf("data.train_batch_size = %d, want 128", n)
	}
	if kl, _ := tr.Bool("actor_rollout_ref.actor.use_kl_loss"); kl {
		t.Error("use_kl_loss must be forced off without a reference model")
	}
	tr = mustLoad(t, "base", []string{"actor_rollout_ref.actor.use_kl_loss=true"}, shipped())
	if err := Derive(tr); err != nil {
		t.Fatal(err)
	}
	if kl, _ := tr.Bool("actor_rollout_ref.actor.use_kl_loss"); !kl {
		t.Error("use_kl_loss stays on with a reference model")
	}
	tr = mustLoad(t, "base", []string{"~es_manager.train.group_size"}, shipped())
	wantErr(t, Derive(tr), "es_manager.train.group_size: key not found")
}

func TestCriticEnabled(t *testing.T) {
	cases := []struct {
		ov   []string
		want bool
	}{
		{nil, true}, // gae, enable null
		{[]string{"algorithm.adv_estimator=grpo"}, false},
		{[]string{"algorithm.adv_estimator=grpo", "critic.enable=true"}, true},
		{[]string{"critic.enable=false"}, false},
	}
	for _, c := range cases {
		if got := CriticEnabled(mustLoad(t, "base", c.ov, shipped())); got != c.want {
			t.Errorf("%q: CriticEnabled = %v, want %v", c.ov, got, c.want)
		}
	}
}

package config

import "fmt"

// Derive applies the adjustments upstream's train.py makes after its assertions:
// data.train_batch_size = es_manager.train.env_groups x group_size, and use_kl_loss is
// forced off when there is no reference model (actor.use_ref false). Call it after Validate.
func Derive(t *Tree) error {
	g, err := t.Int("es_manager.train.env_groups")
	if err != nil {
		return err
	}
	s, err := t.Int("es_manager.train.group_size")
	if err != nil {
		return err
	}
	if err := t.Set("data.train_batch_size", g*s); err != nil {
		return fmt.Errorf("config: derive: %w", err)
	}
	if t.Has("actor_rollout_ref.actor.use_ref") {
		useRef, err := t.Bool("actor_rollout_ref.actor.use_ref")
		if err != nil {
			return err
		}
		if !useRef {
			if err := t.Set("actor_rollout_ref.actor.use_kl_loss", false); err != nil {
				return fmt.Errorf("config: derive: %w", err)
			}
		}
	}
	return nil
}

// CriticEnabled reports whether a critic exists: critic.enable true, or null/absent and
// algorithm.adv_estimator == gae.
func CriticEnabled(t *Tree) bool {
	return (&validator{t: t}).criticEnabled()
}

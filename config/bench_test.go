package config

import "testing"

func BenchmarkLoadSokoban(b *testing.B) {
	ov := []string{"trainer.total_training_steps=10", "+trainer.note=x", "algorithm.adv_estimator=grpo"}
	for b.Loop() {
		if _, err := Load("_2_sokoban", ov); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	tr, err := Load("_2_sokoban", nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := Validate(tr); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseOverride(b *testing.B) {
	for b.Loop() {
		if _, err := ParseOverride("+custom_envs.X.env_config={dim_x: 8, dim_y: 8, tags: [a, 'b,c']}"); err != nil {
			b.Fatal(err)
		}
	}
}

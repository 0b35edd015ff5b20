// Package alfworld is the ALFWorld household-task environment (upstream
// env_type "alfworld", tags Alfworld and AlfworldOOD; shared spec envs.md
// §13), run against the upstream simulator (alfworld + TextWorld, game
// files under $ALFWORLD_DATA) through scripts/envbridge.py and the
// httpenv protocol, as package webshop describes.
//
// [Memory] renders upstream's ALFWorld single-turn memory (verl-agent
// style; context-and-rollout.md §3.6).
package alfworld

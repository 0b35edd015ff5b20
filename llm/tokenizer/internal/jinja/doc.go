// Package jinja implements a Jinja template engine purpose-built for LLM
// chat templates.
//
// It is a copy of github.com/ardanlabs/jinja v1.8.0 (Apache License 2.0,
// see LICENSE), changed by ragen so that a render is bounded (Limits, in
// limits.go): a chat template comes with a downloaded model folder, and the
// engine as published let a template overflow the stack (a recursive
// macro), allocate without bound ({{ 'x' * 300000000 }}) or loop for
// minutes. Each changed file says what changed at its top.
package jinja

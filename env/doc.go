// Package env defines the text-environment contract of ragen: the BaseEnv
// interface every environment implements, typed step results, the registry
// keyed by upstream's env_type names, and the tag table of config/envs.yaml.
//
// The contract follows upstream RAGEN (shared spec envs.md §0): the manager
// resets an env from a seed, sends actions (an integer id for discrete envs,
// the raw string for language envs), and always calls Render afterwards to
// obtain the observation shown to the model.
//
// Every method that may block takes a context.Context so that envs backed by
// outside services (an HTTP env server, a code sandbox, a retrieval server)
// fit the same interface: cancellation and deadlines are errors, never hangs.
package env

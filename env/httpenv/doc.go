// Package httpenv runs environments behind an HTTP service: a Server that
// serves any env type of the registry, and a Client that implements
// env.BaseEnv (and env.ActionLookup, env.Gridder) by calling it. Envs that
// need outside services (a code sandbox, a retrieval server, a Lean
// server, WebShop, ALFWorld) can then live in another process or machine.
//
// The Client is registered as env_type "http", so a config tag can point
// at a remote env:
//
//	RemoteSokoban:
//	  env_type: http
//	  max_actions_per_traj: 10
//	  env_config:
//	    url: http://127.0.0.1:8100
//	    env_type: sokoban
//	    env_config: {dim_room: [6, 6], num_boxes: 1}
//	    timeout: 30     # seconds per HTTP call (or "500ms")
//	    retries: 2
//
// # Protocol
//
// JSON over HTTP, version 1. Request bodies are JSON objects; unknown
// fields are rejected (400). Numbers follow Python's json module: integers
// are written without a point, floats always with a point or an exponent
// (1.0, 1e-05), so the int/float distinction of env_config values, rewards
// and info values survives the trip (Bandit prints an int score as "1",
// a float one as "1.0").
//
//	POST   /v1/envs             {"env_type": "sokoban", "env_config": {...} | null}
//	                            → {"id", "render", "action_lookup"?, "grid"?}
//	POST   /v1/envs/{id}/reset  {"seed": 42, "mode": "train" | "val" | ...}   (absent mode: train)
//	                            → {"observation", "render", "action_lookup"?, "grid"?}
//	POST   /v1/envs/{id}/step   {"action": {"id": 1, "text": "Up"}}
//	                            → {"observation", "reward", "reward_is_int", "done", "info",
//	                               "render", "action_lookup"?, "grid"?}
//	GET    /v1/envs/{id}/render → {"observation"}
//	DELETE /v1/envs/{id}        → 204, no body
//	GET    /v1/health           → {"status": "ok", "envs": live envs, "env_types": [...]}
//
// "render" is the env's Render() text right after the call, so a client
// reading the observation as the rollout manager does (always Render()
// after Reset/Step) needs one round trip per step. "action_lookup" (an
// object from id, as a string, to name) is present exactly when the env
// implements env.ActionLookup, null while its lookup is nil (Bandit before
// the first reset); "grid" likewise for env.Gridder. "info" is an object
// whose values are numbers, bools or strings only; a server whose env
// returns anything else (or a NaN/infinite reward or info value) answers
// 500 naming the key, and a client receiving it reports an error naming
// the key.
//
// Errors are {"error": "message"} with status
//
//	400  malformed body, unknown or missing field
//	404  unknown env id (expired envs say so), unknown route
//	405  wrong method on a known route
//	413  body over the server's limit
//	422  the env refused: an unknown env_type or bad env_config (the env
//	     package's own message), or Reset/Step returned an error
//	401  missing or wrong bearer token (Options.Token)
//	403  env_config names a file outside the allowed folders, a URL, or a
//	     program (see Safety)
//	429  env cap reached
//	500  the env panicked or broke the contract (info value type)
//	503  server closed, or its memory cap reached
//	507  a call allocated over the per-env cap (the env is closed)
//
// One env serves one call at a time (the server serialises calls on the
// same id); different envs run concurrently. An env that sees no request
// for Options.IdleTimeout is closed, so crashed clients do not leak envs.
//
// # Safety
//
// The server is meant to be run on shared machines. A client cannot make
// it read files: env_config keys naming files or folders (ending in _file,
// _path, _dir, ...) are refused unless Options.AllowedDirs lists folders,
// and then must resolve (symlinks included) inside one, to a folder or a
// regular file of at most Options.MaxFileBytes; a path outside is refused
// without touching the file system, so errors do not tell which files
// exist. URL keys are refused unless Options.AllowURLs, program keys
// (python_path, ...) always. Size-like env settings have upper bounds in
// each env package's Validate. Options.MaxEnvBytes and MaxMemoryBytes cap
// what one call may allocate and the whole heap. Serve applies read, write
// and keep-alive timeouts and a connection cap (slow or stalled clients
// are cut; at the cap the longest-idle connection makes way for a new one,
// and a request without the token gets no keep-alive), and on ctx's end
// returns within about twice Options.ShutdownTimeout even when an env
// call never returns. With
// Options.Token every call but health needs "Authorization: Bearer TOKEN";
// Config.Token (or RAGEN_ENV_TOKEN) makes the client send it.
//
// # Client behaviour
//
// Every call runs under the caller's ctx and a per-call Config.Timeout
// (New and Close use the timeout alone; CloseContext takes a ctx): a server that never answers is an
// error, never a hang. Calls that failed on a connection error or a 5xx
// are retried Config.Retries times with exponential backoff, but only when
// repeating them is harmless: reset, render and close always, create and
// step only when the connection could not be made. A per-call timeout is
// not retried. Replies are decoded strictly: garbage, unknown fields and
// missing fields are errors; every error is an *Error naming the call,
// the URL and the env id.
package httpenv

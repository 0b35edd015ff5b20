package all

// DeepCoder, Search, Lean, WebShop and ALFWorld (envs.md §9-13): the envs
// that need something outside the process (a sandbox, a retrieval or Lean
// server, a simulator bridge).
import (
	_ "ragen/env/alfworld"
	_ "ragen/env/deepcoder"
	_ "ragen/env/lean"
	_ "ragen/env/search"
	_ "ragen/env/webshop"
)

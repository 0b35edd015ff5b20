package all

// The "http" env type: an env served by an httpenv.Server elsewhere.
import _ "ragen/env/httpenv"

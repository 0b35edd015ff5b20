package safetensors

import "math"

func mathFloat32bits(v float32) uint32 { return math.Float32bits(v) }

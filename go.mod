module ragen

go 1.26

require (
	github.com/stretchr/testify v1.12.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

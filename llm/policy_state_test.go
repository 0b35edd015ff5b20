package llm

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/llm/tokenizer"
	"ragen/torch"
)

func TestPolicyStateRoundTrip(t *testing.T) {
	tok := tokenizer.NewByte()
	m, err := New(TinyConfig(tok.VocabSize()), Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	require.NoError(t, err)
	defer m.Close()
	p := NewPolicy(m, tok, PolicyOptions{Seed: 5}).(*policy)
	p.n = 7
	b, err := p.MarshalState()
	require.NoError(t, err)
	q := NewPolicy(m, tok, PolicyOptions{Seed: 5}).(*policy)
	require.NoError(t, q.UnmarshalState(b))
	require.Equal(t, uint64(7), q.n)
	require.Error(t, q.UnmarshalState([]byte("{")))
}

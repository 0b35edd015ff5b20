package llm

import (
	"context"
	"testing"

	"ragen/torch"
)

func TestSmoke(t *testing.T) {
	m := tinyModel(t, 1, false)
	defer m.Close()
	s := torch.NewScope()
	ids, pos, attn := batch(t, s, [][]int{{1, 2, 3, 4}, {5, 6}}, true)
	lg := m.Forward(s, ids, pos, attn)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	t.Log(lg.Shape())
	s.Close()
	res, err := m.Generate(context.Background(), nil, [][]int{{1, 2, 3}, {4, 5, 6, 7, 8}}, GenOptions{MaxNewTokens: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
}

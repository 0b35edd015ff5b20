package starpo

import "ragen/torch"

// Tensor-path counterparts of algo.EntropyFromLogits and
// algo.LogProbsFromLogits, used only to check them against each other
// (loss_test.go); the trainer gets log-probs and entropies from
// llm.Model.TokenLogProbs.

// EntropyFromLogits is veRL's entropy_from_logits on tensors: H =
// logsumexp(z) − Σ softmax(z)·z over the last dimension (a −∞ logit gives
// NaN, as upstream). Divide logits by the temperature first.
func EntropyFromLogits(s *torch.Scope, logits *torch.Tensor) *torch.Tensor {
	return s.Sub(s.LogSumExp(logits, false, -1), s.Sum(s.Mul(s.Softmax(logits, -1), logits), false, -1))
}

// LogProbsFromLogits is veRL's logprobs_from_logits: log softmax(z)[label]
// over the last dimension; labels (int64) has logits' shape without the
// vocabulary dimension.
func LogProbsFromLogits(s *torch.Scope, logits, labels *torch.Tensor) *torch.Tensor {
	return s.Squeeze(s.Gather(s.LogSoftmax(logits, -1), -1, s.Unsqueeze(labels, -1)), -1)
}
